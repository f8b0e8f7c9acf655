package notify_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// work.waiting reaches exactly the users the Inbox starts listing a step
// for, when they start: a step that opens (each active holder of its
// seat), the next of ordered policies once the first seat is filled, a step
// re-opened by a rejection or a reproval; nobody else, and no parameter
// value. work.returned reaches the authors of the actions superseded, and
// work.overdue the users the Inbox lists an overdue step for.
func TestWorkWaitingFollowsTheInbox(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, srv, w := mailing(t, engine)
		fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve", "action:reprove"}
		for _, p := range []struct{ name, role string }{{"Inspector", "INSPECTOR"}, {"Supervisor", "SUPERVISOR"}, {"Manager", "MANAGER"}} {
			env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": p.name, "roles": []string{p.role}, "functions": fns}, 201)
		}
		keys := map[string]string{}
		for _, u := range []struct{ name, role string }{{"ian", "INSPECTOR"}, {"ivy", "INSPECTOR"}, {"dee", "INSPECTOR"}, {"sam", "SUPERVISOR"}, {"mia", "MANAGER"}} {
			var id string
			keys[u.name], id = joined(t, env, u.name+"@example.com", u.role)
			if u.name == "dee" {
				env.Call("PATCH", "/v1/users/"+id, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
			}
		}
		proc := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Pump service", "code": "PUMP",
			"steps": []map[string]any{
				{"label": "Inspect", "policyNames": []string{"Inspector", "Supervisor"}, "orderedPolicies": []string{"Inspector", "Supervisor"},
					"deadline": "2", "deadlineType": "HOURS", "parameters": []map[string]any{{"name": "reading", "type": "TEXT"}}},
				{"label": "Close", "policyNames": []string{"Manager"}, "stepIdsReprovalDependencies": []string{"Inspect"}},
			}}, 201).JSON()
		steps := map[string]string{}
		for _, st := range proc["steps"].([]any) {
			steps[st.(map[string]any)["label"].(string)] = st.(map[string]any)["id"].(string)
		}
		drain(t, w)
		invites := len(srv.Mails(""))

		// waiting lists who got a work.waiting mail since the last call;
		// listed who the Inbox lists the measurement for.
		seen := 0
		waiting := func() []string {
			t.Helper()
			drain(t, w)
			var who []string
			all := srv.Mails("")[invites:]
			for _, m := range all[seen:] {
				name := strings.TrimSuffix(m.To[0], "@example.com")
				if strings.HasPrefix(m.Subject, "Returned: ") {
					name += " (returned)"
				}
				if strings.HasPrefix(m.Subject, "Overdue: ") {
					name += " (overdue)"
				}
				who = append(who, name)
				if strings.Contains(m.Body, "secret") || m.Header.Get("Bcc") != "" {
					t.Fatalf("mail: %+v", m)
				}
			}
			seen = len(all)
			slices.Sort(who)
			return who
		}
		listed := func() []string {
			t.Helper()
			var who []string
			for _, u := range []string{"ian", "ivy", "sam", "mia"} {
				if env.Call("GET", "/v1/measurements?actionable=me", keys[u], nil, 200).JSON()["meta"].(map[string]any)["total"].(float64) > 0 {
					who = append(who, u)
				}
			}
			return who
		}
		check := func(what string, want ...string) {
			t.Helper()
			if got := waiting(); !slices.Equal(got, want) {
				t.Fatalf("%s: mailed %q, want %q", what, got, want)
			}
		}
		act := func(who, m, step, typ string, params map[string]any) string {
			t.Helper()
			body := map[string]any{"stepId": steps[step], "type": typ, "parameters": params}
			if typ == "REJECTION" {
				body["observation"] = "again"
			}
			return env.Call("POST", "/v1/measurements/"+m+"/actions", keys[who], body, 201).JSON()["id"].(string)
		}

		m := env.Call("POST", "/v1/measurements", keys["ian"], map[string]any{"processId": proc["id"]}, 201).JSON()
		id := m["id"].(string)
		check("a measurement starts", "ian", "ivy")
		if got := listed(); !slices.Equal(got, []string{"ian", "ivy"}) {
			t.Fatalf("the Inbox lists it for %q", got)
		}
		mail := srv.Mails("ian@example.com")[len(srv.Mails("ian@example.com"))-1]
		if !strings.Contains(mail.Subject, "Inspect") || mail.Link(publicURL+"/measurements/") != publicURL+"/measurements/"+id ||
			!strings.Contains(mail.Body, "due 2026-01-05 11:00 UTC") || !strings.Contains(mail.Body, "Pump service") {
			t.Fatalf("mail: %q %q", mail.Subject, mail.Body)
		}

		act("ian", id, "Inspect", "WRITE_DATA", map[string]any{"reading": "secret 42"})
		check("the first ordered seat is filled", "sam")
		if got := listed(); !slices.Equal(got, []string{"sam"}) {
			t.Fatalf("the Inbox lists it for %q", got)
		}

		act("sam", id, "Inspect", "APPROVAL", nil)
		check("the step is consensed: Close opens", "mia")

		act("mia", id, "Close", "REJECTION", nil)
		check("a rejection re-opens Inspect: its actions' authors are told, and its seat's holders", "ian", "ian (returned)", "ivy", "sam (returned)")
		if got := listed(); !slices.Equal(got, []string{"ian", "ivy"}) {
			t.Fatalf("the Inbox lists it for %q", got)
		}

		returned := srv.Mails("sam@example.com")[len(srv.Mails("sam@example.com"))-1]
		if returned.Subject != "Returned: Inspect of PUMP-1" || returned.Link(publicURL+"/measurements/") != publicURL+"/measurements/"+id {
			t.Fatalf("returned: %q %q", returned.Subject, returned.Body)
		}

		// A reproval: the author of the action reproved is told (not the
		// one who reproves), and the seat's holders again.
		action := act("ivy", id, "Inspect", "WRITE_DATA", map[string]any{"reading": "secret 43"})
		check("the first seat is filled again", "sam")
		env.Call("POST", "/v1/actions/"+action+"/reprove", keys["sam"], map[string]any{"observation": "wrong pump"}, 201)
		check("a reproval", "ian", "ivy", "ivy (returned)")

		// Nothing more: reading mails nobody.
		env.Call("GET", "/v1/measurements/"+id, keys["ian"], nil, 200)
		check("nothing changed")

		// Past the deadline: the same users as the Inbox, once.
		env.Clock.Advance(3 * time.Hour)
		for range 2 {
			if _, err := env.Service.NotifyOverdue(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		check("the step is overdue", "ian (overdue)", "ivy (overdue)")
		// Escalated past it: the Manager's active holders, once.
		esc := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Valve service", "code": "VALVE",
			"steps": []map[string]any{{"label": "Inspect", "policyNames": []string{"Inspector"}, "deadline": "1", "deadlineType": "HOURS",
				"escalations": []map[string]any{{"after": "PT1H", "policyName": "Manager"}}}}}, 201).JSON()
		env.Call("POST", "/v1/measurements", keys["ian"], map[string]any{"processId": esc["id"]}, 201)
		check("a valve measurement starts", "ian", "ivy")
		env.Clock.Advance(2*time.Hour + time.Minute)
		for range 2 {
			if _, err := env.Service.NotifyEscalations(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if got := waiting(); !slices.Contains(got, "mia") || slices.Contains(got, "sam") {
			t.Fatalf("escalation mailed %q, want the Manager (mia)", got)
		}
		last := srv.Mails("mia@example.com")[len(srv.Mails("mia@example.com"))-1]
		if !strings.HasPrefix(last.Subject, "Escalated: Inspect of VALVE-") || !strings.Contains(last.Body, "holder of Manager") {
			t.Fatalf("escalation mail: %q %q", last.Subject, last.Body)
		}
		if l := notifications(t, env, keys["ivy"], "?kind=work.waiting"); len(l) != 4 || l[0]["status"] != "SENT" { // 3 of the pump, 1 of the valve
			t.Fatalf("ivy's log: %v", l)
		}
	})
}

// A recurring process's measurement made ahead (PENDING) waits on nobody:
// its holders are mailed when its time comes and the Inbox lists it.
func TestWorkWaitingWhenScheduledMeasurementsOpen(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, srv, w := mailing(t, engine) // the clock reads 2026-01-05T09:00Z
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Walkers", "roles": []string{"WALKER"},
			"functions": []string{"measurement:read", "action:write"}}, 201)
		key, _ := joined(t, env, "wes@example.com", "WALKER")
		// Lookers hold a seat but may not act: the Inbox lists nothing for
		// them, and they are mailed nothing.
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Lookers", "roles": []string{"LOOKER"},
			"functions": []string{"measurement:read"}}, 201)
		lou, _ := joined(t, env, "lou@example.com", "LOOKER")
		env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Daily round", "code": "DR", "steps": []map[string]any{
			{"label": "Walk", "policyNames": []string{"Walkers", "Lookers"}, "frequency": "DAILY", "frequencyDate": "2026-01-04T08:00:00Z"},
		}}, 201)
		waiting := func() int {
			t.Helper()
			drain(t, w)
			n := 0
			for _, m := range srv.Mails("wes@example.com") {
				if strings.HasPrefix(m.Subject, "Waiting for you: Walk") {
					n++
				}
			}
			return n
		}
		inbox := func() int {
			return int(env.Call("GET", "/v1/measurements?actionable=me", key, nil, 200).JSON()["meta"].(map[string]any)["total"].(float64))
		}
		if _, err := env.Service.RunRecurrences(context.Background()); err != nil { // 01-04 and 01-05 open, 01-06 PENDING
			t.Fatal(err)
		}
		if n, in := waiting(), inbox(); n != 2 || in != 2 {
			t.Fatalf("%d mails, %d in the Inbox; want 2", n, in)
		}
		env.Clock.Advance(24 * time.Hour)
		if _, err := env.Service.RunRecurrences(context.Background()); err != nil { // 01-06 opens
			t.Fatal(err)
		}
		if n, in := waiting(), inbox(); n != 3 || in != 3 {
			t.Fatalf("%d mails, %d in the Inbox; want 3", n, in)
		}
		if in := env.Call("GET", "/v1/measurements?actionable=me", lou, nil, 200).JSON()["meta"].(map[string]any)["total"]; in != 0.0 ||
			len(srv.Mails("lou@example.com")) != 1 { // the invitation
			t.Fatalf("a seat holder who may not act: %v in the Inbox, %d mails", in, len(srv.Mails("lou@example.com")))
		}
	})
}
