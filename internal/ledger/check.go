package ledger

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"wps/internal/wps"
)

// ParseKey reads a verifier key: the key itself (note format, as GET
// /v1/ledger/key's "key") or that endpoint's whole answer.
func ParseKey(b []byte) (note.Verifier, error) {
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(text, "{") {
		var v struct{ Key string }
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		text = v.Key
	}
	v, err := note.NewVerifier(text)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	return v, nil
}

// ParseSignedCheckpoint reads a signed checkpoint: the note itself or an
// answer that carries it in "checkpoint" (GET /v1/ledger/checkpoint's, a
// proof's).
func ParseSignedCheckpoint(b []byte) ([]byte, error) {
	if t := bytes.TrimSpace(b); bytes.HasPrefix(t, []byte("{")) {
		var v struct{ Checkpoint string }
		if err := json.Unmarshal(t, &v); err != nil || v.Checkpoint == "" {
			return nil, errors.New("checkpoint: a JSON file holds it in \"checkpoint\"")
		}
		return []byte(v.Checkpoint), nil
	}
	return b, nil
}

// Inclusion is what an inclusion check established.
type Inclusion struct {
	ActionID  string
	Origin    string
	LeafIndex int64
	TreeSize  int64
	Root      tlog.Hash
}

// VerifyInclusion checks, with no server, that an action is a leaf of an
// org's log as a signed checkpoint commits to it: the checkpoint's
// signature (key), the proof (GET /v1/actions/{id}/proof's answer) for
// the checkpoint's tree size, the leaf's data against its hash, and the
// action (GET /v1/actions/{id}'s answer, or an action of a measurement's)
// against the leaf.
func VerifyInclusion(key, checkpoint, proof, action []byte) (Inclusion, error) {
	v, err := ParseKey(key)
	if err != nil {
		return Inclusion{}, err
	}
	signed, err := ParseSignedCheckpoint(checkpoint)
	if err != nil {
		return Inclusion{}, err
	}
	c, err := wps.OpenCheckpoint(signed, v, "")
	if err != nil {
		return Inclusion{}, err
	}
	if !strings.HasPrefix(c.Origin, "wps/") {
		return Inclusion{}, fmt.Errorf("checkpoint of %q, not of a wps ledger", c.Origin)
	}
	var p wps.LeafProof
	if err := json.Unmarshal(proof, &p); err != nil {
		return Inclusion{}, fmt.Errorf("proof: %w", err)
	}
	if p.TreeSize != c.Size {
		return Inclusion{}, fmt.Errorf("the proof is for the tree of size %d and the checkpoint of size %d: ask for the proof with ?treeSize=%d", p.TreeSize, c.Size, c.Size)
	}
	leafHash, err := tlog.ParseHash(p.LeafHash)
	if err != nil {
		return Inclusion{}, fmt.Errorf("proof: leafHash: %w", err)
	}
	leaf, err := base64.StdEncoding.DecodeString(p.Leaf)
	if err != nil {
		return Inclusion{}, fmt.Errorf("proof: leaf: %w", err)
	}
	if tlog.RecordHash(leaf) != leafHash {
		return Inclusion{}, errors.New("the proof's leaf does not hash to its leafHash")
	}
	hashes := make(tlog.RecordProof, len(p.Proof))
	for i, s := range p.Proof {
		if hashes[i], err = tlog.ParseHash(s); err != nil {
			return Inclusion{}, fmt.Errorf("proof: hash %d: %w", i, err)
		}
	}
	if err := tlog.CheckRecord(hashes, c.Size, c.Root, p.LeafIndex, leafHash); err != nil {
		return Inclusion{}, fmt.Errorf("the leaf is not in the checkpoint's tree: %w", err)
	}
	id, err := sameAction(leaf, leafHash, action, strings.TrimPrefix(c.Origin, "wps/"))
	if err != nil {
		return Inclusion{}, err
	}
	return Inclusion{ActionID: id, Origin: c.Origin, LeafIndex: p.LeafIndex, TreeSize: c.Size, Root: c.Root}, nil
}

// sameAction checks that the action file shows the action the leaf holds,
// and returns its id.
func sameAction(leaf []byte, leafHash tlog.Hash, action []byte, orgID string) (string, error) {
	var l map[string]any
	if err := json.Unmarshal(leaf, &l); err != nil {
		return "", fmt.Errorf("proof: leaf: %w", err)
	}
	if kind, _ := l["kind"].(string); !wps.IsActionLeaf(kind) {
		return "", fmt.Errorf("the leaf is a %v, not an action", l["kind"])
	}
	var a map[string]any
	if err := json.Unmarshal(action, &a); err != nil {
		return "", fmt.Errorf("action: %w", err)
	}
	if l["orgId"] != orgID {
		return "", fmt.Errorf("the leaf is of org %v, the checkpoint of %s", l["orgId"], orgID)
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	// The transactionHash shown: the client's, else the action's ledger
	// hash (the leaf hash in hex, or its hash chain link before the log).
	tx := str(l, "transactionHash")
	if tx == "" {
		tx = str(l, "ledgerHash")
		if tx == "" {
			tx = hex.EncodeToString(leafHash[:])
		}
	}
	want := map[string]string{"transactionHash": tx}
	for _, k := range []string{"id", "measurementId", "stepId", "type", "userId", "username", "policyName", "tokenId", "observation", "reprovesActionId", "createdAt"} {
		want[k] = str(l, k)
	}
	if ledger := str(a, "ledgerHash"); ledger != "" {
		want["ledgerHash"] = cmpOr(str(l, "ledgerHash"), hex.EncodeToString(leafHash[:]))
	}
	if str(a, "leafHash") != "" {
		want["leafHash"] = leafHash.String()
	}
	if sig, signed := l["signature"]; signed || a["signature"] != nil { // an electronic signature, only in a signed action's leaf
		if !reflect.DeepEqual(sig, a["signature"]) {
			return "", fmt.Errorf("the action's signature is %v, the log's leaf says %v", a["signature"], sig)
		}
	}
	for k, w := range want {
		if got := str(a, k); got != w {
			return "", fmt.Errorf("the action's %s is %q, the log's leaf says %q", k, got, w)
		}
	}
	lb, _ := l["onBehalfOf"].(map[string]any)
	ab, _ := a["onBehalfOf"].(map[string]any)
	for _, k := range []string{"userId", "name"} {
		if got, w := str(ab, k), str(lb, k); got != w {
			return "", fmt.Errorf("the action's onBehalfOf.%s is %q, the log's leaf says %q", k, got, w)
		}
	}
	return want["id"], nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Monitor watches a server's checkpoints over time, as an auditor or a
// customer does: each checkpoint must be signed by the key and contain the
// last one seen (a consistency proof). A server that rewrote history
// someone has seen, even with its own key, fails here.
type Monitor struct {
	URL      string // the server, e.g. https://wps.example.com
	APIKey   string // a key with ledger:read
	Verifier note.Verifier
	Client   *http.Client // default http.DefaultClient
	// StateFile, when set, keeps the last checkpoint seen across runs.
	StateFile string
	Out       io.Writer
	last      []byte // the last checkpoint seen (signed note)
}

// Load reads the last checkpoint seen from StateFile, if any.
func (m *Monitor) Load() error {
	if m.StateFile == "" {
		return nil
	}
	b, err := os.ReadFile(m.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := wps.OpenCheckpoint(b, m.Verifier, ""); err != nil {
		return fmt.Errorf("%s: %w", m.StateFile, err)
	}
	m.last = b
	return nil
}

// Check fetches the latest checkpoint and checks it against the last one
// seen; it returns it once checked (and keeps it as the last one).
func (m *Monitor) Check(ctx context.Context) (wps.Checkpoint, error) {
	var cv wps.CheckpointView
	if err := m.get(ctx, "/v1/ledger/checkpoint", &cv); err != nil {
		return wps.Checkpoint{}, err
	}
	c, err := wps.OpenCheckpoint([]byte(cv.Checkpoint), m.Verifier, "")
	if err != nil {
		return c, err
	}
	if m.last != nil {
		old, err := wps.OpenCheckpoint(m.last, m.Verifier, "")
		if err != nil {
			return c, err
		}
		if err := m.consistent(ctx, old, c); err != nil {
			return c, err
		}
	}
	m.last = []byte(cv.Checkpoint)
	if m.StateFile != "" {
		if err := os.WriteFile(m.StateFile, m.last, 0o644); err != nil {
			return c, err
		}
	}
	if m.Out != nil {
		fmt.Fprintf(m.Out, "ok: %s at size %d, root %s\n", c.Origin, c.Size, c.Root)
	}
	return c, nil
}

// consistent checks that the tree of checkpoint c contains old's.
func (m *Monitor) consistent(ctx context.Context, old, c wps.Checkpoint) error {
	switch {
	case c.Origin != old.Origin:
		return fmt.Errorf("the log is %q, it was %q", c.Origin, old.Origin)
	case c.Size < old.Size:
		return fmt.Errorf("the log shrank from %d to %d leaves: history was rewritten", old.Size, c.Size)
	case c.Size == old.Size && c.Root != old.Root:
		return fmt.Errorf("two roots for the tree of size %d: history was rewritten", c.Size)
	case c.Size == old.Size || old.Size == 0:
		return nil
	}
	var p wps.ConsistencyProof
	if err := m.get(ctx, "/v1/ledger/consistency?from="+strconv.FormatInt(old.Size, 10)+"&to="+strconv.FormatInt(c.Size, 10), &p); err != nil {
		return err
	}
	proof := make(tlog.TreeProof, len(p.Proof))
	for i, s := range p.Proof {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return fmt.Errorf("consistency proof: %w", err)
		}
		proof[i] = h
	}
	if err := tlog.CheckTree(proof, c.Size, c.Root, old.Size, old.Root); err != nil {
		return fmt.Errorf("the tree of size %d does not contain the one of size %d seen before: history was rewritten (%v)", c.Size, old.Size, err)
	}
	return nil
}

func (m *Monitor) get(ctx context.Context, path string, out any) error {
	u, err := url.JoinPath(m.URL, "/")
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u, "/")+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+m.APIKey)
	client := m.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, res.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}
