package httpapi_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"wps/internal/reports"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// reportHistory is a crafted history whose figures are known exactly:
// M1 passes first time in 120 s; M2 is sent back at Close, its reworked
// Check is late, and it is approved 7300 s after creation; M3 is created
// the next day and left open past its deadline.
type reportHistory struct {
	env                *tu.Env
	processID          string
	check, close       string
	ana, sam, readOnly string
}

func newReportHistory(t *testing.T, engine sqlstore.Engine) *reportHistory {
	env := tu.NewEnv(t, engine)
	fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve", "action:reprove"}
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": fns}, 201)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Supervisor", "roles": []string{"SUPERVISOR"}, "functions": fns}, 201)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Viewer", "roles": []string{"VIEWER"}, "functions": []string{"measurement:read"}}, 201)
	h := &reportHistory{env: env}
	_, h.ana = member(t, env, "ana@example.com", "INSPECTOR")
	_, h.sam = member(t, env, "sam@example.com", "SUPERVISOR")
	_, h.readOnly = member(t, env, "vic@example.com", "VIEWER")
	proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Pump", "steps": []map[string]any{
		{"label": "Check", "policyNames": []string{"Inspector", "Supervisor"}, "deadline": "1", "deadlineType": "HOURS"},
		{"label": "Close", "policyNames": []string{"Supervisor"}}}}, 201).JSON()
	h.processID = proc["id"].(string)
	h.check, h.close = steps(proc)[0]["id"].(string), steps(proc)[1]["id"].(string)
	return h
}

func (h *reportHistory) create() string {
	return h.env.Call(post, "/v1/measurements", h.ana, map[string]any{"processId": h.processID}, 201).JSON()["id"].(string)
}

func (h *reportHistory) act(key, m, step, typ string, after time.Duration) {
	h.env.Clock.Advance(after)
	body := map[string]any{"stepId": step, "type": typ}
	if typ == "REJECTION" {
		body["observation"] = "leaks"
	}
	h.env.Call(post, "/v1/measurements/"+m+"/actions", key, body, 201)
}

func (h *reportHistory) play() {
	s := time.Second
	m1 := h.create() // 2026-01-05 09:00:00
	h.act(h.ana, m1, h.check, "APPROVAL", 30*s)
	h.act(h.sam, m1, h.check, "APPROVAL", 40*s)
	h.act(h.sam, m1, h.close, "APPROVAL", 50*s)
	m2 := h.create() // 09:02:00
	h.act(h.ana, m2, h.check, "APPROVAL", 10*s)
	h.act(h.sam, m2, h.check, "APPROVAL", 10*s)
	h.act(h.sam, m2, h.close, "REJECTION", 20*s) // Check opens again at +40 s
	h.act(h.ana, m2, h.check, "APPROVAL", 7200*s)
	h.act(h.sam, m2, h.check, "APPROVAL", 0)
	h.act(h.sam, m2, h.close, "APPROVAL", 60*s)
	now := h.env.Clock.Now()
	h.env.Clock.Advance(time.Date(2026, 1, 6, 10, 0, 0, 0, time.UTC).Sub(now))
	h.create() // due at 11:00
	h.env.Clock.Advance(2 * time.Hour)
}

func i64(v int64) *int64 { return &v }

// TestProcessReport: every figure of a crafted history, on both engines:
// counts, cycle time (p90 in its bucket), first-pass yield with a
// rejection and rework, step waits, seat fill times, overdue (ended late
// and still open), throughput by day; then the same report worked out
// from the actions directly.
func TestProcessReport(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		h := newReportHistory(t, engine)
		h.play()
		got := h.env.Call(get, "/v1/reports/processes/"+h.processID+"?from=2026-01-05&to=2026-01-06", h.env.AdminKey, nil, 200)
		var rep reports.ProcessReport
		if err := json.Unmarshal(got.Body, &rep); err != nil {
			t.Fatal(err)
		}
		mean, fpy := 3710.0, 0.5
		want := reports.ProcessReport{ProcessID: h.processID, From: "2026-01-05", To: "2026-01-06",
			Created: 3, Approved: 2, Rejected: 1, Open: 1,
			CycleTime:      reports.CycleTime{Times: reports.Times{P50: i64(120), P90: i64(7168)}, Mean: &mean},
			FirstPassYield: &fpy,
			Steps: []reports.StepFigures{
				{StepID: h.check, Label: "Check", Reached: 4, Consensed: 3, Overdue: 2, WaitTime: reports.Times{P50: i64(68), P90: i64(7168)}},
				{StepID: h.close, Label: "Close", Reached: 3, Consensed: 2, Rejections: 1, WaitTime: reports.Times{P50: i64(50), P90: i64(60)}}},
			Seats: []reports.SeatFigures{
				{StepID: h.check, PolicyName: "Inspector", FillTime: reports.Times{P50: i64(30), P90: i64(7168)}},
				{StepID: h.check, PolicyName: "Supervisor", FillTime: reports.Times{P50: i64(68), P90: i64(7168)}},
				{StepID: h.close, PolicyName: "Supervisor", FillTime: reports.Times{P50: i64(50), P90: i64(60)}}},
			Throughput: []reports.Day{{Day: "2026-01-05", Created: 2, Approved: 2}, {Day: "2026-01-06", Created: 1}},
		}
		if !reflect.DeepEqual(rep, want) {
			t.Fatalf("report\n got %s\nwant %s", got.Body, asJSON(want))
		}
		if again := recompute(t, h.env, h.processID, "2026-01-05", "2026-01-06"); !reflect.DeepEqual(again, rep) {
			t.Fatalf("from the actions\n got %s\nwant %s", asJSON(again), got.Body)
		}

		// Made before the upgrade: migration 44 works the same aggregates
		// out of the actions.
		if err := sqlstore.MigrateTo(context.Background(), h.env.URL(), 43); err != nil {
			t.Fatal(err)
		}
		up := h.env.Reopen()
		if again := up.Call(get, "/v1/reports/processes/"+h.processID+"?from=2026-01-05&to=2026-01-06", up.AdminKey, nil, 200); string(again.Body) != string(got.Body) {
			t.Fatalf("after migration 44\n got %s\nwant %s", again.Body, got.Body)
		}

		// The first day only: M3 and its lateness fall outside.
		day1 := h.env.Call(get, "/v1/reports/processes/"+h.processID+"?from=2026-01-05&to=2026-01-05", h.env.AdminKey, nil, 200).JSON()
		if day1["created"] != 2.0 || day1["steps"].([]any)[0].(map[string]any)["overdue"] != 1.0 {
			t.Fatalf("day 1: %s", asJSON(day1))
		}
	})
}

// TestProcessReportRefuses: both functions are needed, bad ranges are 422
// naming the field, an unknown process 404.
func TestProcessReportRefuses(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		h := newReportHistory(t, engine)
		path := "/v1/reports/processes/" + h.processID
		h.env.Call(get, path, h.readOnly, nil, 403) // measurement:read without process:read
		h.env.Call(post, "/v1/users/policies", h.env.AdminKey, map[string]any{"name": "Designer", "roles": []string{"DESIGNER"}, "functions": []string{"process:read"}}, 201)
		_, designer := member(t, h.env, "dee@example.com", "DESIGNER")
		h.env.Call(get, path, designer, nil, 403) // process:read without measurement:read
		for query, field := range map[string]string{
			"?from=2026-13-01":                 "from",
			"?to=yesterday":                    "to",
			"?from=2026-02-01&to=2026-01-01":   "from",
			"?from=2024-01-01&to=2026-01-01":   "to",
			"?from=2026-01-01&to=2026-01-01x1": "to",
		} {
			tu.Problem(t, h.env.Do(tu.Request{Method: get, Path: path + query, Key: h.env.AdminKey}), 422, field)
		}
		h.env.Call(get, "/v1/reports/processes/nope", h.env.AdminKey, nil, 404)
		rep := h.env.Call(get, path, h.env.AdminKey, nil, 200).JSON() // default: the 30 days to today
		if rep["from"] != "2025-12-07" || rep["to"] != "2026-01-05" || len(rep["throughput"].([]any)) != 30 {
			t.Fatalf("default range: %v to %v", rep["from"], rep["to"])
		}
	})
}

// recompute works the report out from the recorded actions alone: each
// measurement's actions replayed through the engine (its open steps'
// deadlines from its final state), summed over the range; and checks that
// the aggregates the writes kept are those the actions give.
func recompute(t *testing.T, env *tu.Env, processID, from, to string) reports.ProcessReport {
	t.Helper()
	rs := reports.New(0, env.Clock.Now)
	rg, err := rs.ParseRange(from, to)
	if err != nil {
		t.Fatal(err)
	}
	var out reports.ProcessReport
	err = env.DB.Read(context.Background(), func(tx wps.Tx) error {
		proc, err := tx.GetProcess(env.OrgID, processID, 0)
		if err != nil {
			return err
		}
		ids, err := tx.ListMeasurementIDs(env.OrgID, "", 1000)
		if err != nil {
			return err
		}
		var all, facts, days, live []reports.Fact
		var open int64
		now := env.Clock.Now()
		for _, id := range ids {
			m, mp, actions, err := tx.ReadMeasurement(env.OrgID, id)
			if err != nil {
				return err
			}
			fs, err := reports.FactsFromActions(m, mp.Steps, actions, m.CreatedAt, nil)
			if err != nil {
				return err
			}
			all = append(all, fs...)
			if m.Status != "APPROVED" {
				open++
			}
			for _, o := range wps.IndexOpenSteps(m, mp.Steps) {
				if o.DueAt != nil && reports.FactDay(o.DueAt.Time) >= rg.From && reports.FactDay(o.DueAt.Time) <= rg.To && o.DueAt.Before(now) {
					live = append(live, reports.Fact{Kind: reports.FactOverdue, StepID: o.StepID, N: 1})
				}
			}
		}
		for _, f := range all {
			if f.Level != 0 || f.Day < rg.From || f.Day > rg.To {
				continue
			}
			facts = append(facts, f)
			if f.Kind == reports.FactCreated || f.Kind == reports.FactApprovals {
				days = append(days, f)
			}
		}
		out = reports.Figures(proc, rg, append(facts, live...), days)
		out.Open = open
		// The aggregates the writes kept, key by key and level by level,
		// are the actions'.
		for k := range reports.FactLevels {
			kept, err := tx.(reports.Store).Facts(reports.Query{OrgID: env.OrgID, ProcessID: processID, Level: k, From: -100000, To: 100000})
			if err != nil {
				return err
			}
			var want []reports.Fact
			for _, f := range all {
				if f.Level == k {
					f.Day, f.Level = 0, 0
					want = append(want, f)
				}
			}
			if w, g := reports.MergeFacts(want), reports.MergeFacts(kept); !reflect.DeepEqual(w, g) {
				t.Errorf("aggregates kept by the writes at level %d\n got %v\nwant %v", k, g, w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestProcessReportConcurrentWrites: writes of one process at once (on
// PostgreSQL their aggregates go with each COMMIT) keep the aggregates the
// actions give.
func TestProcessReportConcurrentWrites(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		h := newReportHistory(t, engine)
		done := make(chan struct{})
		for range 12 {
			go func() {
				defer func() { done <- struct{}{} }()
				m := h.create()
				h.act(h.ana, m, h.check, "APPROVAL", 0)
				h.act(h.sam, m, h.check, "APPROVAL", 0)
			}()
		}
		for range 12 {
			<-done
		}
		day := h.env.Clock.Now().Format(time.DateOnly)
		rep := h.env.Call(get, "/v1/reports/processes/"+h.processID, h.env.AdminKey, nil, 200).JSON()
		if rep["created"] != 12.0 || rep["steps"].([]any)[0].(map[string]any)["consensed"] != 12.0 {
			t.Fatalf("report: %s", asJSON(rep))
		}
		recompute(t, h.env, h.processID, day, day)
	})
}
