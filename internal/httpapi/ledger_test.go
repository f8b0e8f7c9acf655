package httpapi_test

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"wps/internal/ledger"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// integrate runs one pass of the ledger's integrator of env's replica.
func integrate(t *testing.T, env *tu.Env) int {
	t.Helper()
	n, err := ledger.New(env.Service, ledger.Config{CheckpointEvery: time.Nanosecond}).RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// auditTotal is the number of the org's audit events (each a leaf of its
// ledger besides the actions).
func auditTotal(env *tu.Env) int {
	return int(env.Call(get, "/v1/audit-events?perPage=1", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"].(float64))
}

func verify(env *tu.Env) map[string]any {
	return env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON()
}

// pumpHistory runs the end-to-end test's history without its checks:
// routing, a parallel join, a rejection, a reproval, rework and approval.
// It returns the APPROVED measurement, the one left OPEN, the action the
// rejection superseded, the action reproved and the last approval.
func pumpHistory(t *testing.T, s *service) (approved, open, superseded, reproved, last string) {
	t.Helper()
	env := s.env
	open = env.Call(post, "/v1/measurements", s.ian, map[string]any{"processId": s.process["id"]}, 201).JSON()["id"].(string)
	m := env.Call(post, "/v1/measurements/simplified", s.ian, map[string]any{
		"processLabel": "Pump service", "parameters": map[string]any{"Kind": "repair", "hours": 1.5, "rate": 0.2}}, 201).JSON()
	approved = m["id"].(string)
	s.act(t, s.sam, approved, s.inspect, "APPROVAL", nil, "STAGE_OPEN")
	superseded = s.act(t, s.ian, approved, s.repair, "WRITE_DATA", map[string]any{"notes": "seal replaced"}, "CONSENSUS")["id"].(string)
	s.act(t, s.sam, approved, s.photos, "APPROVAL", nil, "STAGE_OPEN")
	s.act(t, s.sam, approved, s.close, "REJECTION", nil, "REPROVED")
	reproved = s.act(t, s.ian, approved, s.repair, "WRITE_DATA", map[string]any{"notes": "seal replaced again"}, "STAGE_OPEN")["id"].(string)
	env.Call(post, "/v1/actions/"+reproved+"/reprove", s.sam, map[string]any{"observation": "no photo of the new seal"}, 201)
	s.act(t, s.ian, approved, s.repair, "WRITE_DATA", map[string]any{"notes": "seal replaced, photo attached"}, "STAGE_OPEN")
	last = s.act(t, s.sam, approved, s.close, "APPROVAL", nil, "APPROVED")["id"].(string)
	return approved, open, superseded, reproved, last
}

// tree is what a tamperer with the database reads of an org's log.
type tree struct {
	log    wps.LedgerLog
	leaves []wps.LedgerLeaf
	signer note.Signer
}

func readTree(t *testing.T, env *tu.Env) tree {
	t.Helper()
	var tr tree
	err := env.DB.Read(context.Background(), func(tx wps.Tx) error {
		var err error
		if tr.log, err = tx.GetLedgerLog(env.OrgID); err != nil {
			return err
		}
		if tr.leaves, err = tx.ListLedgerLeaves(env.OrgID, 0, 100000); err != nil {
			return err
		}
		k, err := tx.GetLedgerKey()
		if err != nil {
			return err
		}
		tr.signer, err = note.NewSigner(k.Signer)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// rewrite stores the tree of the leaf hashes given as the org's (its
// tiles and root), as someone who edits the database would, and
// returns its root; with sign, it also signs a checkpoint of it with the
// installation's key, taken from the database.
func (tr tree) rewrite(t *testing.T, env *tu.Env, hashes []tlog.Hash, sign bool) tlog.Hash {
	t.Helper()
	stored := map[int64]tlog.Hash{}
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for n, h := range hashes {
		hs, err := tlog.StoredHashesForRecordHash(int64(n), h, r)
		if err != nil {
			t.Fatal(err)
		}
		for j, x := range hs {
			stored[tlog.StoredHashIndex(0, int64(n))+int64(j)] = x
		}
	}
	env.RawExec(`DELETE FROM ledger_tiles WHERE org_id = ?`, env.OrgID)
	for _, tile := range tlog.NewTiles(wps.TileHeight, 0, int64(len(hashes))) {
		data, err := tlog.ReadTileData(tile, r)
		if err != nil {
			t.Fatal(err)
		}
		env.RawExec(`INSERT INTO ledger_tiles (org_id, level, n, width, data) VALUES (?, ?, ?, ?, ?)`, env.OrgID, tile.L, tile.N, tile.W, data)
	}
	size := int64(len(hashes))
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		t.Fatal(err)
	}
	env.RawExec(`UPDATE ledger_logs SET size = ?, root = ? WHERE org_id = ?`, size, root.String(), env.OrgID)
	if sign {
		msg, err := note.Sign(&note.Note{Text: fmt.Sprintf("wps/%s\n%d\n%s\n", env.OrgID, size, root)}, tr.signer)
		if err != nil {
			t.Fatal(err)
		}
		env.RawExec(`UPDATE ledger_logs SET checkpoint_size = ?, checkpoint = ? WHERE org_id = ?`, size, string(msg), env.OrgID)
	}
	return root
}

func (tr tree) hashes() []tlog.Hash {
	out := make([]tlog.Hash, len(tr.leaves))
	for i, l := range tr.leaves {
		out[i] = l.LeafHash
	}
	return out
}

// Each tampering with the database that the hash chain missed is reported:
// on SQLite by SQL on the database file, on PostgreSQL by SQL as the
// database's owner.
func TestLedgerDetectsTampering(t *testing.T) {
	type ids struct{ approved, open, superseded, reproved, last string }
	cases := []struct {
		name   string
		tamper func(t *testing.T, env *tu.Env, m ids)
		want   string // in a problem's reason
	}{
		{"the last action deleted and the log moved back, re-signed with the key", func(t *testing.T, env *tu.Env, m ids) {
			tr := readTree(t, env)
			if lastLeaf := tr.leaves[len(tr.leaves)-1]; lastLeaf.ID != m.last {
				t.Fatalf("the last leaf is %s %s, not the last approval", lastLeaf.Kind, lastLeaf.ID)
			}
			env.RawExec(`DELETE FROM actions WHERE id = ?`, m.last)
			env.RawExec(`DELETE FROM ledger_leaves WHERE id = ?`, m.last)
			env.RawExec(`UPDATE measurements SET action_count = action_count - 1 WHERE id = ?`, m.approved)
			tr.rewrite(t, env, tr.hashes()[:len(tr.leaves)-1], true)
		}, "is not what its entries give"},
		{"every action and the log deleted", func(t *testing.T, env *tu.Env, m ids) {
			for _, table := range []string{"ledger_pending", "ledger_leaves", "ledger_tiles", "ledger_logs", "actions"} {
				env.RawExec(`DELETE FROM ` + table)
			}
			env.RawExec(`UPDATE measurements SET action_count = 0`)
		}, "no creation entry"},
		{"an action's superseded flag flipped", func(t *testing.T, env *tu.Env, m ids) {
			env.RawExec(`UPDATE actions SET superseded = NOT superseded WHERE id = ?`, m.superseded)
		}, "superseded flag"},
		{"an action's reproved flag flipped", func(t *testing.T, env *tu.Env, m ids) {
			env.RawExec(`UPDATE actions SET reproved = NOT reproved WHERE id = ?`, m.reproved)
		}, "reproved flag"},
		{"a measurement's status and state forged", func(t *testing.T, env *tu.Env, m ids) {
			env.RawExec(`UPDATE measurements SET status = 'APPROVED', state = (SELECT state FROM measurements WHERE id = ?) WHERE id = ?`, m.approved, m.open)
		}, "stored status"},
		{"a measurement's creator forged", func(t *testing.T, env *tu.Env, m ids) {
			env.RawExec(`UPDATE measurements SET created_by = (SELECT id FROM users WHERE email = 'sam@example.com') WHERE id = ?`, m.approved)
		}, "creation entry does not match"},
		{"a stored hash edited", func(t *testing.T, env *tu.Env, m ids) {
			var data []byte
			err := env.DB.Read(context.Background(), func(tx wps.Tx) error {
				got, err := tx.ReadLedgerTiles(env.OrgID, []tlog.Tile{{H: wps.TileHeight, L: 0, N: 0, W: 1}})
				data = got[0]
				return err
			})
			if err != nil || len(data) < 64 {
				t.Fatalf("tile: %d bytes, %v", len(data), err)
			}
			data[40] ^= 1
			env.RawExec(`UPDATE ledger_tiles SET data = ? WHERE org_id = ? AND level = 0 AND n = 0`, data, env.OrgID)
		}, "stored tiles"},
		{"a row edited and every hash recomputed", func(t *testing.T, env *tu.Env, m ids) {
			tr := readTree(t, env)
			var a wps.Action
			if err := env.DB.Read(context.Background(), func(tx wps.Tx) (err error) { a, err = tx.GetAction(env.OrgID, m.reproved); return err }); err != nil {
				t.Fatal(err)
			}
			a.Observation = "all good"
			h := tlog.RecordHash(wps.ActionLeaf(a, wps.LeafAction, nil))
			env.RawExec(`UPDATE actions SET observation = ?, leaf_hash = ?, ledger_hash = ?, transaction_hash = ? WHERE id = ?`,
				a.Observation, h.String(), hex.EncodeToString(h[:]), hex.EncodeToString(h[:]), a.ID)
			env.RawExec(`UPDATE ledger_leaves SET leaf_hash = ? WHERE id = ?`, h.String(), a.ID)
			hashes := tr.hashes()
			for i, l := range tr.leaves {
				if l.ID == a.ID {
					hashes[i] = h
				}
			}
			tr.rewrite(t, env, hashes, false)
		}, "signed checkpoint"},
	}
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				env := tu.NewEnv(t, engine)
				s := newService(t, env)
				var m ids
				m.approved, m.open, m.superseded, m.reproved, m.last = pumpHistory(t, s)
				integrate(t, env)
				if rep := verify(env); rep["ok"] != true || rep["actions"] != 9.0 || rep["measurements"] != 2.0 || rep["pending"] != 0.0 {
					t.Fatalf("before: %v", rep)
				}
				c.tamper(t, env, m)
				rep := verify(env)
				if rep["ok"] != false {
					t.Fatalf("not detected: %v", rep)
				}
				var reasons []string
				for _, p := range rep["problems"].([]any) {
					reasons = append(reasons, p.(map[string]any)["reason"].(string))
				}
				if !strings.Contains(strings.Join(reasons, "\n"), c.want) {
					t.Fatalf("problems do not say %q:\n%s", c.want, strings.Join(reasons, "\n"))
				}
			})
		}
	})
}

// An action's answer carries its leaf hash at once; its proof follows
// integration, signed with the key served, and checks offline.
func TestLedgerProofs(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		s := newService(t, env)
		approved, _, _, reproved, _ := pumpHistory(t, s)
		integrate(t, env)

		key := env.Call(get, "/v1/ledger/key", env.AdminKey, nil, 200)
		v, err := ledger.ParseKey(key.Body)
		if err != nil || key.JSON()["origin"] != "wps/"+env.OrgID {
			t.Fatalf("key %s: %v", key.Body, err)
		}
		cp := env.Call(get, "/v1/ledger/checkpoint", env.AdminKey, nil, 200)
		c, err := wps.OpenCheckpoint([]byte(cp.JSON()["checkpoint"].(string)), v, "wps/"+env.OrgID)
		if err != nil || c.Size != int64(cp.JSON()["treeSize"].(float64)) || c.Root.String() != cp.JSON()["rootHash"] {
			t.Fatalf("checkpoint %s: %v", cp.Body, err)
		}

		// Every action of the measurement, old chained links included.
		for _, x := range env.Call(get, "/v1/measurements/"+approved, env.AdminKey, nil, 200).JSON()["process"].(map[string]any)["actions"].([]any) {
			id := x.(map[string]any)["id"].(string)
			action := env.Call(get, "/v1/actions/"+id, env.AdminKey, nil, 200)
			proof := env.Call(get, "/v1/actions/"+id+"/proof", env.AdminKey, nil, 200)
			in, err := ledger.VerifyInclusion(key.Body, cp.Body, proof.Body, action.Body)
			if err != nil || in.ActionID != id || in.TreeSize != c.Size {
				t.Fatalf("action %s: %v %+v\n%s", id, err, in, proof.Body)
			}
		}

		// A new action: its leaf hash at once, its proof once integrated.
		a := s.act(t, s.ian, s.create(t), s.inspect, "WRITE_DATA", map[string]any{"Kind": "scrap"}, "IN_CONSENSUS")
		h, err := tlog.ParseHash(a["leafHash"].(string))
		if err != nil || a["ledgerHash"] != hex.EncodeToString(h[:]) {
			t.Fatalf("leafHash %v, ledgerHash %v: %v", a["leafHash"], a["ledgerHash"], err)
		}
		id := a["id"].(string)
		res := env.Do(tu.Request{Method: get, Path: "/v1/actions/" + id + "/proof", Key: env.AdminKey})
		tu.Problem(t, res, 409, "")
		if res.Header.Get("Retry-After") != "1" {
			t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
		}
		env.Clock.Advance(time.Second)
		integrate(t, env)
		proof := env.Call(get, "/v1/actions/"+id+"/proof", env.AdminKey, nil, 200).JSON()
		if proof["leafHash"] != a["leafHash"] || proof["treeSize"].(float64) <= float64(c.Size) {
			t.Fatalf("proof %v", proof)
		}

		// The values' hash in a leaf is salted per action: the same values
		// hash apart, so a proof cannot be tested against guesses.
		twin := s.act(t, s.ian, s.create(t), s.inspect, "WRITE_DATA", map[string]any{"Kind": "scrap"}, "IN_CONSENSUS")["id"].(string)
		env.Clock.Advance(time.Second)
		integrate(t, env)
		dataHash := func(id string) string {
			leaf, _ := base64.StdEncoding.DecodeString(env.Call(get, "/v1/actions/"+id+"/proof", env.AdminKey, nil, 200).JSON()["leaf"].(string))
			var l map[string]any
			_ = json.Unmarshal(leaf, &l)
			return fmt.Sprint(l["dataHash"])
		}
		if a, b := dataHash(id), dataHash(twin); a == b || len(a) != 64 {
			t.Fatalf("two actions of the same values have dataHash %s and %s", a, b)
		}

		// Against the earlier checkpoint an old action's proof still
		// checks; the new one is not in it.
		old := env.Call(get, "/v1/actions/"+reproved+"/proof?treeSize="+strconv.FormatInt(c.Size, 10), env.AdminKey, nil, 200)
		if _, err := ledger.VerifyInclusion(key.Body, cp.Body, old.Body, env.Call(get, "/v1/actions/"+reproved, env.AdminKey, nil, 200).Body); err != nil {
			t.Fatal(err)
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/actions/" + id + "/proof?treeSize=" + strconv.FormatInt(c.Size, 10), Key: env.AdminKey}), 422, "treeSize")

		// A changed action, another key or another checkpoint fail.
		action := env.Call(get, "/v1/actions/"+reproved, env.AdminKey, nil, 200).Body
		forged := []byte(strings.Replace(string(action), `"observation":""`, `"observation":"fine"`, 1))
		if _, err := ledger.VerifyInclusion(key.Body, cp.Body, old.Body, forged); err == nil || string(forged) == string(action) {
			t.Fatalf("a changed action verified (%v)", err)
		}
		_, other, _ := note.GenerateKey(nil, "wps")
		if _, err := ledger.VerifyInclusion([]byte(other), cp.Body, old.Body, action); err == nil {
			t.Fatal("verified with another key")
		}
		latest := env.Call(get, "/v1/ledger/checkpoint", env.AdminKey, nil, 200).Body
		if _, err := ledger.VerifyInclusion(key.Body, latest, old.Body, action); err == nil || !strings.Contains(err.Error(), "treeSize") {
			t.Fatalf("a proof for another tree size: %v", err)
		}

		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/ledger/consistency?from=0&to=1", Key: env.AdminKey}), 422, "")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/ledger/consistency?from=2&to=100000", Key: env.AdminKey}), 422, "to")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/actions/nope/proof", Key: env.AdminKey}), 404, "")
		for _, path := range []string{"/v1/ledger/key", "/v1/ledger/checkpoint", "/v1/ledger/consistency?from=1&to=1", "/v1/actions/" + id + "/proof"} {
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: path, Key: s.ian}), 403, "")
		}
	})
}

// create makes a measurement of the pump process without data.
func (s *service) create(t *testing.T) string {
	t.Helper()
	return s.env.Call(post, "/v1/measurements", s.ian, map[string]any{"processId": s.process["id"]}, 201).JSON()["id"].(string)
}

// 1,000 appends in batches: every checkpoint the monitor sees contains the
// ones before it (a consistency proof between each pair); a history
// rewritten with the installation's key fails the monitor.
func TestLedgerConsistencyAcrossAThousandAppends(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		mid := checkMeasurement(t, env)
		appendLeaves := func(n int) {
			err := env.DB.Write(context.Background(), func(tx wps.Tx) error {
				for i := range n {
					sum := fmt.Sprintf("%064x", i)
					if _, err := wps.AppendLeaf(tx, wps.Leaf{Kind: wps.LeafDocument, OrgID: env.OrgID, MeasurementID: mid,
						SubjectID: wps.NewID(), SHA256: sum, At: wps.At(env.Clock.Now())}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		v, err := ledger.ParseKey(env.Call(get, "/v1/ledger/key", env.AdminKey, nil, 200).Body)
		if err != nil {
			t.Fatal(err)
		}
		mon := &ledger.Monitor{URL: env.Server.URL, APIKey: env.AdminKey, Verifier: v}
		integrator := ledger.New(env.Service, ledger.Config{CheckpointEvery: time.Second})
		var seen []wps.Checkpoint
		for range 10 {
			appendLeaves(100)
			env.Clock.Advance(time.Second)
			if _, err := integrator.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			c, err := mon.Check(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, c)
		}
		if last := seen[len(seen)-1]; last.Size != int64(1001+auditTotal(env)) { // and the measurement's creation, and the audit events
			t.Fatalf("tree size %d", last.Size)
		}
		for i, a := range seen {
			for _, b := range seen[i+1:] {
				p := env.Call(get, fmt.Sprintf("/v1/ledger/consistency?from=%d&to=%d", a.Size, b.Size), env.AdminKey, nil, 200).JSON()
				var proof tlog.TreeProof
				for _, s := range p["proof"].([]any) {
					h, _ := tlog.ParseHash(s.(string))
					proof = append(proof, h)
				}
				if err := tlog.CheckTree(proof, b.Size, b.Root, a.Size, a.Root); err != nil {
					t.Fatalf("%d → %d: %v", a.Size, b.Size, err)
				}
			}
		}
		if rep := verify(env); rep["ok"] != true || rep["checked"] != float64(1001+auditTotal(env)) || rep["treeSize"] != float64(1001+auditTotal(env)) {
			t.Fatalf("verify: %v", rep)
		}

		// Someone with the database and its key rewrites a leaf and signs
		// the rewritten tree: the server's own check cannot tell, the
		// monitor that saw the tree before can.
		tr := readTree(t, env)
		doc := tr.leaves[500]
		payload := strings.Replace(string(doc.Payload), `"kind":"document"`, `"kind":"document","forged":true`, 1)
		h := tlog.RecordHash([]byte(payload))
		env.RawExec(`UPDATE ledger_leaves SET payload = ?, leaf_hash = ? WHERE org_id = ? AND leaf_index = 500`, payload, h.String(), env.OrgID)
		hashes := tr.hashes()
		hashes[500] = h
		tr.rewrite(t, env, hashes, true)
		if rep := verify(env); rep["ok"] != true {
			t.Logf("the server's check (expected to pass: the key signed the rewrite): %v", rep)
		}
		if _, err := mon.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "two roots") {
			t.Fatalf("monitor: %v", err)
		}
		appendLeaves(10)
		env.Clock.Advance(time.Second)
		if _, err := integrator.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := mon.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "does not contain") {
			t.Fatalf("monitor after growth: %v", err)
		}
	})
}

// checkMeasurement makes a measurement of a one-step process.
func checkMeasurement(t *testing.T, env *tu.Env) string {
	t.Helper()
	p := checkProcess(env, "Check", "C")
	return env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()["id"].(string)
}

// Two replicas on one PostgreSQL append to one org and both integrate:
// one log, no fork; one integrator at a time, and a killed one's place is
// taken at the next pass.
func TestLedgerTwoReplicas(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.Postgres)
	other := env.Replica()
	p := checkProcess(env, "Check", "C")
	v, err := ledger.ParseKey(env.Call(get, "/v1/ledger/key", env.AdminKey, nil, 200).Body)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := env.Call(get, "/v1/ledger/key", env.AdminKey, nil, 200).Body, other.Call(get, "/v1/ledger/key", env.AdminKey, nil, 200).Body; string(a) != string(b) {
		t.Fatalf("the replicas have different keys: %s, %s", a, b)
	}
	replicas := []*tu.Env{env, other}
	create := func(n int) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replicas[i%2].Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"], "parameters": map[string]any{"ok": true}}, 201)
			}()
		}
		wg.Wait()
	}

	// Both integrate while both take writes; a monitor reads each in turn.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, r := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := ledger.New(r.Service, ledger.Config{Batch: 7, CheckpointEvery: time.Nanosecond})
			for {
				r.Clock.Advance(time.Millisecond)
				if _, err := in.RunOnce(context.Background()); err != nil {
					errs <- err
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
	}
	mon := &ledger.Monitor{URL: env.Server.URL, APIKey: env.AdminKey, Verifier: v}
	for i := range 6 {
		create(10)
		mon.URL = replicas[i%2].Server.URL
		if _, err := mon.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	integrate(t, env)
	if rep := verify(env); rep["ok"] != true || rep["actions"] != 60.0 || rep["treeSize"] != float64(60+auditTotal(env)) || rep["pending"] != 0.0 {
		t.Fatalf("verify: %v", rep)
	}

	// A replica's integrator holds the org's log and dies mid-pass: the
	// other integrates nothing while it holds it, then takes over.
	create(5)
	holder, err := sql.Open("pgx", env.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := conn.QueryRowContext(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `SELECT size FROM ledger_logs WHERE org_id = $1 FOR UPDATE`, env.OrgID); err != nil {
		t.Fatal(err)
	}
	if n := integrate(t, other); n != 0 {
		t.Fatalf("integrated %d entries while another integrator held the log", n)
	}
	if rep := verify(env); rep["pending"] != 5.0 {
		t.Fatalf("pending %v", rep["pending"])
	}
	env.RawExec(`SELECT pg_terminate_backend(?)`, pid)
	_ = conn.Close()
	n := 0
	tu.Await(t, "a pass once PostgreSQL has ended the holder's session", func() error {
		if n = integrate(t, other); n == 0 {
			return errors.New("nothing integrated")
		}
		return nil
	})
	if n != 5 {
		t.Fatalf("after the holder died: %d integrated", n)
	}
	mon.URL = other.Server.URL
	if _, err := mon.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rep := verify(env); rep["ok"] != true || rep["treeSize"] != float64(65+auditTotal(env)) {
		t.Fatalf("verify: %v", rep)
	}
}

// A database of the release before the log, whose actions were links of
// one hash chain per org: the migration makes them the first leaves of the
// org's log, in the chain's order, and their ledgerHash and
// transactionHash stay what they were, proven in the log.
func TestLedgerFromTheHashChain(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		s := newService(t, env)
		approved, _, _, reproved, _ := pumpHistory(t, s)

		// What the release before wrote: the actions numbered 1, 2, ... in
		// the org and linked in a chain.
		var actions []wps.Action
		err := env.DB.Read(context.Background(), func(tx wps.Tx) error {
			ids, err := tx.ListMeasurementIDs(env.OrgID, "", 100)
			for _, id := range ids {
				list, err := tx.ListActions(env.OrgID, id)
				if err != nil {
					return err
				}
				actions = append(actions, list...)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(actions, func(a, b wps.Action) int { return cmp.Compare(a.Seq, b.Seq) })
		env.RawExec(`UPDATE actions SET seq = -seq`)
		chain := map[string]string{}
		prev := ""
		for i, a := range actions {
			a.Seq = int64(i + 1)
			h := wps.LedgerHash(prev, a, "")
			env.RawExec(`UPDATE actions SET seq = ?, prev_hash = ?, ledger_hash = ?, transaction_hash = ? WHERE id = ?`, a.Seq, prev, h, h, a.ID)
			chain[a.ID], prev = h, h
		}
		if err := sqlstore.MigrateTo(context.Background(), env.URL(), 21); err != nil {
			t.Fatal(err)
		}
		if n := env.RawInt(`SELECT count(*) FROM ledger_heads WHERE hash = ?`, prev); n != 1 {
			t.Fatalf("the release before: %d heads at the chain's end", n)
		}

		up := env.Reopen()
		integrate(t, up)
		if rep := verify(up); rep["ok"] != true || rep["actions"] != 9.0 || rep["measurements"] != 2.0 || rep["pending"] != 0.0 {
			t.Fatalf("after the migration: %v", rep)
		}
		leaves := readTree(t, up).leaves
		order := []string{}
		for _, l := range leaves {
			if l.Kind == wps.LeafChainedAction {
				order = append(order, l.ID)
			}
		}
		for i, a := range actions {
			if order[i] != a.ID {
				t.Fatalf("leaf order %v, chain order %v", order, actions)
			}
		}
		for _, x := range up.Call(get, "/v1/measurements/"+approved, env.AdminKey, nil, 200).JSON()["process"].(map[string]any)["actions"].([]any) {
			a := x.(map[string]any)
			if a["ledgerHash"] != chain[a["id"].(string)] || a["transactionHash"] != a["ledgerHash"] || a["leafHash"] == "" {
				t.Fatalf("an action of the chain after the migration: %v", a)
			}
		}
		key := up.Call(get, "/v1/ledger/key", env.AdminKey, nil, 200).Body
		cp := up.Call(get, "/v1/ledger/checkpoint", env.AdminKey, nil, 200).Body
		proof := up.Call(get, "/v1/actions/"+reproved+"/proof", env.AdminKey, nil, 200).Body
		if _, err := ledger.VerifyInclusion(key, cp, proof, up.Call(get, "/v1/actions/"+reproved, env.AdminKey, nil, 200).Body); err != nil {
			t.Fatalf("a chained action's proof: %v", err)
		}

		// The log goes on after them.
		su := *s
		su.env = up
		id := su.create(t)
		su.act(t, s.ian, id, s.inspect, "WRITE_DATA", map[string]any{"Kind": "scrap"}, "IN_CONSENSUS")
		integrate(t, up)
		if rep := verify(up); rep["ok"] != true || rep["actions"] != 10.0 || rep["measurements"] != 3.0 {
			t.Fatalf("after a new action: %v", rep)
		}
	})
}

// The scheduler's measurements replay too: those made when due, the one
// made PENDING ahead of its occurrence (from that instant), and its
// opening by the scheduler, an entry of its own.
func TestLedgerReplaysScheduledMeasurements(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine) // the clock reads 2026-01-05T09:00Z
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Daily round", "code": "DR", "steps": []map[string]any{
			{"label": "Walk", "policyNames": []string{"Admins"}, "frequency": "DAILY", "frequencyDate": "2026-01-04T12:00:00Z"},
		}}, 201).JSON()
		if n, err := env.Service.RunRecurrences(context.Background()); err != nil || n != 2 {
			t.Fatalf("recurrences: %d %v", n, err)
		}
		env.Clock.Advance(4 * time.Hour) // the PENDING one's occurrence comes
		if _, err := env.Service.RunRecurrences(context.Background()); err != nil {
			t.Fatal(err)
		}
		list := env.Call(get, "/v1/measurements?processId="+p["id"].(string), env.AdminKey, nil, 200).JSON()["data"].([]any)
		var names []string
		for _, m := range list {
			names = append(names, fmt.Sprint(m.(map[string]any)["name"], ":", m.(map[string]any)["status"]))
		}
		if fmt.Sprint(names) != "[DR-3:PENDING DR-2:OPEN DR-1:OPEN]" { // DR-2 was PENDING, DR-3 is the next
			t.Fatalf("measurements: %v", names)
		}
		id := list[1].(map[string]any)["id"].(string)
		env.Call(post, "/v1/measurements/"+id+"/actions", env.AdminKey, map[string]any{"stepId": steps(p)[0]["id"], "type": "APPROVAL"}, 201)
		integrate(t, env)
		rep := verify(env)
		if rep["ok"] != true || rep["measurements"] != float64(len(list)) {
			t.Fatalf("verify: %v", rep)
		}
		var opened int
		for _, l := range readTree(t, env).leaves {
			if l.Kind == wps.LeafOpened {
				opened++
			}
		}
		if opened != 1 {
			t.Fatalf("%d opened entries", opened)
		}
	})
}
