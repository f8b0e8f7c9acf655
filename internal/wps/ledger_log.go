package wps

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// LedgerLog is the state of an org's tree log: its size and root, and the
// latest checkpoint signed.
type LedgerLog struct {
	OrgID          string
	Size           int64
	Root           tlog.Hash
	CheckpointSize int64
	Checkpoint     string // the signed note, "" before the first
	CheckpointAt   Time
}

// LedgerLeaf is an entry read with its action's row, when it is an action
// (nil when the row is missing).
type LedgerLeaf struct {
	LedgerEntry
	Action *Action
}

// LedgerKey is the installation's Ed25519 key in the note format
// (golang.org/x/mod/sumdb/note): the signer's private key and the
// verifier key that GET /v1/ledger/key serves.
type LedgerKey struct {
	Signer    string
	Verifier  string
	CreatedAt Time
}

// LedgerKeyName is the name of the installation's key in signed notes.
const LedgerKeyName = "wps"

// ledgerSigner is the key loaded: signs and verifies checkpoints.
type ledgerSigner struct {
	signer   note.Signer
	verifier note.Verifier
	vkey     string
}

// LedgerKey loads the installation's signing key, making it on first use
// (the server calls it at start): one key for every replica, kept in the
// database.
func (s *Service) LedgerKey(ctx context.Context) (string, error) {
	k, err := s.ledgerKey(ctx)
	if err != nil {
		return "", err
	}
	return k.vkey, nil
}

func (s *Service) ledgerKey(ctx context.Context) (*ledgerSigner, error) {
	if k := s.lkey.Load(); k != nil {
		return k, nil
	}
	s.lkeyMu.Lock()
	defer s.lkeyMu.Unlock()
	if k := s.lkey.Load(); k != nil {
		return k, nil
	}
	var stored LedgerKey
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		stored, err = tx.GetLedgerKey()
		return err
	})
	if IsCode(err, CodeNotFound) {
		skey, vkey, gerr := note.GenerateKey(rand.Reader, LedgerKeyName)
		if gerr != nil {
			return nil, Internal(gerr)
		}
		err = s.store.Write(ctx, func(tx Tx) error {
			return tx.CreateLedgerKey(LedgerKey{Signer: skey, Verifier: vkey, CreatedAt: s.Now()})
		})
		if err == nil || IsCode(err, CodeConflict) { // another replica made it first
			err = s.store.Read(ctx, func(tx Tx) (err error) {
				stored, err = tx.GetLedgerKey()
				return err
			})
		}
	}
	if err != nil {
		return nil, err
	}
	signer, err := note.NewSigner(stored.Signer)
	if err != nil {
		return nil, Internal(fmt.Errorf("ledger key: %w", err))
	}
	verifier, err := note.NewVerifier(stored.Verifier)
	if err != nil {
		return nil, Internal(fmt.Errorf("ledger key: %w", err))
	}
	k := &ledgerSigner{signer: signer, verifier: verifier, vkey: stored.Verifier}
	s.lkey.Store(k)
	return k, nil
}

// sign makes the checkpoint of an org's tree at size with root. Ed25519
// signatures are deterministic: the same tree gives the same note.
func (k *ledgerSigner) sign(orgID string, size int64, root tlog.Hash) (string, error) {
	msg, err := note.Sign(&note.Note{Text: checkpointText(orgID, size, root)}, k.signer)
	if err != nil {
		return "", Internal(err)
	}
	return string(msg), nil
}

// TileHeight is the height of the tiles that store an org's tree (as the
// Go checksum database's): a tile holds 2^8 hashes of one level, and the
// hashes between its levels are worked out from them (tlog.HashFromTile).
const TileHeight = 8

// hashReader reads an org's tree hashes from its stored tiles in a
// transaction, and those the integrator adds from memory (known).
type hashReader struct {
	tx    Tx
	orgID string
	known map[int64]tlog.Hash
	tiles map[[2]int64][]byte // tiles read, by level and number
}

func newHashReader(tx Tx, orgID string) *hashReader {
	return &hashReader{tx: tx, orgID: orgID, known: map[int64]tlog.Hash{}, tiles: map[[2]int64][]byte{}}
}

func tileKey(t tlog.Tile) [2]int64 { return [2]int64{int64(t.L), t.N} }

// ReadHashes implements tlog.HashReader.
func (r *hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	var need []tlog.Tile
	for _, i := range indexes {
		if _, ok := r.known[i]; ok {
			continue
		}
		t := tlog.TileForIndex(TileHeight, i)
		if _, ok := r.tiles[tileKey(t)]; !ok && !slices.ContainsFunc(need, func(x tlog.Tile) bool { return tileKey(x) == tileKey(t) }) {
			need = append(need, t)
		}
	}
	if len(need) > 0 {
		data, err := r.tx.ReadLedgerTiles(r.orgID, need)
		if err != nil {
			return nil, err
		}
		for j, t := range need {
			r.tiles[tileKey(t)] = data[j]
		}
	}
	out := make([]tlog.Hash, len(indexes))
	for j, i := range indexes {
		if h, ok := r.known[i]; ok {
			out[j] = h
			continue
		}
		t := tlog.TileForIndex(TileHeight, i)
		h, err := tlog.HashFromTile(t, r.tiles[tileKey(t)], i)
		if err != nil {
			return nil, Internal(fmt.Errorf("ledger of org %s: stored hash %d: %w", r.orgID, i, err))
		}
		out[j] = h
	}
	return out, nil
}

// LedgerBacklog lists the orgs whose integrator has work: entries to
// integrate, or a checkpoint to sign.
func (s *Service) LedgerBacklog(ctx context.Context) ([]string, error) {
	var orgs []string
	err := s.store.View(ctx, func(tx Tx) (err error) {
		orgs, err = tx.LedgerBacklog()
		return err
	})
	return orgs, err
}

// IntegrateLedger is one pass of an org's integrator: it takes up to max
// of the org's queued entries, in order, makes them the next leaves of its
// tree log (their hashes stored in golang.org/x/mod/sumdb/tlog's tiles),
// and signs a
// checkpoint of the tree when the last one is older than every (or there
// is none). One transaction; another integrator of the org (on another
// replica) runs before or after it, never beside it: it returns 0 at once
// while one runs. It refuses to grow a tree whose stored hashes no longer
// give its recorded root.
func (s *Service) IntegrateLedger(ctx context.Context, orgID string, max int, every time.Duration) (int, error) {
	k, err := s.ledgerKey(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.store.Write(ctx, func(tx Tx) error {
		n = 0
		log, mine, err := tx.LockLedgerLog(orgID)
		if err != nil || !mine {
			return err
		}
		pending, err := tx.PendingLedger(orgID, max)
		if err != nil {
			return err
		}
		now := s.Now()
		if len(pending) > 0 {
			r := newHashReader(tx, orgID)
			if log.Size > 0 {
				// Reads the tree's right edge, which the new leaves hash
				// with, and checks it.
				root, err := tlog.TreeHash(log.Size, r)
				if err != nil {
					return err
				}
				if root != log.Root {
					return Internal(fmt.Errorf("ledger of org %s: the stored hashes give root %s, the log says %s", orgID, root, log.Root))
				}
			}
			from := log.Size
			for i := range pending {
				e := &pending[i]
				e.Index, e.IntegratedAt = from+int64(i), now
				hs, err := tlog.StoredHashesForRecordHash(e.Index, e.LeafHash, r)
				if err != nil {
					return err
				}
				at := tlog.StoredHashIndex(0, e.Index)
				for j, h := range hs {
					r.known[at+int64(j)] = h
				}
			}
			log.Size += int64(len(pending))
			if log.Root, err = tlog.TreeHash(log.Size, r); err != nil {
				return err
			}
			tiles := tlog.NewTiles(TileHeight, from, log.Size)
			data := make([][]byte, len(tiles))
			for i, t := range tiles {
				if data[i], err = tlog.ReadTileData(t, r); err != nil {
					return err
				}
			}
			if err := tx.IntegrateLedger(orgID, pending, tiles, data); err != nil {
				return err
			}
		}
		due := log.CheckpointSize < log.Size && (log.Checkpoint == "" || now.Sub(log.CheckpointAt.Time) >= every || now.Before(log.CheckpointAt.Time))
		if due {
			if log.Checkpoint, err = k.sign(orgID, log.Size, log.Root); err != nil {
				return err
			}
			log.CheckpointSize, log.CheckpointAt = log.Size, now
		}
		if n = len(pending); n == 0 && !due {
			return nil
		}
		return tx.SaveLedgerLog(log)
	})
	return n, err
}

// LedgerKeyView is the installation's verifier key.
type LedgerKeyView struct {
	Key    string `json:"key" doc:"The verifier key of the checkpoints' signatures (C2SP signed-note format, Ed25519): the file wps ledger verify --key reads"`
	Origin string `json:"origin" doc:"The origin line of this organization's checkpoints"`
}

// LedgerKeyOf shows the verifier key. Errors: CodeForbidden.
func (s *Service) LedgerKeyOf(ctx context.Context, p *Principal) (LedgerKeyView, error) {
	if err := p.Require(FnLedgerRead); err != nil {
		return LedgerKeyView{}, err
	}
	k, err := s.ledgerKey(ctx)
	if err != nil {
		return LedgerKeyView{}, err
	}
	return LedgerKeyView{Key: k.vkey, Origin: LedgerOrigin(p.OrgID)}, nil
}

// CheckpointView is a signed checkpoint of an org's log.
type CheckpointView struct {
	Checkpoint string `json:"checkpoint" doc:"The signed note: origin, tree size and root hash, then the signature"`
	TreeSize   int64  `json:"treeSize"`
	RootHash   string `json:"rootHash" doc:"base64"`
}

// LedgerCheckpoint is the org's latest signed checkpoint; before the
// first, one of the log as it is (a new org's: size 0). Errors:
// CodeForbidden.
func (s *Service) LedgerCheckpoint(ctx context.Context, p *Principal) (CheckpointView, error) {
	if err := p.Require(FnLedgerRead); err != nil {
		return CheckpointView{}, err
	}
	k, err := s.ledgerKey(ctx)
	if err != nil {
		return CheckpointView{}, err
	}
	var out CheckpointView
	err = s.store.Read(ctx, func(tx Tx) error {
		log, err := tx.GetLedgerLog(p.OrgID)
		if err != nil {
			return err
		}
		if log.Checkpoint != "" {
			out, err = k.checkpointView(p.OrgID, log.Checkpoint)
			return err
		}
		out, err = k.checkpointAt(tx, p.OrgID, log, log.Size)
		return err
	})
	return out, err
}

// checkpointAt signs the checkpoint of the org's tree at size (at most the
// log's), the stored one when it is of that size.
func (k *ledgerSigner) checkpointAt(tx Tx, orgID string, log LedgerLog, size int64) (CheckpointView, error) {
	if size == log.CheckpointSize && log.Checkpoint != "" {
		return k.checkpointView(orgID, log.Checkpoint)
	}
	root := log.Root
	if size != log.Size {
		var err error
		if root, err = tlog.TreeHash(size, newHashReader(tx, orgID)); err != nil {
			return CheckpointView{}, err
		}
	}
	signed, err := k.sign(orgID, size, root)
	if err != nil {
		return CheckpointView{}, err
	}
	return CheckpointView{Checkpoint: signed, TreeSize: size, RootHash: root.String()}, nil
}

// checkpointView opens a stored checkpoint with the key.
func (k *ledgerSigner) checkpointView(orgID, signed string) (CheckpointView, error) {
	c, err := k.open(orgID, signed)
	if err != nil {
		return CheckpointView{}, Internal(err)
	}
	return CheckpointView{Checkpoint: signed, TreeSize: c.Size, RootHash: c.Root.String()}, nil
}

// open checks a checkpoint's signature and origin.
func (k *ledgerSigner) open(orgID, signed string) (Checkpoint, error) {
	return OpenCheckpoint([]byte(signed), k.verifier, LedgerOrigin(orgID))
}

// OpenCheckpoint checks a signed checkpoint against a verifier and, when
// origin is not "", its origin; it returns what the checkpoint says.
func OpenCheckpoint(signed []byte, v note.Verifier, origin string) (Checkpoint, error) {
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	c, err := ParseCheckpoint(n.Text)
	if err != nil {
		return Checkpoint{}, err
	}
	if origin != "" && c.Origin != origin {
		return Checkpoint{}, fmt.Errorf("checkpoint of %q, not %q", c.Origin, origin)
	}
	return c, nil
}

// LeafProof is an inclusion proof of an action in the org's log.
type LeafProof struct {
	LeafIndex  int64    `json:"leafIndex"`
	LeafHash   string   `json:"leafHash" doc:"base64"`
	TreeSize   int64    `json:"treeSize"`
	Proof      []string `json:"proof" doc:"The RFC 6962 inclusion proof: base64 hashes"`
	Checkpoint string   `json:"checkpoint" doc:"The signed checkpoint of the tree at treeSize"`
	Leaf       string   `json:"leaf" doc:"The leaf's data (canonical JSON, base64): the action as the log holds it, its values as a hash"`
}

// ActionProof proves that an action is a leaf of the org's log, in the
// tree of size treeSize (0: the latest checkpoint's, or the tree's when
// that one does not hold the action yet). Errors: CodeForbidden,
// CodeNotFound, CodeConflict (with RetryAfter) while the action waits to
// be integrated, CodeInvalid for a treeSize that does not hold it.
func (s *Service) ActionProof(ctx context.Context, p *Principal, actionID string, treeSize int64) (LeafProof, error) {
	if err := p.Require(FnLedgerRead); err != nil {
		return LeafProof{}, err
	}
	k, err := s.ledgerKey(ctx)
	if err != nil {
		return LeafProof{}, err
	}
	var out LeafProof
	err = s.store.Read(ctx, func(tx Tx) error {
		a, err := tx.GetAction(p.OrgID, actionID)
		if err != nil {
			return err
		}
		e, err := tx.GetLedgerEntry(p.OrgID, a.MeasurementID, actionID)
		if err != nil {
			return err
		}
		if !IsActionLeaf(e.Kind) {
			return NotFound("action")
		}
		if !e.Integrated() {
			return &Error{Code: CodeConflict, Message: "the action is not in the log yet; its proof follows within a second", RetryAfter: time.Second}
		}
		log, err := tx.GetLedgerLog(p.OrgID)
		if err != nil {
			return err
		}
		size := treeSize
		if size == 0 {
			size = log.CheckpointSize
			if size <= e.Index || log.Checkpoint == "" {
				size = log.Size
			}
		}
		if size <= e.Index || size > log.Size {
			return Invalid("treeSize", "the tree holds this action from size %d to %d", e.Index+1, log.Size)
		}
		r := newHashReader(tx, p.OrgID)
		proof, err := tlog.ProveRecord(size, e.Index, r)
		if err != nil {
			return err
		}
		cp, err := k.checkpointAt(tx, p.OrgID, log, size)
		if err != nil {
			return err
		}
		out = LeafProof{LeafIndex: e.Index, LeafHash: e.LeafHash.String(), TreeSize: size, Proof: hashStrings(proof),
			Checkpoint: cp.Checkpoint, Leaf: base64.StdEncoding.EncodeToString(ActionLeaf(a, e.Kind, e.Payload))}
		return nil
	})
	return out, err
}

func hashStrings(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

// ConsistencyProof proves that the org's tree of size From is a prefix of
// its tree of size To.
type ConsistencyProof struct {
	From  int64    `json:"from"`
	To    int64    `json:"to"`
	Proof []string `json:"proof" doc:"The RFC 6962 consistency proof: base64 hashes"`
}

// LedgerConsistency proves that the tree of size from is a prefix of the
// tree of size to (from ≤ to ≤ the log's size). Errors: CodeForbidden,
// CodeInvalid.
func (s *Service) LedgerConsistency(ctx context.Context, p *Principal, from, to int64) (ConsistencyProof, error) {
	if err := p.Require(FnLedgerRead); err != nil {
		return ConsistencyProof{}, err
	}
	out := ConsistencyProof{From: from, To: to, Proof: []string{}}
	err := s.store.Read(ctx, func(tx Tx) error {
		log, err := tx.GetLedgerLog(p.OrgID)
		if err != nil {
			return err
		}
		switch {
		case from < 1:
			return Invalid("from", "must be at least 1")
		case to < from || to > log.Size:
			return Invalid("to", "must be between from and the tree's size (%d)", log.Size)
		}
		proof, err := tlog.ProveTree(to, from, newHashReader(tx, p.OrgID))
		if err != nil {
			return err
		}
		out.Proof = hashStrings(proof)
		return nil
	})
	return out, err
}
