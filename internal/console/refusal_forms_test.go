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
