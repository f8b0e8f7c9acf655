package httpapi_test

import (
	"log/slog"
	"strings"
	"testing"

	"wps/internal/httpapi"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// The access log names the caller's org and user, and the route.
func TestAccessLogNamesTheCaller(t *testing.T) {
	var buf tu.SyncBuffer
	env := tu.NewEnv(t, sqlstore.SQLite, tu.Options{API: httpapi.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}})
	me := env.Call(get, "/v1/users/me", env.AdminKey, nil, 200).JSON()
	line := ""
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "path=/v1/users/me") {
			line = l
		}
	}
	if !strings.Contains(line, "org="+env.OrgID) || !strings.Contains(line, "user="+me["id"].(string)) || !strings.Contains(line, `route="GET /v1/users/me"`) {
		t.Fatalf("access log line: %q", line)
	}
}
