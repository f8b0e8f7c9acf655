package httpapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

const (
	get, post, patch, del = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
)

func TestAuthAndAPIKeys(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)

		t.Run("me with the bootstrap key", func(t *testing.T) {
			me := env.Call(get, "/v1/users/me", env.AdminKey, nil, 200).JSON()
			if me["roles"].([]any)[0] != "ADMIN" || me["orgId"] != env.OrgID {
				t.Fatalf("me: %v", me)
			}
		})
		t.Run("missing, malformed and unknown keys answer 401", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me"}), 401, "")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Header: map[string]string{"Authorization": "Basic abc"}}), 401, "")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: "wps_unknown"}), 401, "")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: "nope"}), 401, "")
		})
		t.Run("create, list and revoke a key", func(t *testing.T) {
			created := env.Call(post, "/v1/users/me/api-keys", env.AdminKey, map[string]any{"name": "ci"}, 201)
			k := created.JSON()
			key, _ := k["key"].(string)
			if len(key) < 40 || key[:4] != "wps_" || k["prefix"] != key[:12] || created.Header.Get("Location") != "/v1/users/me/api-keys/"+k["id"].(string) {
				t.Fatalf("created key: %s %v", created.Body, created.Header)
			}
			env.Call(get, "/v1/users/me", key, nil, 200)
			list := env.Call(get, "/v1/users/me/api-keys", key, nil, 200).JSON()["data"].([]any)
			if len(list) != 2 {
				t.Fatalf("want 2 keys, got %v", list)
			}
			for _, item := range list {
				if _, shown := item.(map[string]any)["key"]; shown {
					t.Fatalf("a listed key shows its secret: %v", item)
				}
			}
			env.Call(del, "/v1/users/me/api-keys/"+k["id"].(string), env.AdminKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: key}), 401, "")
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/users/me/api-keys/" + k["id"].(string), Key: env.AdminKey}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/users/me/api-keys", Key: env.AdminKey, Body: map[string]any{"name": ""}}), 422, "name")
		})
	})
}

// pngBytes is a 1×1 PNG.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")

func TestOrganization(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		org := env.Call(get, "/v1/organizations", env.AdminKey, nil, 200).JSON()
		if org["id"] != env.OrgID || org["name"] != "Acme" {
			t.Fatalf("org: %v", org)
		}
		logo := upload(t, env, env.AdminKey, "file", "acme.png", pngBytes).JSON()["id"].(string)
		upd := env.Call(post, "/v1/organizations", env.AdminKey, map[string]any{
			"logoKey": logo, "pinnedUrl": "https://acme.example/wiki", "themeColor": "#1A2b3C", "operations": []string{"inbox", "measurements"},
		}, 200).JSON()
		if upd["themeColor"] != "#1A2b3C" || upd["logoKey"] != logo || len(upd["operations"].([]any)) != 2 {
			t.Fatalf("updated: %v", upd)
		}
		// A partial update keeps the other fields.
		upd = env.Call(post, "/v1/organizations", env.AdminKey, map[string]any{"themeColor": "#000000"}, 200).JSON()
		if upd["logoKey"] != logo || upd["themeColor"] != "#000000" {
			t.Fatalf("partial update: %v", upd)
		}
		for _, bad := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"themeColor": "red"}, "themeColor"},
			{map[string]any{"themeColor": "#12345"}, "themeColor"},
			{map[string]any{"pinnedUrl": "ftp://x"}, "pinnedUrl"},
			{map[string]any{"operations": []string{""}}, "operations[0]"},
			{map[string]any{"operations": []string{"inbox", "audit"}}, "operations[1]"},
			{map[string]any{"logoKey": "logos/acme.png"}, "logoKey"},
			{map[string]any{"logoKey": upload(t, env, env.AdminKey, "file", "notes.txt", []byte("not an image")).JSON()["id"]}, "logoKey"},
		} {
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/organizations", Key: env.AdminKey, Body: bad.body}), 422, bad.field)
		}
		if after := env.Call(get, "/v1/organizations", env.AdminKey, nil, 200).JSON(); after["themeColor"] != "#000000" {
			t.Fatalf("a rejected update changed the org: %v", after)
		}
	})
}

// member invites email with roles and returns the new member's id and key.
func member(t *testing.T, env *tu.Env, email string, roles ...string) (string, string) {
	t.Helper()
	inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": roles}, 201).JSON()
	acc := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"]}, 201).JSON()
	return acc["user"].(map[string]any)["id"].(string), acc["apiKey"].(map[string]any)["key"].(string)
}

func TestInvites(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)

		t.Run("invite, accept, and the token is spent", func(t *testing.T) {
			inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "Ana@Example.com", "name": "Ana", "roles": []string{"INSPECTOR"}}, 201).JSON()
			if inv["status"] != "PENDING" || inv["email"] != "ana@example.com" || inv["token"] == nil || inv["expiresAt"] == nil {
				t.Fatalf("invite: %v", inv)
			}
			list := env.Call(get, "/v1/invites", env.AdminKey, nil, 200).JSON()["data"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["token"] != nil {
				t.Fatalf("list shows tokens or misses the invite: %v", list)
			}
			acc := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"]}, 201).JSON()
			user := acc["user"].(map[string]any)
			if user["email"] != "ana@example.com" || user["name"] != "Ana" || fmt.Sprint(user["roles"]) != "[INSPECTOR]" {
				t.Fatalf("accepted: %v", acc)
			}
			me := env.Call(get, "/v1/users/me", acc["apiKey"].(map[string]any)["key"].(string), nil, 200).JSON()
			if me["id"] != user["id"] {
				t.Fatalf("new key is someone else's: %v", me)
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Body: map[string]any{"token": inv["token"]}}), 410, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites", Key: env.AdminKey, Body: map[string]any{"email": "ana@example.com"}}), 409, "")
		})
		t.Run("re-inviting replaces the token", func(t *testing.T) {
			first := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "bo@example.com"}, 201).JSON()
			second := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "bo@example.com"}, 201).JSON()
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Body: map[string]any{"token": first["token"]}}), 410, "")
			env.Call(post, "/v1/invites/accept", "", map[string]any{"token": second["token"]}, 201)
		})
		t.Run("revoked and expired invites answer 410", func(t *testing.T) {
			rev := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "cy@example.com"}, 201).JSON()
			env.Call(del, "/v1/invites/"+rev["id"].(string), env.AdminKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Body: map[string]any{"token": rev["token"]}}), 410, "")

			exp := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "di@example.com"}, 201).JSON()
			env.Clock.Advance(7*24*time.Hour + time.Second)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Body: map[string]any{"token": exp["token"]}}), 410, "")
			for _, item := range env.Call(get, "/v1/invites", env.AdminKey, nil, 200).JSON()["data"].([]any) {
				if it := item.(map[string]any); it["id"] == exp["id"] && it["status"] != "EXPIRED" {
					t.Fatalf("expired invite listed as %v", it["status"])
				}
			}
		})
		t.Run("bad input", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites", Key: env.AdminKey, Body: map[string]any{"email": "not-an-email"}}), 422, "email")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites", Key: env.AdminKey, Body: map[string]any{"email": "x@example.com", "roles": []string{"lower"}}}), 422, "roles[0]")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Body: map[string]any{"token": "wpsinv_unknown"}}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Body: map[string]any{}}), 422, "token")
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/invites/unknown", Key: env.AdminKey}), 404, "")
		})
	})
}

func TestRoles(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		me := env.Call(get, "/v1/users/me", env.AdminKey, nil, 200).JSON()
		adminID := me["id"].(string)
		userID, userKey := member(t, env, "eve@example.com")

		out := env.Call(post, "/v1/roles/assign", env.AdminKey, map[string]any{"role": "AUDITOR", "userId": userID}, 200).JSON()
		if fmt.Sprint(out["roles"]) != "[AUDITOR]" || out["userId"] != userID {
			t.Fatalf("assign: %v", out)
		}
		// Idempotent.
		out = env.Call(post, "/v1/roles/assign", env.AdminKey, map[string]any{"role": "AUDITOR", "userId": userID}, 200).JSON()
		if fmt.Sprint(out["roles"]) != "[AUDITOR]" {
			t.Fatalf("assign twice: %v", out)
		}
		env.Call(post, "/v1/roles/revoke", env.AdminKey, map[string]any{"role": "AUDITOR", "userId": userID}, 200)
		out = env.Call(post, "/v1/roles/revoke", env.AdminKey, map[string]any{"role": "AUDITOR", "userId": userID}, 200).JSON()
		if fmt.Sprint(out["roles"]) != "[]" {
			t.Fatalf("revoke: %v", out)
		}

		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/roles/assign", Key: env.AdminKey, Body: map[string]any{"role": "bad role", "userId": userID}}), 422, "role")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/roles/assign", Key: env.AdminKey, Body: map[string]any{"role": "X", "userId": "nobody"}}), 404, "")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/roles/assign", Key: env.AdminKey, Body: map[string]any{"role": "X"}}), 422, "userId")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/roles/assign", Key: userKey, Body: map[string]any{"role": "ADMIN", "userId": userID}}), 403, "")

		t.Run("the last ADMIN cannot be revoked", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/roles/revoke", Key: env.AdminKey, Body: map[string]any{"role": "ADMIN", "userId": adminID}}), 409, "")
			env.Call(get, "/v1/users/me", env.AdminKey, nil, 200)
		})
		t.Run("two admins revoking each other at once leave one", func(t *testing.T) {
			env.Call(post, "/v1/roles/assign", env.AdminKey, map[string]any{"role": "ADMIN", "userId": userID}, 200)
			var wg sync.WaitGroup
			statuses := make([]int, 2)
			for i, c := range []struct{ key, target string }{{env.AdminKey, userID}, {userKey, adminID}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i] = env.Do(tu.Request{Method: post, Path: "/v1/roles/revoke", Key: c.key, Body: map[string]any{"role": "ADMIN", "userId": c.target}}).Status
				}()
			}
			wg.Wait()
			ok := 0
			for _, s := range statuses {
				switch s {
				case 200:
					ok++
				case 409, 403:
				default:
					t.Fatalf("unexpected status %d", s)
				}
			}
			res := env.Do(tu.Request{Method: get, Path: "/v1/users", Key: env.AdminKey})
			if res.Status != 200 {
				res = env.Call(get, "/v1/users", userKey, nil, 200)
			}
			users := res.JSON()
			admins := 0
			for _, u := range users["data"].([]any) {
				if fmt.Sprint(u.(map[string]any)["roles"]) == "[ADMIN]" {
					admins++
				}
			}
			if ok != 1 || admins != 1 {
				t.Fatalf("statuses %v, %d admins left", statuses, admins)
			}
		})
	})
}

func TestUsersList(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		for i := range 3 {
			member(t, env, fmt.Sprintf("u%d@example.com", i))
		}
		page := env.Call(get, "/v1/users?page=2&perPage=3", env.AdminKey, nil, 200).JSON()
		meta := page["meta"].(map[string]any)
		if len(page["data"].([]any)) != 1 || meta["total"] != 4.0 || meta["lastPage"] != 2.0 || meta["prev"] != 1.0 || meta["next"] != nil {
			t.Fatalf("page 2: %v", page)
		}
		page = env.Call(get, "/v1/users?page=9&perPage=3", env.AdminKey, nil, 200).JSON()
		if len(page["data"].([]any)) != 0 || page["meta"].(map[string]any)["prev"] != 2.0 {
			t.Fatalf("page past the end: %v", page)
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users?perPage=0", Key: env.AdminKey}), 422, "perPage")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users?page=0", Key: env.AdminKey}), 422, "page")
	})
}

func TestHealth(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		if r := env.Call(get, "/healthz", "", nil, 200).JSON(); r["status"] != "ok" {
			t.Fatalf("healthz: %v", r)
		}
		if r := env.Call(get, "/readyz", "", nil, 200).JSON(); r["status"] != "ready" {
			t.Fatalf("readyz: %v", r)
		}
	})
}
