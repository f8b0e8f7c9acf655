package httpapi_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// People: list, read, rename, deactivate and reactivate users; an admin's
// view of anyone's keys (semantics section 8).
func TestUsers(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": []string{"measurement:read", "users:read"}}, 201)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "People", "roles": []string{"HR"}, "functions": []string{"users:manage"}}, 201)
		anaID, anaKey := member(t, env, "ana@example.com", "INSPECTOR")
		_, hrKey := member(t, env, "hr@example.com", "HR")
		users := "/v1/users/"

		t.Run("list and get show status", func(t *testing.T) {
			list := env.Call(get, "/v1/users", env.AdminKey, nil, 200).JSON()["data"].([]any)
			if len(list) != 3 || list[1].(map[string]any)["status"] != "ACTIVE" {
				t.Fatalf("users: %v", list)
			}
			u := env.Call(get, users+anaID, anaKey, nil, 200).JSON()
			if u["email"] != "ana@example.com" || u["status"] != "ACTIVE" || u["passwordHash"] != nil {
				t.Fatalf("user: %v", u)
			}
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: users + anaID, Key: env.NewOrg("Globex")}), 404, "")
		})
		t.Run("changes need users:manage and valid values", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: users + anaID, Key: anaKey, Body: map[string]any{"name": "X"}}), 403, "")
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: users + anaID, Key: hrKey, Body: map[string]any{"status": "GONE"}}), 422, "status")
			if u := env.Call(patch, users+anaID, hrKey, map[string]any{"name": "Ana Lima"}, 200).JSON(); u["name"] != "Ana Lima" {
				t.Fatalf("renamed: %v", u)
			}
		})
		t.Run("an admin sees and revokes anyone's keys", func(t *testing.T) {
			second := env.Call(post, "/v1/users/me/api-keys", anaKey, map[string]any{"name": "ci"}, 201).JSON()
			keys := env.Call(get, users+anaID+"/api-keys", hrKey, nil, 200).JSON()["data"].([]any)
			if len(keys) != 2 || keys[0].(map[string]any)["key"] != nil || keys[0].(map[string]any)["prefix"] == nil {
				t.Fatalf("keys: %v", keys)
			}
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: users + anaID + "/api-keys", Key: anaKey}), 403, "")
			env.Call(del, users+anaID+"/api-keys/"+second["id"].(string), hrKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: second["key"].(string)}), 401, "")
			env.Call(get, "/v1/users/me", anaKey, nil, 200)
		})
		t.Run("another org's user, an unknown user, another user's key: 404, nothing changed", func(t *testing.T) {
			initechKey := env.NewOrg("Initech")
			initechAdmin := env.Call(get, "/v1/users/me", initechKey, nil, 200).JSON()["id"].(string)
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: users + initechAdmin, Key: hrKey, Body: map[string]any{"status": "DEACTIVATED"}}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: users + initechAdmin + "/api-keys", Key: hrKey}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: users + "01a208eb-0c3d-7423-80f5-f8b1dcc97b85", Key: hrKey, Body: map[string]any{"name": "X"}}), 404, "")
			hrID := env.Call(get, "/v1/users/me", hrKey, nil, 200).JSON()["id"].(string)
			anaKeyID := env.Call(get, users+anaID+"/api-keys", hrKey, nil, 200).JSON()["data"].([]any)[0].(map[string]any)["id"].(string)
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: users + hrID + "/api-keys/" + anaKeyID, Key: hrKey}), 404, "")
			env.Call(get, "/v1/users/me", initechKey, nil, 200)
			env.Call(get, "/v1/users/me", anaKey, nil, 200)
		})
		t.Run("deactivation stops every key at once; reactivation brings none back", func(t *testing.T) {
			env.Call(get, "/v1/users/me", anaKey, nil, 200) // cached
			u := env.Call(patch, users+anaID, hrKey, map[string]any{"status": "DEACTIVATED"}, 200).JSON()
			if u["status"] != "DEACTIVATED" {
				t.Fatalf("user: %v", u)
			}
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: anaKey}), 401, "")
			env.Call(patch, users+anaID, hrKey, map[string]any{"status": "ACTIVE"}, 200)
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: anaKey}), 401, "")
			if n := len(env.Call(get, users+anaID+"/api-keys", hrKey, nil, 200).JSON()["data"].([]any)); n != 0 {
				t.Fatalf("%d keys after reactivation", n)
			}
		})
		t.Run("the last active ADMIN stays", func(t *testing.T) {
			me := env.Call(get, "/v1/users/me", env.AdminKey, nil, 200).JSON()["id"].(string)
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: users + me, Key: hrKey, Body: map[string]any{"status": "DEACTIVATED"}}), 409, "")
			// A second admin, deactivated, does not count as one.
			otherID, _ := member(t, env, "admin2@example.com", "ADMIN")
			env.Call(patch, users+otherID, hrKey, map[string]any{"status": "DEACTIVATED"}, 200)
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: users + me, Key: hrKey, Body: map[string]any{"status": "DEACTIVATED"}}), 409, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/roles/revoke", Key: env.AdminKey, Body: map[string]any{"userId": me, "role": "ADMIN"}}), 409, "")
			env.Call(get, "/v1/users/me", env.AdminKey, nil, 200)
			// The deactivated admin's role can go: the active one stays.
			env.Call(post, "/v1/roles/revoke", env.AdminKey, map[string]any{"userId": otherID, "role": "ADMIN"}, 200)
		})
	})
}

// Every active user may make keys for themselves, with or without a policy,
// and a key allows what its user's roles allow at each request: a change of
// roles or policies shows at once, a deactivation stops it (semantics
// sections 1, 8 and 14).
func TestKeysFollowTheirUser(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		readers := env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Readers", "roles": []string{"READER"}, "functions": []string{"users:read"}}, 201).JSON()["id"].(string)
		bareID, invited := member(t, env, "bare@example.com") // no role, no policy
		allowed := func(key string, want int) {
			t.Helper()
			if want == 200 {
				env.Call(get, "/v1/users", key, nil, 200)
			} else {
				tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users", Key: key}), want, "")
			}
		}

		// The key the invite gave and a key made with it are alike.
		made := env.Call(post, "/v1/users/me/api-keys", invited, map[string]any{"name": "laptop"}, 201).JSON()
		key := made["key"].(string)
		if !strings.HasPrefix(key, "wps_") {
			t.Fatalf("key: %v", made)
		}
		if me := env.Call(get, "/v1/users/me", key, nil, 200).JSON(); me["id"] != bareID {
			t.Fatalf("the new key is another user's: %v", me)
		}
		own := env.Call(get, "/v1/users/me/api-keys", key, nil, 200).JSON()["data"].([]any)
		if len(own) != 2 {
			t.Fatalf("own keys: %v", own)
		}
		allowed(key, 403) // and now cached

		// Roles and policies change what the key allows at once.
		env.Call(post, "/v1/roles/assign", env.AdminKey, map[string]any{"userId": bareID, "role": "READER"}, 200)
		allowed(key, 200)
		env.Call(patch, "/v1/users/policies/"+readers, env.AdminKey, map[string]any{"name": "Readers", "roles": []string{"READER"}, "functions": []string{"measurement:read"}}, 200)
		allowed(key, 403)
		env.Call(patch, "/v1/users/policies/"+readers, env.AdminKey, map[string]any{"name": "Readers", "roles": []string{"READER"}, "functions": []string{"users:read"}}, 200)
		allowed(key, 200)
		env.Call(post, "/v1/roles/revoke", env.AdminKey, map[string]any{"userId": bareID, "role": "READER"}, 200)
		allowed(key, 403)

		// The user revokes their own keys: the invite's, with the new one.
		for _, k := range own {
			if id := k.(map[string]any)["id"].(string); id != made["id"] {
				env.Call(del, "/v1/users/me/api-keys/"+id, key, nil, 204)
			}
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: invited}), 401, "")
		env.Call(get, "/v1/users/me", key, nil, 200)

		// A deactivated user's key stops at once, and makes no other.
		env.Call(patch, "/v1/users/"+bareID, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: key}), 401, "")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/users/me/api-keys", Key: key, Body: map[string]any{"name": "x"}}), 401, "")
	})
}

// Deactivation racing with a user's requests, by API key and by session:
// once the PATCH has answered, no request of that user succeeds, on this
// replica at once.
func TestDeactivationRace(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": []string{"measurement:read"}}, 201)
		key := invitee(t, env, "ana@example.com", goodPassword, "INSPECTOR")
		id := env.Call(get, "/v1/users/me", key, nil, 200).JSON()["id"].(string)
		sess := signIn(t, env, "ana@example.com", goodPassword)
		var deactivated atomic.Bool
		var late atomic.Int64 // successes of requests sent after the PATCH answered
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		var once sync.Once
		halt := func() { once.Do(func() { close(stop) }) }
		defer halt()
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := deactivated.Load()
					var r *tu.Response
					if i%2 == 0 {
						r = env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: key})
					} else {
						r = sess.do(env, post, "/v1/users/me/api-keys", map[string]any{"name": "x"}, true)
					}
					if after && r.Status < 300 {
						late.Add(1)
					}
					if r.Status != 200 && r.Status != 201 && r.Status != 401 && r.Status != 429 {
						t.Errorf("status %d: %s", r.Status, r.Body)
					}
				}
			}()
		}
		for range 20 { // let requests run, warm the key cache
			env.Call(get, "/v1/users", env.AdminKey, nil, 200)
		}
		env.Call(patch, "/v1/users/"+id, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
		deactivated.Store(true)
		for range 20 {
			env.Call(get, "/v1/users", env.AdminKey, nil, 200)
		}
		halt()
		wg.Wait()
		if n := late.Load(); n > 0 {
			t.Fatalf("%d requests sent after the deactivation answered succeeded", n)
		}
		if !strings.Contains(string(env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: key}).Body), "invalid API key") {
			t.Fatal("the key still works")
		}
		tu.Problem(t, sess.do(env, get, "/v1/users/me", nil, false), 401, "")
		// Keys the session made before the deactivation were revoked with it.
		if n := env.RawInt(`SELECT count(*) FROM api_keys WHERE user_id = ? AND revoked_at IS NULL`, id); n != 0 {
			t.Fatalf("%d live keys after deactivation", n)
		}
	})
}
