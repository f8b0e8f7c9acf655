package httpapi_test

import (
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestMySettings: PATCH /v1/users/me sets the caller's name, time zone and
// language, checked field by field; GET shows them.
func TestMySettings(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		_, ana := member(t, env, "ana@example.com") // no role, no policy: her own settings all the same
		me := env.Call(get, "/v1/users/me", ana, nil, 200).JSON()
		if me["timeZone"] != "" || me["locale"] != "" {
			t.Fatalf("settings before any: %v", me)
		}
		for field, body := range map[string]map[string]any{
			"timeZone": {"timeZone": "Mars/Olympus"},
			"name":     {"name": "  "},
			"locale":   {"locale": "pt-PT"},
		} {
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: "/v1/users/me", Key: ana, Body: body}), 422, field)
		}
		got := env.Call(patch, "/v1/users/me", ana, map[string]any{"timeZone": "America/Sao_Paulo", "name": "Ana Lima", "locale": "pt-BR"}, 200).JSON()
		if got["timeZone"] != "America/Sao_Paulo" || got["name"] != "Ana Lima" || got["locale"] != "pt-BR" {
			t.Fatalf("patched: %v", got)
		}
		env.Call(patch, "/v1/users/me", ana, map[string]any{"name": "Ana L."}, 200) // fields left out stay
		if me := env.Call(get, "/v1/users/me", ana, nil, 200).JSON(); me["timeZone"] != "America/Sao_Paulo" || me["name"] != "Ana L." || me["locale"] != "pt-BR" {
			t.Fatalf("after a second patch: %v", me)
		}
		env.Call(patch, "/v1/users/me", ana, map[string]any{"timeZone": "", "locale": ""}, 200) // not set again
		if me := env.Call(get, "/v1/users/me", ana, nil, 200).JSON(); me["timeZone"] != "" || me["locale"] != "" {
			t.Fatalf("after clearing: %v", me)
		}
	})
}
