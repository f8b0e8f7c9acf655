package console_test

import (
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// Sam is away: he delegates his seats to Ana on the settings page; Ana's
// Inbox shows the step "for sam", she approves it, the history says "ana
// for sam", and Sam revokes the delegation. Then a step's escalations on
// the process page.
func TestConsoleDelegation(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		b := newBrowser(t)
		base := o.env.Server.URL
		person(t, o.env, "ana@example.com", "INSPECTOR")
		o.env.Call(post, "/v1/measurements/"+o.measure+"/actions", o.inspector, map[string]any{"stepId": stepID(t, o, "Inspect"), "type": "WRITE_DATA",
			"parameters": map[string]any{"temperature": 60, "condition": "good"}}, 201)

		sam := b.person(base)
		signIn(sam, "sam@example.com")
		sam.open("/settings")
		sam.press("link", "Away? Delegate your seats")
		day := func(d int) string { return o.env.Clock.Now().AddDate(0, 0, d).Format("2006-01-02") }
		sam.fill("Who fills my seats", "ana")
		sam.fill("Until (included)", day(-1))
		sam.fill("Reason", "Holidays")
		sam.press("button", "Delegate")
		if got := sam.text("#dl-until-err"); !strings.Contains(got, "future") {
			t.Fatalf("no error by the end date: %q\n%s", got, sam.text("main"))
		}
		sam.fill("Until (included)", day(1))
		sam.press("button", "Delegate")
		sam.sees("Saved.")
		if got := sam.text("#dl-given-h + table"); !strings.Contains(got, "ana") || !strings.Contains(got, "Holidays") || !strings.Contains(got, day(1)) {
			t.Fatalf("the given delegation is not listed with its last day %s: %q", day(1), sam.text("main"))
		}
		sam.screenshot("delegations")

		ana := b.person(base)
		signIn(ana, "ana@example.com")
		ana.sees("Approve (for sam)")
		ana.press("link", o.name)
		ana.press("button", "Approve")
		ana.sees("Approved.")
		if got := ana.text(".history"); !strings.Contains(got, "ana for sam") {
			t.Fatalf("the history does not say whom for:\n%s", got)
		}

		sam.open("/settings/delegations")
		sam.press("button", "Revoke the delegation to ana")
		sam.sees("Revoked")
		if got := sam.text("#dl-given-h + p"); got != "None." {
			t.Fatalf("still listed: %q", sam.text("main"))
		}

		// The process page shows a step's escalations.
		alarm := o.env.Call(post, "/v1/process", o.env.AdminKey, map[string]any{"name": "Alarm", "steps": []map[string]any{{"label": "Ack",
			"policyNames": []string{"Supervisor"}, "deadline": "8", "deadlineType": "HOURS",
			"escalations": []map[string]any{{"after": "PT0S", "policyName": "Supervisor"}, {"after": "PT4H", "policyName": "Manager"}}}}}, 201).JSON()["id"].(string)
		sam.open("/processes/" + alarm)
		sam.sees("Escalations: PT0S past the deadline → Supervisor; PT4H past the deadline → Manager")
	})
}
