package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wps/internal/httpapi"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
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

// The defects found under kill -9 (issue: people and access, item 5).
func TestIdempotencyRecovery(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		admin, err := env.Service.Authenticate(t.Context(), env.AdminKey)
		if err != nil {
			t.Fatal(err)
		}
		send := func(key, idem, path string, body any) *tu.Response {
			return env.Do(tu.Request{Method: post, Path: path, Key: key, Body: body, Header: map[string]string{"Idempotency-Key": idem}})
		}
		requestHash := func(path string, body any) string {
			b, _ := json.Marshal(body)
			sum := sha256.Sum256(append([]byte("POST "+path+"\n"), b...))
			return hex.EncodeToString(sum[:])
		}

		t.Run("a key held by a request that died is free once its lease runs out", func(t *testing.T) {
			body := map[string]any{"name": "After crash"}
			now := env.Service.Now()
			// What a request killed with its server leaves: a pending record.
			err := env.Service.Store().Write(t.Context(), func(tx wps.Tx) error {
				return tx.ReserveIdempotent(wps.Idempotent{Scope: admin.KeyID, Key: "crash", RequestHash: requestHash("/v1/users/policies", body),
					CreatedAt: now, LeaseUntil: wps.At(now.Add(30 * time.Second))})
			})
			if err != nil {
				t.Fatal(err)
			}
			tu.Problem(t, send(env.AdminKey, "crash", "/v1/users/policies", body), 409, "")
			env.Clock.Advance(31 * time.Second)
			first := send(env.AdminKey, "crash", "/v1/users/policies", body)
			again := send(env.AdminKey, "crash", "/v1/users/policies", body)
			if first.Status != 201 || again.Status != 201 || string(first.Body) != string(again.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("after the lease: %d %s, then %d %s", first.Status, first.Body, again.Status, again.Body)
			}
		})
		t.Run("answers with a secret are kept without it; a replay answers the rest", func(t *testing.T) {
			for i, c := range []struct {
				path   string
				body   map[string]any
				secret func(m map[string]any) any
			}{
				{"/v1/users/me/api-keys", map[string]any{"name": "ci"}, func(m map[string]any) any { return m["key"] }},
				{"/v1/invites", map[string]any{"email": "ana@example.com"}, func(m map[string]any) any { return m["token"] }},
				{"/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook"}, func(m map[string]any) any { return m["secret"] }},
				{"/v1/webhooks/secret:rotate", map[string]any{}, func(m map[string]any) any { return m["secret"] }},
				{"/v1/webhooks/secret:rotate", map[string]any{}, func(m map[string]any) any { return m["previous"] }},
			} {
				idem := "secret-" + strconv.Itoa(i)
				first := send(env.AdminKey, idem, c.path, c.body)
				if first.Status >= 300 {
					t.Fatalf("%s: %d %s", c.path, first.Status, first.Body)
				}
				secret, _ := c.secret(first.JSON()).(string)
				if secret == "" {
					t.Fatalf("%s answered no secret: %s", c.path, first.Body)
				}
				if n := env.RawInt(`SELECT count(*) FROM idempotency WHERE body LIKE ?`, "%"+secret+"%"); n != 0 {
					t.Fatalf("%s: the secret is stored", c.path)
				}
				again := send(env.AdminKey, idem, c.path, c.body)
				if again.Status != first.Status || again.Header.Get("Idempotent-Replayed") != "true" || c.secret(again.JSON()) != nil ||
					again.JSON()["id"] != first.JSON()["id"] {
					t.Fatalf("%s replay: %d %s", c.path, again.Status, again.Body)
				}
			}
		})
		t.Run("a replayed accept neither makes a second user nor shows the key again", func(t *testing.T) {
			inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "bo@example.com"}, 201).JSON()
			body := map[string]any{"token": inv["token"]}
			first := send("", "accept", "/v1/invites/accept", body)
			again := send("", "accept", "/v1/invites/accept", body)
			if first.Status != 201 || first.JSON()["apiKey"].(map[string]any)["key"] == nil {
				t.Fatalf("accept: %d %s", first.Status, first.Body)
			}
			if again.Status != 201 || again.JSON()["apiKey"].(map[string]any)["key"] != nil {
				t.Fatalf("replay: %d %s", again.Status, again.Body)
			}
			if n := env.RawInt(`SELECT count(*) FROM idempotency WHERE body LIKE ?`, "%"+first.JSON()["apiKey"].(map[string]any)["key"].(string)+"%"); n != 0 {
				t.Fatal("the new API key is stored")
			}
			if n := env.RawInt(`SELECT count(*) FROM users WHERE email = ?`, "bo@example.com"); n != 1 {
				t.Fatalf("%d users", n)
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Body: body}), 410, "")
		})
		t.Run("anonymous callers do not share one key space", func(t *testing.T) {
			for _, email := range []string{"cy@example.com", "di@example.com"} {
				inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": email}, 201).JSON()
				if r := send("", "same-key", "/v1/invites/accept", map[string]any{"token": inv["token"]}); r.Status != 201 {
					t.Fatalf("%s: %d %s", email, r.Status, r.Body)
				}
			}
		})
		t.Run("records past their day are swept", func(t *testing.T) {
			if env.RawInt(`SELECT count(*) FROM idempotency`) == 0 {
				t.Fatal("nothing to sweep")
			}
			env.Clock.Advance(wps.IdempotencyTTL + time.Minute)
			if _, err := env.Service.Sweep(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n := env.RawInt(`SELECT count(*) FROM idempotency`); n != 0 {
				t.Fatalf("%d records after the sweep", n)
			}
		})
	})
}

// The lease of a pending key: renewed by its running request, and assumed
// for records written before leases existed.
func TestIdempotencyLease(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		const lease = 90 * time.Millisecond
		gate := make(chan struct{}) // each call of the slow API waits for a value
		var calls atomic.Int32
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			<-gate
			_ = json.NewEncoder(w).Encode(map[string]any{"rate": 2})
		}))
		t.Cleanup(slow.Close)
		t.Cleanup(func() { close(gate) })
		env := tu.NewEnv(t, engine, tu.Options{
			API:      httpapi.Options{IdempotencyLease: lease},
			APICalls: apiCalls(t), // each call waits for the test

		})
		admin, err := env.Service.Authenticate(t.Context(), env.AdminKey)
		if err != nil {
			t.Fatal(err)
		}
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		p := env.Call(post, "/v1/process", env.AdminKey, quoteProcess("Quote", call(slow.URL+"/rate", "resultPath", "rate")), 201).JSON()

		t.Run("a running request keeps its key past the lease by renewing it", func(t *testing.T) {
			body := map[string]any{"processUuid": p["id"], "parameters": map[string]any{"currency": "USD", "amount": 3}}
			send := func() *tu.Response {
				return env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey, Body: body,
					Header: map[string]string{"Idempotency-Key": "slow"}})
			}
			first := make(chan *tu.Response)
			go func() { first <- send() }()
			for calls.Load() == 0 { // the first request is running, waiting on the API call
				time.Sleep(time.Millisecond)
			}
			env.Clock.Advance(time.Hour) // far past the lease it was given
			tu.Await(t, "the running request to renew its lease", func() error {
				var rec wps.Idempotent
				err := env.Service.Store().Read(t.Context(), func(tx wps.Tx) (err error) { rec, err = tx.GetIdempotent(admin.KeyID, "slow"); return err })
				if err == nil && !rec.LeaseUntil.After(env.Clock.Now()) {
					err = fmt.Errorf("leased until %v, now %v", rec.LeaseUntil, env.Clock.Now())
				}
				return err
			})
			tu.Problem(t, send(), 409, "")
			gate <- struct{}{}
			r := <-first
			again := send()
			if r.Status != 201 || again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || calls.Load() != 1 {
				t.Fatalf("first %d %s, replay %d %s, %d calls", r.Status, r.Body, again.Status, again.Body, calls.Load())
			}
			if n := env.RawInt(`SELECT count(*) FROM measurements`); n != 1 {
				t.Fatalf("%d measurements", n)
			}
		})
		t.Run("a request whose key was claimed anew leaves the new claim alone", func(t *testing.T) {
			body := map[string]any{"processUuid": p["id"], "parameters": map[string]any{"currency": "EUR", "amount": 4}}
			send := func() *tu.Response {
				return env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey, Body: body,
					Header: map[string]string{"Idempotency-Key": "taken-over"}})
			}
			before := calls.Load()
			first := make(chan *tu.Response)
			go func() { first <- send() }()
			for calls.Load() == before {
				time.Sleep(time.Millisecond)
			}
			// As if its lease had run out (renewals failing) and a second
			// request had claimed the key and were running.
			var hash string
			err := env.Service.Store().Write(t.Context(), func(tx wps.Tx) error {
				old, err := tx.GetIdempotent(admin.KeyID, "taken-over")
				if err != nil {
					return err
				}
				hash = old.RequestHash
				if err := tx.DeleteIdempotent(old.Scope, old.Key, old.CreatedAt); err != nil {
					return err
				}
				later := old.CreatedAt.Add(time.Minute)
				return tx.ReserveIdempotent(wps.Idempotent{Scope: old.Scope, Key: old.Key, RequestHash: hash,
					CreatedAt: wps.At(later), LeaseUntil: wps.At(later.Add(time.Hour))})
			})
			if err != nil {
				t.Fatal(err)
			}
			gate <- struct{}{}
			if r := <-first; r.Status != 201 {
				t.Fatalf("first: %d %s", r.Status, r.Body)
			}
			tu.Problem(t, send(), 409, "") // the second claim still holds the key
		})
		t.Run("a pending record without a lease is held for one lease from its creation", func(t *testing.T) {
			// What a replica older than leases leaves while its request runs.
			body := map[string]any{"name": "Old replica"}
			b, _ := json.Marshal(body)
			sum := sha256.Sum256(append([]byte("POST /v1/users/policies\n"), b...))
			err := env.Service.Store().Write(t.Context(), func(tx wps.Tx) error {
				return tx.ReserveIdempotent(wps.Idempotent{Scope: admin.KeyID, Key: "no-lease", RequestHash: hex.EncodeToString(sum[:]),
					CreatedAt: env.Service.Now(), LeaseUntil: wps.FromMillis(0)})
			})
			if err != nil {
				t.Fatal(err)
			}
			send := func() *tu.Response {
				return env.Do(tu.Request{Method: post, Path: "/v1/users/policies", Key: env.AdminKey, Body: body,
					Header: map[string]string{"Idempotency-Key": "no-lease"}})
			}
			tu.Problem(t, send(), 409, "")
			env.Clock.Advance(2 * lease)
			if r := send(); r.Status != 201 {
				t.Fatalf("after its lease: %d %s", r.Status, r.Body)
			}
		})
	})
}
