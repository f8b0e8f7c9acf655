package httpapi_test

import (
	"sync"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

func TestIdempotencyKey(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		const path = "/v1/users/policies"
		send := func(key, idem string, body any) *tu.Response {
			return env.Do(tu.Request{Method: post, Path: path, Key: key, Body: body, Header: map[string]string{"Idempotency-Key": idem}})
		}
		count := func() int { return len(env.Call(get, path, env.AdminKey, nil, 200).JSON()["data"].([]any)) }

		t.Run("a replay returns the first answer and writes nothing", func(t *testing.T) {
			first := send(env.AdminKey, "k1", map[string]any{"name": "One"})
			again := send(env.AdminKey, "k1", map[string]any{"name": "One"})
			if first.Status != 201 || again.Status != 201 || string(first.Body) != string(again.Body) {
				t.Fatalf("first %d %s, replay %d %s", first.Status, first.Body, again.Status, again.Body)
			}
			if again.Header.Get("Idempotent-Replayed") != "true" || again.Header.Get("Location") != first.Header.Get("Location") {
				t.Fatalf("replay headers: %v", again.Header)
			}
			if n := count(); n != 1 {
				t.Fatalf("%d policies after a replay", n)
			}
		})
		t.Run("the same key with another body answers 422", func(t *testing.T) {
			tu.Problem(t, send(env.AdminKey, "k1", map[string]any{"name": "Two"}), 422, "Idempotency-Key")
			if n := count(); n != 1 {
				t.Fatalf("%d policies", n)
			}
		})
		t.Run("keys are scoped to the API key", func(t *testing.T) {
			other := env.Call(post, "/v1/users/me/api-keys", env.AdminKey, map[string]any{"name": "second"}, 201).JSON()["key"].(string)
			tu.Problem(t, send(other, "k1", map[string]any{"name": "One"}), 409, "")
		})
		t.Run("concurrent requests with one key act once", func(t *testing.T) {
			var wg sync.WaitGroup
			res := make([]*tu.Response, 20)
			for i := range res {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res[i] = send(env.AdminKey, "k-concurrent", map[string]any{"name": "Concurrent"})
				}()
			}
			wg.Wait()
			var body string
			for _, r := range res {
				switch r.Status {
				case 201:
					if body != "" && body != string(r.Body) {
						t.Fatalf("two different answers: %s / %s", body, r.Body)
					}
					body = string(r.Body)
				case 409: // the first was still in flight
				default:
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
			}
			if n := count(); n != 2 {
				t.Fatalf("%d policies, want 2", n)
			}
		})
	})
}
