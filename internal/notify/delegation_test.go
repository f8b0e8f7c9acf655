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

// work.waiting follows the Inbox for delegates too: while Bruno's
// delegation to Ana is active, a step waiting on Bruno's seat is mailed to
// both; once it is revoked, to Bruno alone. work.escalated reaches the
// delegates of the escalation policy's holders: Lia (Lead) delegates the
// Lead policy to Ana, and both are told; Bruno, who holds none, is not.
func TestWorkWaitingReachesDelegates(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, srv, w := mailing(t, engine)
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Supervisor", "roles": []string{"SUPERVISOR"},
			"functions": []string{"measurement:read", "action:approve"}}, 201)
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Staff", "roles": []string{"STAFF"},
			"functions": []string{"measurement:read"}}, 201)
		keys, ids := map[string]string{}, map[string]string{}
		for _, u := range []struct{ name, role string }{{"bruno", "SUPERVISOR"}, {"ana", "STAFF"}} {
			keys[u.name], ids[u.name] = joined(t, env, u.name+"@example.com", u.role)
		}
		proc := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Purchase", "steps": []map[string]any{
			{"label": "Approve", "policyNames": []string{"Supervisor"}}}}, 201).JSON()
		drain(t, w)
		seen := len(srv.Mails(""))
		waiting := func() []string {
			t.Helper()
			drain(t, w)
			var who []string
			all := srv.Mails("")
			for _, m := range all[seen:] {
				who = append(who, strings.TrimSuffix(m.To[0], "@example.com"))
			}
			seen = len(all)
			slices.Sort(who)
			return who
		}
		d := env.Call("POST", "/v1/users/me/delegations", keys["bruno"], map[string]any{"toUserId": ids["ana"],
			"endsAt": env.Clock.Now().Add(48 * time.Hour).Format(time.RFC3339), "reason": "holidays"}, 201).JSON()
		env.Call("POST", "/v1/measurements", env.AdminKey, map[string]any{"processId": proc["id"]}, 201)
		if got := waiting(); !slices.Equal(got, []string{"ana", "bruno"}) {
			t.Fatalf("work.waiting to %q, want ana and bruno", got)
		}
		env.Call("DELETE", "/v1/delegations/"+d["id"].(string), keys["bruno"], nil, 204)
		env.Call("POST", "/v1/measurements", env.AdminKey, map[string]any{"processId": proc["id"]}, 201)
		if got := waiting(); !slices.Equal(got, []string{"bruno"}) {
			t.Fatalf("work.waiting to %q after the revocation, want bruno", got)
		}

		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Lead", "roles": []string{"LEAD"},
			"functions": []string{"measurement:read"}}, 201)
		lia, _ := joined(t, env, "lia@example.com", "LEAD")
		env.Call("POST", "/v1/users/me/delegations", lia, map[string]any{"toUserId": ids["ana"], "policyNames": []string{"Lead"},
			"endsAt": env.Clock.Now().Add(48 * time.Hour).Format(time.RFC3339), "reason": "training"}, 201)
		waiting() // lia's invitation
		timed := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Timed", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Supervisor"}, "deadline": "1", "deadlineType": "HOURS",
				"escalations": []map[string]any{{"after": "PT1H", "policyName": "Lead"}}}}}, 201).JSON()
		env.Call("POST", "/v1/measurements", env.AdminKey, map[string]any{"processId": timed["id"]}, 201)
		if got := waiting(); !slices.Equal(got, []string{"bruno"}) {
			t.Fatalf("work.waiting to %q, want bruno", got)
		}
		env.Clock.Advance(2*time.Hour + time.Minute)
		if _, err := env.Service.NotifyEscalations(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := waiting(); !slices.Equal(got, []string{"ana", "lia"}) {
			t.Fatalf("work.escalated to %q, want lia and her delegate ana", got)
		}
	})
}
