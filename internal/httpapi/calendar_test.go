package httpapi_test

import (
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestBusinessCalendar: the org's calendar, checked field by field, and
// business deadlines counted over the calendar in force when a step opened.
func TestBusinessCalendar(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		const path = "/v1/organizations/calendar"
		c := env.Call(get, path, env.AdminKey, nil, 200).JSON()
		if c["timeZone"] != "UTC" || len(c["workingHours"].(map[string]any)) != 7 {
			t.Fatalf("default calendar: %v", c)
		}
		for field, body := range map[string]map[string]any{
			"timeZone":            {"timeZone": "Mars/Olympus"},
			"workingHours.mon[0]": {"timeZone": "UTC", "workingHours": map[string]any{"mon": []string{"25:00-26:00"}}},
			"workingHours.mon":    {"timeZone": "UTC", "workingHours": map[string]any{"mon": []string{"08:00-12:00", "11:00-13:00"}}},
			"workingHours.monday": {"timeZone": "UTC", "workingHours": map[string]any{"monday": []string{"08:00-12:00"}}},
			"holidays[0]":         {"timeZone": "UTC", "holidays": []string{"2026-02-30"}},
		} {
			tu.Problem(t, env.Do(tu.Request{Method: "PUT", Path: path, Key: env.AdminKey, Body: body}), 422, field)
		}
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Workers", "roles": []string{"WORKER"},
			"functions": []string{"measurement:create", "measurement:read", "action:write"}}, 201)
		_, worker := member(t, env, "wes@example.com", "WORKER")
		tu.Problem(t, env.Do(tu.Request{Method: "PUT", Path: path, Key: worker, Body: map[string]any{"timeZone": "UTC"}}), 403, "")
		if c := env.Call(get, path, worker, nil, 200).JSON(); c["timeZone"] != "UTC" {
			t.Fatalf("a refused calendar was stored: %v", c)
		}

		day := []string{"08:00-12:00", "13:00-17:00"}
		office := map[string]any{"timeZone": "Europe/Berlin", "holidays": []string{"2026-01-13"},
			"workingHours": map[string]any{"mon": day, "tue": day, "wed": day, "thu": day, "fri": day}}
		if got := env.Call("PUT", path, env.AdminKey, office, 200).JSON(); got["timeZone"] != "Europe/Berlin" {
			t.Fatalf("put: %v", got)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "steps": []map[string]any{
			{"label": "S", "policyNames": []string{"Workers"}, "deadline": "soon", "deadlineType": "BUSINESS_HOURS"}}}}), 422, "steps[0].deadline")
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Service", "steps": []map[string]any{
			{"label": "Fix", "policyNames": []string{"Workers"}, "deadline": "24", "deadlineType": "BUSINESS_HOURS"},
		}}, 201).JSON()["id"].(string)
		days := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Reply", "steps": []map[string]any{
			{"label": "Answer", "policyNames": []string{"Workers"}, "deadline": "1", "deadlineType": "BUSINESS_DAYS"},
		}}, 201).JSON()["id"].(string)

		due := func(process string) string {
			t.Helper()
			for _, m := range env.Call(get, "/v1/measurements?actionable=me", worker, nil, 200).JSON()["data"].([]any) {
				if m := m.(map[string]any); m["processId"] == process {
					return m["actionableSteps"].([]any)[0].(map[string]any)["dueAt"].(string)
				}
			}
			t.Fatalf("nothing of %s in the Inbox", process)
			return ""
		}
		// Friday 2026-01-09 16:00 in Berlin (15:00Z): 24 working hours end on Wednesday at 16:00,
		// Tuesday the 13th being a holiday: Thursday 16:00 (15:00Z).
		env.Clock.Advance(4*24*time.Hour + 6*time.Hour)
		first := env.Call(post, "/v1/measurements", worker, map[string]any{"processId": proc}, 201).JSON()["id"].(string)
		env.Call(post, "/v1/measurements", worker, map[string]any{"processId": days}, 201)
		if got := due(proc); got != "2026-01-15T15:00:00.000Z" {
			t.Fatalf("24 business hours from Friday 16:00: due %s", got)
		}
		if got := due(days); got != "2026-01-12T16:00:00.000Z" { // Monday's end of work, 17:00 in Berlin
			t.Fatalf("1 business day from Friday: due %s", got)
		}

		// A new calendar: the open step keeps its deadline; a step opened now counts over the new one.
		env.Clock.Advance(time.Minute)
		env.Call("PUT", path, env.AdminKey, map[string]any{"timeZone": "UTC", "workingHours": map[string]any{
			"sun": []string{"00:00-24:00"}, "mon": []string{"00:00-24:00"}, "tue": []string{"00:00-24:00"}, "wed": []string{"00:00-24:00"},
			"thu": []string{"00:00-24:00"}, "fri": []string{"00:00-24:00"}, "sat": []string{"00:00-24:00"}}}, 200)
		if got := due(proc); got != "2026-01-15T15:00:00.000Z" {
			t.Fatalf("the open step's deadline moved with the calendar: %s", got)
		}
		env.Call(post, "/v1/measurements/"+first+"/actions", worker, map[string]any{"stepId": steps(env.Call(get, "/v1/process/"+proc, env.AdminKey, nil, 200).JSON())[0]["id"], "type": "WRITE_DATA"}, 201)
		env.Call(post, "/v1/measurements", worker, map[string]any{"processId": proc}, 201)
		if got := due(proc); got != "2026-01-10T15:01:00.000Z" {
			t.Fatalf("24 hours of the new calendar from Friday 15:01Z: due %s", got)
		}
		// Past it, the step is overdue in the Inbox and its filter (the index agrees with the answer).
		env.Clock.Advance(25 * time.Hour)
		if late, n := inbox(t, env, worker, "&overdue=true"); n != 1 || late[0] != "SERVIC-2:Fix" {
			t.Fatalf("overdue in the Inbox on Saturday: %v, want the new Service alone", late)
		}
		env.Clock.Advance(48 * time.Hour) // Monday 16:01Z: the Reply's business day has ended
		if late, n := inbox(t, env, worker, "&overdue=true"); n != 2 {
			t.Fatalf("overdue in the Inbox on Monday evening: %v, want the new Service and the Reply", late)
		}
	})
}
