package wps

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"golang.org/x/mod/sumdb/tlog"

	"wps/internal/engine"
)

// LedgerReport is the answer of a ledger verification.
type LedgerReport struct {
	OK             bool           `json:"ok"`
	Checked        int64          `json:"checked" doc:"Ledger entries whose content was checked against their leaf hash"`
	Actions        int64          `json:"actions" doc:"Actions among them"`
	Measurements   int64          `json:"measurements" doc:"Measurements replayed from their entries and compared with their stored status and state"`
	TreeSize       int64          `json:"treeSize" doc:"Entries in the tree log"`
	Pending        int64          `json:"pending" doc:"Entries waiting to be integrated into the log"`
	CheckpointSize int64          `json:"checkpointSize" doc:"The size of the latest signed checkpoint, whose root the tree was checked against"`
	RootHash       string         `json:"rootHash" doc:"The tree's root hash (base64)"`
	Broken         *LedgerBreach  `json:"broken,omitempty" doc:"The first problem found"`
	Problems       []LedgerBreach `json:"problems,omitempty" doc:"The problems found (at most 100)"`
}

// LedgerBreach is a problem the verification found.
type LedgerBreach struct {
	LeafIndex     *int64 `json:"leafIndex,omitempty"`
	ActionID      string `json:"actionId,omitempty"`
	MeasurementID string `json:"measurementId,omitempty"`
	Reason        string `json:"reason"`
}

const maxProblems = 100

func (rep *LedgerReport) breach(b LedgerBreach) {
	rep.OK = false
	if len(rep.Problems) < maxProblems {
		rep.Problems = append(rep.Problems, b)
	}
	rep.Broken = &rep.Problems[0]
}

// VerifyLedger checks the org's ledger: it recomputes the tree log from its
// entries (each leaf's hash from the action row or the payload it stands
// for) and checks it against the latest signed checkpoint and the stored
// hashes, then replays each measurement's entries through the engine and
// compares the result with the stored status, state and marks. It reports
// an edited, deleted, reordered or forged row, a recomputed hash, a forged
// status or state. Errors: CodeForbidden.
func (s *Service) VerifyLedger(ctx context.Context, p *Principal) (LedgerReport, error) {
	if err := p.Require(FnLedgerRead); err != nil {
		return LedgerReport{}, err
	}
	k, err := s.ledgerKey(ctx)
	if err != nil {
		return LedgerReport{}, err
	}
	rep := LedgerReport{OK: true}
	v := &verifier{s: s, p: p, rep: &rep, measurements: map[string]bool{}}
	if err := v.tree(ctx, k); err != nil {
		return rep, err
	}
	if err := v.pending(ctx); err != nil {
		return rep, err
	}
	if err := v.replayAll(ctx); err != nil {
		return rep, err
	}
	return rep, v.auditRows(ctx)
}

// auditRows checks that every audit event row has its ledger entry (each
// entry's content is checked against its row by content): a row added
// without one is reported.
func (v *verifier) auditRows(ctx context.Context) error {
	var events, entries int64
	if err := v.read(ctx, func(tx Tx) (err error) { events, entries, err = tx.CountAuditEvents(v.p.OrgID); return err }); err != nil {
		return err
	}
	if events != entries {
		v.rep.breach(LedgerBreach{Reason: fmt.Sprintf("there are %d audit events and %d audit entries in the ledger", events, entries)})
	}
	return nil
}

// verifier is one verification of an org's ledger.
type verifier struct {
	s            *Service
	p            *Principal
	rep          *LedgerReport
	measurements map[string]bool // those the entries name
}

// read runs fn in a read transaction of the org.
func (v *verifier) read(ctx context.Context, fn func(tx Tx) error) error {
	return v.s.store.Read(ctx, fn)
}

// content checks an entry's data against its stored leaf hash and returns
// the hash of its data (the stored one when the data is gone).
func (v *verifier) content(e LedgerLeaf) tlog.Hash {
	v.rep.Checked++
	v.measurements[e.MeasurementID] = true
	at := func(reason string, args ...any) LedgerBreach {
		b := LedgerBreach{ActionID: "", MeasurementID: e.MeasurementID, Reason: fmt.Sprintf(reason, args...)}
		if e.Integrated() {
			i := e.Index
			b.LeafIndex = &i
		}
		if IsActionLeaf(e.Kind) {
			b.ActionID = e.ID
		}
		return b
	}
	data := leafData(e.LedgerEntry, e.Action)
	if data == nil {
		v.rep.breach(at("the ledger's %s entry %s has no row", e.Kind, e.ID))
		return e.LeafHash
	}
	h := tlog.RecordHash(data)
	if h != e.LeafHash {
		v.rep.breach(at("the %s's content does not match its hash in the ledger", e.Kind))
	}
	if a := e.Action; a != nil {
		v.rep.Actions++
		switch {
		case a.LeafHash != h.String():
			v.rep.breach(at("the action's stored leaf hash is not its content's"))
		case e.Kind != LeafChainedAction && (a.LedgerHash != hex.EncodeToString(h[:]) || a.PrevHash != ""):
			v.rep.breach(at("the action's ledgerHash is not its leaf hash"))
		case e.Kind == LeafChainedAction && LedgerHash(a.PrevHash, *a, clientHash(*a)) != a.LedgerHash:
			v.rep.breach(at("the action's content does not match its hash in the chain it was recorded in"))
		}
	}
	return h
}

// tree walks the org's leaves in order, recomputes the tree from them
// (with tlog, keeping only the hashes it still needs) and checks it
// against the latest checkpoint, the stored hashes and the log's state.
func (v *verifier) tree(ctx context.Context, k *ledgerSigner) error {
	var log LedgerLog
	if err := v.read(ctx, func(tx Tx) (err error) { log, err = tx.GetLedgerLog(v.p.OrgID); return err }); err != nil {
		return err
	}
	var cp Checkpoint
	cpSize := int64(-1)
	if log.Checkpoint != "" {
		c, err := k.open(v.p.OrgID, log.Checkpoint)
		if err != nil {
			v.rep.breach(LedgerBreach{Reason: "the latest checkpoint does not verify with the installation's key: " + err.Error()})
		} else {
			cp, cpSize = c, c.Size
			v.rep.CheckpointSize = c.Size
		}
	}
	known := map[int64]tlog.Hash{}
	r := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			h, ok := known[x]
			if !ok {
				return nil, fmt.Errorf("ledger verification: hash %d not kept", x)
			}
			out[i] = h
		}
		return out, nil
	})
	stored := &storedHashes{v: v}
	var n int64
	rootAt := func(size int64) (tlog.Hash, error) { return tlog.TreeHash(size, r) }
	for {
		var page []LedgerLeaf
		if err := v.read(ctx, func(tx Tx) (err error) { page, err = tx.ListLedgerLeaves(v.p.OrgID, n, 1000); return err }); err != nil {
			return err
		}
		for _, e := range page {
			if e.Index != n {
				i := n
				v.rep.breach(LedgerBreach{LeafIndex: &i, Reason: fmt.Sprintf("leaves %d to %d are missing", n, e.Index-1)})
				return nil
			}
			h := v.content(e)
			hs, err := tlog.StoredHashesForRecordHash(n, h, r)
			if err != nil {
				return err
			}
			at := tlog.StoredHashIndex(0, n)
			for j, x := range hs {
				known[at+int64(j)] = x
				if j > 0 { // its children are never read again
					c := n >> j << 1
					delete(known, tlog.StoredHashIndex(j-1, c))
					delete(known, tlog.StoredHashIndex(j-1, c+1))
				}
			}
			if err := stored.check(ctx, at, hs); err != nil {
				return err
			}
			n++
			if n == cpSize {
				root, err := rootAt(n)
				if err != nil {
					return err
				}
				if root != cp.Root {
					v.rep.breach(LedgerBreach{Reason: fmt.Sprintf("the tree's first %d leaves do not give the root of the signed checkpoint of that size", n)})
				}
			}
			if n == log.Size {
				root, err := rootAt(n)
				if err != nil {
					return err
				}
				v.rep.RootHash = root.String()
				if root != log.Root {
					v.rep.breach(LedgerBreach{Reason: "the tree's leaves do not give the root the log records"})
				}
			}
		}
		if len(page) < 1000 {
			break
		}
	}
	v.rep.TreeSize = n
	var after LedgerLog
	if err := v.read(ctx, func(tx Tx) (err error) { after, err = tx.GetLedgerLog(v.p.OrgID); return err }); err != nil {
		return err
	}
	switch {
	case n < log.Size:
		v.rep.breach(LedgerBreach{Reason: fmt.Sprintf("the log holds %d leaves, its state says %d", n, log.Size)})
	case n > after.Size:
		v.rep.breach(LedgerBreach{Reason: fmt.Sprintf("the log holds %d leaves, more than its state says (%d)", n, after.Size)})
	case cpSize > n:
		v.rep.breach(LedgerBreach{Reason: fmt.Sprintf("the signed checkpoint is of %d leaves, the log holds %d", cpSize, n)})
	case n > 0 && log.Checkpoint == "":
		v.rep.breach(LedgerBreach{Reason: "the log has leaves but no signed checkpoint"})
	}
	return nil
}

// storedHashes compares the hashes the walk computes with the stored
// tiles, which proofs are made from: each hash of a tiled level (a
// multiple of TileHeight) with its tile's, reading each tile once (the
// walk goes through a level's tiles in order).
type storedHashes struct {
	v      *verifier
	tiles  map[int][]byte // the tile of each tiled level read last, by level
	at     map[int]int64  // and its number
	broken bool
}

func (s *storedHashes) check(ctx context.Context, at int64, hs []tlog.Hash) error {
	if s.tiles == nil {
		s.tiles, s.at = map[int][]byte{}, map[int]int64{}
	}
	for level, h := range hs {
		if s.broken || level%TileHeight != 0 {
			continue
		}
		i := at + int64(level)
		t := tlog.TileForIndex(TileHeight, i)
		if data, ok := s.tiles[t.L]; !ok || s.at[t.L] != t.N {
			if err := s.v.read(ctx, func(tx Tx) error {
				got, err := tx.ReadLedgerTiles(s.v.p.OrgID, []tlog.Tile{t})
				data = got[0]
				return err
			}); err != nil {
				return err
			}
			s.tiles[t.L], s.at[t.L] = data, t.N
		}
		if stored, err := tlog.HashFromTile(t, s.tiles[t.L], i); err != nil || stored != h {
			s.broken = true
			s.v.rep.breach(LedgerBreach{Reason: fmt.Sprintf("the stored tiles of the tree differ from its leaves from stored hash %d on: proofs would not verify", i)})
		}
	}
	return nil
}

// pending checks the content of the entries waiting to be integrated.
func (v *verifier) pending(ctx context.Context) error {
	for after := int64(-1 << 63); ; {
		var page []LedgerLeaf
		if err := v.read(ctx, func(tx Tx) (err error) { page, err = tx.ListPendingLedger(v.p.OrgID, after, 1000); return err }); err != nil {
			return err
		}
		for _, e := range page {
			v.content(e)
			v.rep.Pending++
			after = e.Seq
		}
		if len(page) < 1000 {
			return nil
		}
	}
}

// replayAll replays every measurement of the org, and reports entries of
// measurements that are gone.
func (v *verifier) replayAll(ctx context.Context) error {
	for after := ""; ; {
		var ids []string
		if err := v.read(ctx, func(tx Tx) (err error) { ids, err = tx.ListMeasurementIDs(v.p.OrgID, after, 500); return err }); err != nil {
			return err
		}
		for _, id := range ids {
			err := v.read(ctx, func(tx Tx) error {
				m, proc, actions, err := tx.ReadMeasurement(v.p.OrgID, id)
				if err != nil {
					return err
				}
				entries, err := tx.MeasurementLedger(v.p.OrgID, id)
				if err != nil {
					return err
				}
				v.replay(tx, m, proc, actions, entries)
				return nil
			})
			if err != nil {
				return err
			}
			v.rep.Measurements++
			delete(v.measurements, id)
			after = id
		}
		if len(ids) < 500 {
			break
		}
	}
	gone := make([]string, 0, len(v.measurements))
	for id := range v.measurements {
		if id != "" {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	for _, id := range gone {
		v.rep.breach(LedgerBreach{MeasurementID: id, Reason: "the ledger has entries of a measurement that is gone"})
	}
	return nil
}

// replay works a measurement's state out of its entries, as the service
// did when it wrote them, and compares it with what is stored: status,
// state, actions and their marks.
func (v *verifier) replay(tx Tx, m Measurement, proc Process, actions []Action, entries []LedgerEntry) {
	bad := func(actionID, reason string, args ...any) {
		v.rep.breach(LedgerBreach{MeasurementID: m.ID, ActionID: actionID, Reason: fmt.Sprintf(reason, args...)})
	}
	rows := map[string]Action{}
	for _, a := range actions {
		rows[a.ID] = a
	}
	proc.Version = m.Version // the version of the steps read with it (the process's latest may be later)
	r := &run{s: v.s, tx: tx, p: v.p, m: m, proc: proc, def: engineDef(proc.Steps)}
	var state engine.State
	started, stuck := false, false
	expect := map[string]map[string]bool{LeafSuperseded: {}, LeafReproved: {}} // as the replay works them out
	marked := map[string]map[string]bool{LeafSuperseded: {}, LeafReproved: {}} // as the marks say
	seen := map[string]bool{}
	// start starts the measurement from its creation's entry.
	start := func(e LedgerEntry) bool {
		var ml measurementLeaf
		if err := json.Unmarshal(e.Payload, &ml); err != nil || started || ml.ProcessID != m.ProcessID ||
			ml.MeasurementID != m.ID || ml.CreatedBy != m.CreatedBy || !ml.CreatedAt.Equal(m.CreatedAt.Time) || !r.atVersion(ml.Version) {
			bad("", "the measurement's creation entry does not match it")
			return false
		}
		state, _ = engine.Start(r.def, ml.StartedAt.Time, ml.Pending)
		started = true
		return true
	}
	for _, e := range entries {
		if stuck {
			break
		}
		switch e.Kind {
		case LeafMeasurement:
			if stuck = !start(e); stuck {
				continue
			}
		case LeafOpened:
			state.Pending = false
		case LeafMigrated:
			var ml migrationLeaf
			from := r.def
			if err := json.Unmarshal(e.Payload, &ml); err != nil || !started || ml.FromVersion != r.proc.Version || !r.atVersion(ml.ToVersion) {
				bad("", "a migrated entry does not follow from the entries before it")
				stuck = true
				continue
			}
			next, _, _, err := engine.Migrate(from, r.def, state, ml.At.Time)
			if err != nil {
				bad("", "the move to version %d does not follow from the entries before it: %v", ml.ToVersion, err)
				stuck = true
				continue
			}
			state = next
		case LeafSuperseded, LeafReproved:
			var ml markLeaf
			if err := json.Unmarshal(e.Payload, &ml); err != nil {
				bad("", "a %s entry cannot be read", e.Kind)
				continue
			}
			for _, id := range ml.ActionIDs {
				marked[e.Kind][id] = true
			}
		case LeafAction, LeafChainedAction, LeafCreation:
			if e.Kind == LeafCreation {
				if stuck = !start(e); stuck {
					continue
				}
			}
			a, ok := rows[e.ID]
			if !ok {
				bad(e.ID, "the ledger's action is not among the measurement's actions")
				stuck = true
				continue
			}
			seen[a.ID] = true
			if !started {
				bad(a.ID, "the ledger has an action before the measurement's creation")
				stuck = true
				continue
			}
			res, err := r.replayAction(state, a, e.Kind)
			if err != nil {
				bad(a.ID, "the action does not follow from the entries before it: %v", err)
				stuck = true
				continue
			}
			for i := range r.actions {
				if slices.Contains(res.Reset, r.actions[i].StepID) && r.actions[i].Type != engine.Rejection && !r.actions[i].Superseded {
					r.actions[i].Superseded = true
					expect[LeafSuperseded][r.actions[i].ID] = true
				}
			}
			if a.ReprovesActionID != "" {
				expect[LeafReproved][a.ReprovesActionID] = true
			}
			state = res.State
			r.actions = append(r.actions, a)
			r.actions[len(r.actions)-1].Superseded, r.actions[len(r.actions)-1].Reproved = false, false
		}
	}
	if !started && !stuck {
		bad("", "the measurement has no creation entry in the ledger")
		return
	}
	if stuck {
		return
	}
	for _, a := range actions {
		if !seen[a.ID] {
			bad(a.ID, "the action is not in the ledger")
		}
	}
	for _, kind := range []string{LeafSuperseded, LeafReproved} {
		for _, a := range actions {
			flag := a.Superseded
			if kind == LeafReproved {
				flag = a.Reproved
			}
			switch {
			case expect[kind][a.ID] != marked[kind][a.ID]:
				bad(a.ID, "the ledger's %s marks do not follow from its actions", kind)
			case flag != expect[kind][a.ID]:
				bad(a.ID, "the action's %s flag is %v, its entries say %v", kind, flag, expect[kind][a.ID])
			}
		}
	}
	if r.proc.Version != m.Version {
		bad("", "the stored version %d is not what its entries give (%d)", m.Version, r.proc.Version)
	}
	if got := engine.Status(r.def, state); got != m.Status {
		bad("", "the stored status %s is not what its entries give (%s)", m.Status, got)
	}
	if got, stored := stateJSON(state), stateJSON(m.State); got != stored {
		bad("", "the stored state is not what its entries give")
	}
	if m.ActionCount != len(actions) {
		bad("", "the measurement counts %d actions and has %d", m.ActionCount, len(actions))
	}
}

// atVersion sets the version the replay works with (the measurement's as
// created, then as moved), reading it unless it is the one stored with
// the measurement. False when the process has no such version.
func (r *run) atVersion(version int) bool {
	if version == r.proc.Version {
		return true
	}
	proc, err := r.tx.GetProcessVersion(r.m.OrgID, r.m.ProcessID, version)
	if err != nil {
		return false
	}
	proc.Version = version // the version of these steps (the process's latest may be later)
	r.proc, r.def = proc, engineDef(proc.Steps)
	return true
}

// replayAction applies a recorded action to state through the engine, as
// act (or Reprove) did, and checks that the engine gives the seat and
// opening it recorded. A reproval marks its target (in r.actions) reproved.
func (r *run) replayAction(state engine.State, a Action, kind string) (engine.Result, error) {
	if a.Type == engine.Rejection && a.ReprovesActionID != "" {
		i := slices.IndexFunc(r.actions, func(x Action) bool { return x.ID == a.ReprovesActionID })
		if i < 0 {
			return engine.Result{}, fmt.Errorf("it reproves action %s, which is not before it", a.ReprovesActionID)
		}
		res, err := engine.Reprove(r.def, state, r.actions[i].StepID, a.CreatedAt.Time)
		if err != nil {
			return res, err
		}
		r.actions[i].Reproved = true
		return res, r.sameSeat(res, a)
	}
	_, st := stepByID(r.proc.Steps, a.StepID)
	if st == nil {
		return engine.Result{}, fmt.Errorf("its step %q is not in the process version", a.StepID)
	}
	route := a.Route
	if kind == LeafChainedAction && st.Routing != nil { // recorded before routes were: worked out as act did
		var err error
		if route, err = r.routeValue(*st, r.current(a.Data)); err != nil {
			return engine.Result{}, err
		}
	}
	policy := seatPolicy(*st, a)
	holds := []string{policy}
	if a.Type == engine.Rejection {
		holds = []string{engine.AnySeat}
	}
	act := engine.Action{ID: a.ID, Type: a.Type, StepID: a.StepID, UserID: a.UserID, Holds: holds,
		Policy: policy, Provided: func(string) bool { return true }, RouteValue: route, Now: a.CreatedAt.Time}
	if a.OnBehalfOf.UserID != "" { // a delegate's: the seat is the delegator's
		act.Holds, act.Proxies = nil, []engine.Proxy{{UserID: a.OnBehalfOf.UserID, Holds: holds}}
	}
	res, err := engine.Apply(r.def, state, act)
	if err != nil {
		return res, err
	}
	return res, r.sameSeat(res, a)
}

// seatPolicy is the name that the seat an action filled has now: a policy
// renamed since (renamePolicyReferences) keeps its place, and token, in
// the step, while the action keeps the name it was filled under.
func seatPolicy(st Step, a Action) string {
	if i := slices.Index(st.TokenIDs, a.TokenID); a.TokenID != "" && i >= 0 && i < len(st.PolicyNames) {
		return st.PolicyNames[i]
	}
	return a.PolicyName
}

// sameSeat checks the seat and opening that the engine gives an action
// against those it recorded (the seat by its token, which a renamed policy
// keeps).
func (r *run) sameSeat(res engine.Result, a Action) error {
	if res.Token != a.TokenID || a.TokenID == "" && res.Seat != a.PolicyName {
		return fmt.Errorf("it fills seat %q, the engine gives %q", a.PolicyName, res.Seat)
	}
	if res.OnBehalfOf != a.OnBehalfOf.UserID {
		return fmt.Errorf("it acts on behalf of %q, the engine gives %q", a.OnBehalfOf.UserID, res.OnBehalfOf)
	}
	if st := res.State.Steps[a.StepID]; st == nil || st.Opening != a.Opening {
		return fmt.Errorf("it is of opening %d of its step, the engine gives another", a.Opening)
	}
	return nil
}

func stateJSON(s engine.State) string {
	b, err := json.Marshal(s)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
