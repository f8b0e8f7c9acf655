package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// 50 clients act on one measurement at once: every accepted action is
// recorded, no seat is filled twice, the step reaches consensus once and the
// next step opens once.
func TestConcurrentActionsOnOneMeasurement(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		const policies, perPolicy = 5, 10
		var names []string
		for i := range policies {
			name := fmt.Sprintf("Signer%d", i)
			names = append(names, name)
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": name, "roles": []string{fmt.Sprintf("SIGNER%d", i)},
				"functions": []string{"action:approve", "action:write", "measurement:read", "measurement:create"}}, 201)
		}
		var keys []string
		for i := range policies * perPolicy {
			_, key := member(t, env, fmt.Sprintf("u%d@example.com", i), fmt.Sprintf("SIGNER%d", i%policies))
			keys = append(keys, key)
		}
		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Board", "steps": []map[string]any{
			{"label": "Sign", "policyNames": names},
			{"label": "Archive", "policyNames": names[:1]},
		}}, 201).JSON()
		sign := steps(p)[0]["id"].(string)
		m := env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()
		id := m["id"].(string)

		var wg sync.WaitGroup
		statuses := make([]int, len(keys))
		for i, key := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				typ := "APPROVAL"
				if i%2 == 0 {
					typ = "WRITE_DATA"
				}
				statuses[i] = env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + id + "/actions", Key: key,
					Body: map[string]any{"stepId": sign, "type": typ}}).Status
			}()
		}
		wg.Wait()
		count := map[int]int{}
		for _, s := range statuses {
			count[s]++
		}
		if count[201] != policies || count[409] != len(keys)-policies {
			t.Fatalf("statuses %v", count)
		}
		view := env.Call(get, "/v1/measurements/"+id, env.AdminKey, nil, 200).JSON()
		actions := view["process"].(map[string]any)["actions"].([]any)
		seats := map[string]bool{}
		for _, a := range actions {
			tok := a.(map[string]any)["tokenId"].(string)
			if seats[tok] {
				t.Fatalf("seat %s filled twice", tok)
			}
			seats[tok] = true
		}
		if len(actions) != policies || view["currentStep"].(map[string]any)["label"] != "Archive" || view["status"] != "STAGE_OPEN" {
			t.Fatalf("after the race: %d actions, current %v, status %v", len(actions), view["currentStep"], view["status"])
		}
		if n := env.RawInt(`SELECT count(*) FROM events WHERE type = 'step.consensed' AND measurement_id = ?`, id); n != 1 {
			t.Fatalf("%d step.consensed events", n)
		}
		if n := env.RawInt(`SELECT count(*) FROM actions WHERE measurement_id = ?`, id); n != policies {
			t.Fatalf("%d actions stored", n)
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true || rep["actions"] != float64(policies) {
			t.Fatalf("ledger: %v", rep)
		}
	})
}

// Measurement names {code}-{n} never repeat or skip under concurrency.
func TestConcurrentMeasurementNames(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		p := checkProcess(env, "Daily check", "DC")
		const n = 50
		servers := []*tu.Env{env}
		if engine == sqlstore.Postgres { // and half of them through another replica
			servers = append(servers, env.Replica())
		}
		var wg sync.WaitGroup
		names := make([]string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := servers[i%len(servers)].Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey,
					Body: map[string]any{"processUuid": p["id"], "parameters": map[string]any{"ok": true}}})
				if res.Status != 201 {
					t.Logf("%d %s", res.Status, res.Body)
				}
				if res.Status == 201 {
					m := res.JSON()
					names[i] = m["name"].(string)
					if a := m["process"].(map[string]any)["actions"].([]any)[0].(map[string]any); a["transactionHash"] != a["ledgerHash"] {
						t.Errorf("transactionHash %v, ledgerHash %v (the client sent none)", a["transactionHash"], a["ledgerHash"])
					}
				}
			}()
		}
		wg.Wait()
		sort.Slice(names, func(i, j int) bool {
			return len(names[i]) < len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
		})
		for i, name := range names {
			if name != fmt.Sprintf("DC-%d", i+1) {
				t.Fatalf("names: %v", names)
			}
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true || rep["actions"] != float64(n) {
			t.Fatalf("ledger: %v", rep)
		}
	})
}

// A write that queued ledger entries and then failed leaves nothing
// behind: neither its action nor its entries.
func TestLedgerAfterAFailedWrite(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		p := checkProcess(env, "Check", "C")
		create := func() map[string]any {
			return env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"], "parameters": map[string]any{"ok": true}}, 201).JSON()
		}
		m := create()
		boom := errors.New("boom")
		err := env.DB.Write(context.Background(), func(tx wps.Tx) error {
			a := wps.Action{ID: wps.NewID(), OrgID: env.OrgID, MeasurementID: m["id"].(string), StepID: "x", Type: "WRITE_DATA",
				UserID: "u", Username: "u", CreatedAt: wps.At(env.Clock.Now())}
			if err := tx.InsertActions([]wps.Action{a}); err != nil {
				return err
			}
			if _, err := wps.AppendLeaf(tx, wps.Leaf{Kind: wps.LeafDocument, OrgID: env.OrgID, MeasurementID: a.MeasurementID,
				SubjectID: "d", SHA256: strings.Repeat("ab", 32), At: a.CreatedAt}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("write: %v", err)
		}
		create()
		integrate(t, env)
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true || rep["actions"] != float64(2) || rep["checked"] != float64(2+auditTotal(env)) {
			t.Fatalf("ledger: %v", rep)
		}
	})
}

// An action whose transaction waits for the measurement's lock works with
// the actions that the lock's holder committed: its formula adds the value
// the holder wrote, not the one before.
func TestActionAfterWaitingForTheMeasurement(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Auditors", "roles": []string{"AUDITOR"}}, 201)
		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Sum", "steps": []map[string]any{
			{"label": "Count", "policyNames": []string{"Admins", "Auditors"}, "parameters": []map[string]any{
				{"name": "a", "type": "NUMBER"}, {"name": "b", "type": "NUMBER"},
				{"name": "total", "type": "FORMULA", "computedFormula": []string{"a", "+", "b"}}}},
		}}, 201).JSON()
		step := steps(p)[0]
		paramA := step["parameters"].([]any)[0].(map[string]any)["id"].(string)
		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"],
			"parameters": map[string]any{"a": 1, "b": 1}}, 201).JSON()
		id := m["id"].(string)

		// Another writer holds the measurement, has written a = 5 and has
		// not committed yet.
		holding, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			held <- env.DB.Write(context.Background(), func(tx wps.Tx) error {
				m, _, actions, err := tx.ReadMeasurement(env.OrgID, id)
				if err != nil {
					return err
				}
				a := actions[0]
				a.ID, a.Data, a.CreatedAt, a.TransactionHash = wps.NewID(), map[string]any{paramA: 5.0}, wps.At(env.Clock.Now()), ""
				if err := tx.InsertActions([]wps.Action{a}); err != nil {
					return err
				}
				m.ActionCount++
				if err := tx.UpdateMeasurement(m, m.Status); err != nil {
					return err
				}
				close(holding)
				<-release
				return nil
			})
		}()
		<-holding
		answer := make(chan *tu.Response, 1)
		go func() {
			answer <- env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + id + "/actions", Key: env.AdminKey,
				Body: map[string]any{"stepId": step["id"], "type": "WRITE_DATA", "parameters": map[string]any{"b": 2}, "observation": "b recounted"}})
		}()
		waitForALockWait(t, env)
		close(release)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		res := <-answer
		if res.Status != 201 {
			t.Fatalf("action: %d %s", res.Status, res.Body)
		}
		got := map[string]string{}
		for _, d := range res.JSON()["data"].([]any) {
			item := d.(map[string]any)["dataItems"].([]any)[0].(map[string]any)
			got[item["label"].(string)] = item["value"].(string)
		}
		if got["b"] != "2" || got["total"] != "7" {
			t.Fatalf("the waiting action's data: %v, want b 2 and total 7 (a 5 from the writer it waited for)", got)
		}
	})
}

// waitForALockWait returns once a PostgreSQL session waits for a lock (on
// SQLite, where the writer queue cannot be watched, after a moment).
func waitForALockWait(t *testing.T, env *tu.Env) {
	t.Helper()
	if env.Engine == sqlstore.SQLite {
		time.Sleep(100 * time.Millisecond)
		return
	}
	tu.Await(t, "a session waiting for the measurement's lock", func() error {
		// The statement's start: pg_stat_activity keeps its first 1 KB.
		if env.RawInt(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT m.id, m.org_id%'`) == 0 {
			return errors.New("no session waits for a lock")
		}
		return nil
	})
}

// checkProcess creates the Admins policy and a one-step process (a BOOLEAN
// "ok") that its admins act on.
func checkProcess(env *tu.Env, name, code string) map[string]any {
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
	return env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": name, "code": code, "steps": []map[string]any{
		{"label": "Check", "policyNames": []string{"Admins"}, "parameters": []map[string]any{{"name": "ok", "type": "BOOLEAN"}}},
	}}, 201).JSON()
}

// Creations and changes of status of one process at once: on PostgreSQL
// their statements lock the status counters and the ledger head in one
// order, so none deadlocks (a deadlock is retried, so only the count of
// retries shows it), and the ledger stays one chain.
func TestCreatesAndChangesTogether(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		p := checkProcess(env, "Check", "C")
		step := steps(p)[0]["id"].(string)
		const n = 60
		ids := make([]string, n)
		for i := range ids {
			ids[i] = env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()["id"].(string)
		}
		var wg sync.WaitGroup
		statuses := make([]int, 2*n)
		for i := range 2 * n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey,
					Body: map[string]any{"processUuid": p["id"], "parameters": map[string]any{"ok": true}}}
				if i%2 == 1 {
					req.Path, req.Body = "/v1/measurements/"+ids[i/2]+"/actions", map[string]any{"stepId": step, "type": "APPROVAL"}
				}
				statuses[i] = env.Do(req).Status
			}()
		}
		wg.Wait()
		for i, s := range statuses {
			if s != 201 {
				t.Fatalf("request %d: %d", i, s)
			}
		}
		if r := env.DB.Retries(); r != 0 {
			t.Errorf("%d writes were retried (deadlocks)", r)
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true || rep["actions"] != float64(2*n) {
			t.Fatalf("ledger: %v", rep)
		}
	})
}
