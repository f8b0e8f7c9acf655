package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestDelegationRefusalKeepsPolicies: a delegation refused (no reason)
// comes back with the policies that were ticked still ticked, so that
// sending it again does not delegate every policy.
func TestDelegationRefusalKeepsPolicies(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		person(t, o.env, "two@example.com", "SUPERVISOR", "MANAGER")
		c := newClient(t, o.env.Server.URL)
		c.signIn("two@example.com")
		_, page := c.do(get, "/settings/delegations", nil)
		res, page := c.do(post, "/settings/delegations", url.Values{"csrf": {csrf(page)}, "policyNames": {"Manager"}, "endsAt": {"2099-01-01"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("no reason: %d %s", res.StatusCode, page)
		}
		if !strings.Contains(page, `value="Manager" checked>`) || !strings.Contains(page, `value="Supervisor">`) {
			t.Fatalf("the ticked policy is not kept ticked: %s", page)
		}
	})
}

// TestRefusedNewPolicyKeepsForm: a new policy refused (its name taken)
// comes back with its name, roles and functions as they were sent.
func TestRefusedNewPolicyKeepsForm(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		c := newClient(t, o.env.Server.URL)
		c.signIn("root@example.com")
		_, page := c.do(get, "/admin/policies", nil)
		res, page := c.do(post, "/admin/policies", url.Values{"csrf": {csrf(page)}, "name": {"Inspector"}, "roles": {"QA, extra"}, "functions": {"ledger:read"}})
		_, form, _ := strings.Cut(page, `id="np-h"`)
		if res.StatusCode != http.StatusConflict || !strings.Contains(form, `name="name" required value="Inspector"`) ||
			!strings.Contains(form, `name="roles" value="QA, extra"`) || strings.Count(form, " checked>") != 1 || !strings.Contains(form, `value="ledger:read" checked>`) {
			t.Fatalf("name taken: %d, the form not as sent: %s", res.StatusCode, form)
		}
	})
}

// TestRefusedInviteKeepsRoles: an invitation refused (the email is a
// user's) comes back with its roles ticked and the other roles typed.
func TestRefusedInviteKeepsRoles(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		c := newClient(t, o.env.Server.URL)
		c.signIn("root@example.com")
		_, page := c.do(get, "/admin/users", nil)
		res, page := c.do(post, "/admin/invites", url.Values{"csrf": {csrf(page)}, "email": {"ines@example.com"}, "name": {"Ines"}, "roles": {"SUPERVISOR", "qa, Extra"}})
		_, form, _ := strings.Cut(page, `id="invite-h"`)
		if res.StatusCode != http.StatusConflict || !strings.Contains(form, `value="ines@example.com"`) || strings.Count(form, " checked>") != 1 ||
			!strings.Contains(form, `value="SUPERVISOR" checked>`) || !strings.Contains(form, `name="roles" value="QA, EXTRA"`) {
			t.Fatalf("email taken: %d, the form not as sent: %s", res.StatusCode, form)
		}
	})
}
