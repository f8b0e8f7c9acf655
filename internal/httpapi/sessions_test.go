package httpapi_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wps/internal/httpapi"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// session is a signed-in browser: its cookie and CSRF token.
type session struct {
	cookie, csrf string
}

func signIn(t *testing.T, env *tu.Env, email, password string) session {
	t.Helper()
	r := env.Call(post, "/v1/sessions", "", map[string]any{"email": email, "password": password}, 201)
	var cookie string
	for _, c := range r.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "wps_session=") {
			cookie = strings.SplitN(strings.TrimPrefix(c, "wps_session="), ";", 2)[0]
		}
	}
	return session{cookie: cookie, csrf: r.JSON()["csrfToken"].(string)}
}

// do sends a request as the session; withCSRF adds its token.
func (s session) do(env *tu.Env, method, path string, body any, withCSRF bool) *tu.Response {
	h := map[string]string{"Cookie": "wps_session=" + s.cookie}
	if withCSRF {
		h["X-CSRF-Token"] = s.csrf
	}
	return env.Do(tu.Request{Method: method, Path: path, Body: body, Header: h})
}

// invitee invites email and accepts with password; it returns the user's key.
func invitee(t testing.TB, env *tu.Env, email, password string, roles ...string) string {
	t.Helper()
	inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": roles}, 201).JSON()
	acc := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"], "password": password}, 201).JSON()
	return acc["apiKey"].(map[string]any)["key"].(string)
}

const (
	goodPassword = "correct horse battery"
	put          = http.MethodPut
)

func TestSessions(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Sessions: wps.SessionConfig{Idle: time.Hour, MaxAge: 3 * time.Hour, AccountBurst: 3, AddressBurst: 1000}})
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": []string{"measurement:read"}}, 201)

		t.Run("a password is at least 12 characters", func(t *testing.T) {
			inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "short@example.com"}, 201).JSON()
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Body: map[string]any{"token": inv["token"], "password": "short"}}), 422, "password")
			env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"]}, 201) // nothing was spent
		})

		invitee(t, env, "ana@example.com", goodPassword, "INSPECTOR")

		t.Run("sign in: a cookie, its CSRF token, the user", func(t *testing.T) {
			r := env.Call(post, "/v1/sessions", "", map[string]any{"email": "Ana@Example.com", "password": goodPassword}, 201)
			c := r.Header.Get("Set-Cookie")
			for _, attr := range []string{"wps_session=wpss_", "Path=/", "HttpOnly", "SameSite=Lax", "Expires="} {
				if !strings.Contains(c, attr) {
					t.Fatalf("cookie %q lacks %s", c, attr)
				}
			}
			if strings.Contains(c, "Secure") {
				t.Fatalf("Secure over plain http: %q", c)
			}
			b := r.JSON()
			if b["user"].(map[string]any)["email"] != "ana@example.com" || b["csrfToken"] == "" || b["expiresAt"] == nil {
				t.Fatalf("answer: %v", b)
			}
			if n := env.RawInt(`SELECT count(*) FROM sessions WHERE token_hash = ?`, wps.HashSecret(strings.SplitN(strings.TrimPrefix(c, "wps_session="), ";", 2)[0])); n != 1 {
				t.Fatalf("the session is not stored by its hash (%d rows)", n)
			}
		})
		t.Run("a sign-in is never replayed nor kept for an Idempotency-Key", func(t *testing.T) {
			body := map[string]any{"email": "ana@example.com", "password": goodPassword}
			h := map[string]string{"Idempotency-Key": "sign-in-1"}
			first := env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: body, Header: h})
			second := env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: body, Header: h})
			if first.Status != 201 || second.Status != 201 || first.JSON()["csrfToken"] == second.JSON()["csrfToken"] {
				t.Fatalf("two sign-ins with one key: %d %s, %d %s", first.Status, first.Body, second.Status, second.Body)
			}
			if n := env.RawInt(`SELECT count(*) FROM idempotency WHERE key = ?`, "sign-in-1"); n != 0 {
				t.Fatalf("%d idempotency records of a sign-in", n)
			}
		})
		t.Run("the cookie authenticates; unsafe methods need the CSRF token", func(t *testing.T) {
			s := signIn(t, env, "ana@example.com", goodPassword)
			if r := s.do(env, get, "/v1/users/me", nil, false); r.Status != 200 {
				t.Fatalf("me: %d %s", r.Status, r.Body)
			}
			tu.Problem(t, s.do(env, post, "/v1/users/me/api-keys", map[string]any{"name": "x"}, false), 403, "")
			h := map[string]string{"Cookie": "wps_session=" + s.cookie, "X-CSRF-Token": "wrong"}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/users/me/api-keys", Body: map[string]any{"name": "x"}, Header: h}), 403, "")
			if r := s.do(env, post, "/v1/users/me/api-keys", map[string]any{"name": "x"}, true); r.Status != 201 {
				t.Fatalf("with the token: %d %s", r.Status, r.Body)
			}
			// An API key needs no CSRF token, cookie or not.
			env.Call(post, "/v1/users/me/api-keys", env.AdminKey, map[string]any{"name": "y"}, 201)
		})
		t.Run("with a live session, signing in again and accepting an invite need no CSRF token", func(t *testing.T) {
			s := signIn(t, env, "ana@example.com", goodPassword)
			cookie := map[string]string{"Cookie": "wps_session=" + s.cookie}
			if r := env.Do(tu.Request{Method: post, Path: "/v1/sessions", Header: cookie, Body: map[string]any{"email": "ana@example.com", "password": goodPassword}}); r.Status != 201 {
				t.Fatalf("sign in again: %d %s", r.Status, r.Body)
			}
			inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "second@example.com"}, 201).JSON()
			if r := env.Do(tu.Request{Method: post, Path: "/v1/invites/accept", Header: cookie, Body: map[string]any{"token": inv["token"]}}); r.Status != 201 {
				t.Fatalf("accept an invite: %d %s", r.Status, r.Body)
			}
			// Operations that need a credential still need the token.
			tu.Problem(t, s.do(env, del, "/v1/sessions/current", nil, false), 403, "")
			if r := s.do(env, get, "/v1/users/me", nil, false); r.Status != 200 {
				t.Fatalf("the session: %d %s", r.Status, r.Body)
			}
		})
		t.Run("a wrong password and an unknown email answer alike", func(t *testing.T) {
			wrong := env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "ana@example.com", "password": "not the password"}})
			unknown := env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "nobody@example.com", "password": "not the password"}})
			tu.Problem(t, wrong, 401, "")
			if string(wrong.Body) != string(unknown.Body) || wrong.Status != unknown.Status {
				t.Fatalf("wrong password %d %s, unknown email %d %s", wrong.Status, wrong.Body, unknown.Status, unknown.Body)
			}
			env.Call(post, "/v1/sessions", "", map[string]any{"email": "ana@example.com", "password": goodPassword}, 201) // resets the count
		})
		t.Run("repeated failures of an account are throttled, even with the right password", func(t *testing.T) {
			invitee(t, env, "bo@example.com", goodPassword, "INSPECTOR")
			for range 3 {
				tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "bo@example.com", "password": "guess guess guess"}}), 401, "")
			}
			r := env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "bo@example.com", "password": goodPassword}})
			tu.Problem(t, r, 429, "")
			if r.Header.Get("Retry-After") == "" {
				t.Fatalf("no Retry-After: %v", r.Header)
			}
			env.Clock.Advance(time.Minute)
			env.Call(post, "/v1/sessions", "", map[string]any{"email": "bo@example.com", "password": goodPassword}, 201)
		})
		t.Run("sign out ends the session", func(t *testing.T) {
			s := signIn(t, env, "ana@example.com", goodPassword)
			tu.Problem(t, s.do(env, del, "/v1/sessions/current", nil, false), 403, "")
			r := s.do(env, del, "/v1/sessions/current", nil, true)
			if r.Status != 204 || !strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=0") {
				t.Fatalf("sign out: %d %v", r.Status, r.Header)
			}
			tu.Problem(t, s.do(env, get, "/v1/users/me", nil, false), 401, "")
		})
		t.Run("sessions end when idle and at their absolute expiry", func(t *testing.T) {
			idle := signIn(t, env, "ana@example.com", goodPassword)
			busy := signIn(t, env, "ana@example.com", goodPassword)
			for range 3 { // used every 50 minutes: alive until 3 h
				env.Clock.Advance(50 * time.Minute)
				if r := busy.do(env, get, "/v1/users/me", nil, false); r.Status != 200 {
					t.Fatalf("a used session ended: %d", r.Status)
				}
			}
			tu.Problem(t, idle.do(env, get, "/v1/users/me", nil, false), 401, "")
			env.Clock.Advance(40 * time.Minute) // 3 h 10 after sign-in, 40 min after its last use
			tu.Problem(t, busy.do(env, get, "/v1/users/me", nil, false), 401, "")
		})
		t.Run("a new password ends the other sessions", func(t *testing.T) {
			keep := signIn(t, env, "ana@example.com", goodPassword)
			other := signIn(t, env, "ana@example.com", goodPassword)
			tu.Problem(t, keep.do(env, put, "/v1/users/me/password", map[string]any{"currentPassword": "wrong one at all", "newPassword": "a brand new passphrase"}, true), 422, "currentPassword")
			tu.Problem(t, keep.do(env, put, "/v1/users/me/password", map[string]any{"currentPassword": goodPassword, "newPassword": "short"}, true), 422, "newPassword")
			if r := keep.do(env, put, "/v1/users/me/password", map[string]any{"currentPassword": goodPassword, "newPassword": "a brand new passphrase"}, true); r.Status != 204 {
				t.Fatalf("change: %d %s", r.Status, r.Body)
			}
			tu.Problem(t, other.do(env, get, "/v1/users/me", nil, false), 401, "")
			if r := keep.do(env, get, "/v1/users/me", nil, false); r.Status != 200 {
				t.Fatalf("the changing session ended: %d", r.Status)
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "ana@example.com", "password": goodPassword}}), 401, "")
			signIn(t, env, "ana@example.com", "a brand new passphrase")
		})
		t.Run("a user without a password sets one without currentPassword", func(t *testing.T) {
			inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "nopass@example.com", "roles": []string{"INSPECTOR"}}, 201).JSON()
			key := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"]}, 201).JSON()["apiKey"].(map[string]any)["key"].(string)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "nopass@example.com", "password": goodPassword}}), 401, "")
			env.Call(put, "/v1/users/me/password", key, map[string]any{"newPassword": goodPassword}, 204)
			signIn(t, env, "nopass@example.com", goodPassword)
			// Once set, the current one is required.
			tu.Problem(t, env.Do(tu.Request{Method: put, Path: "/v1/users/me/password", Key: key, Body: map[string]any{"newPassword": "another passphrase"}}), 422, "currentPassword")
		})
		t.Run("wrong current passwords count as failed sign-ins of the account", func(t *testing.T) {
			key := invitee(t, env, "dee@example.com", goodPassword, "INSPECTOR")
			change := func(current string) *tu.Response {
				return env.Do(tu.Request{Method: put, Path: "/v1/users/me/password", Key: key, Body: map[string]any{"currentPassword": current, "newPassword": "another passphrase"}})
			}
			for range 3 {
				tu.Problem(t, change("a guess at it"), 422, "currentPassword")
			}
			r := change(goodPassword)
			tu.Problem(t, r, 429, "")
			if r.Header.Get("Retry-After") == "" {
				t.Fatalf("no Retry-After: %v", r.Header)
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "dee@example.com", "password": goodPassword}}), 429, "")
			env.Clock.Advance(time.Minute)
			env.Call(put, "/v1/users/me/password", key, map[string]any{"currentPassword": goodPassword, "newPassword": "another passphrase"}, 204)
		})
		t.Run("deactivation ends sessions; a deactivated user cannot sign in", func(t *testing.T) {
			key := invitee(t, env, "cy@example.com", goodPassword, "INSPECTOR")
			s := signIn(t, env, "cy@example.com", goodPassword)
			id := env.Call(get, "/v1/users/me", key, nil, 200).JSON()["id"].(string)
			env.Call(patch, "/v1/users/"+id, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
			tu.Problem(t, s.do(env, get, "/v1/users/me", nil, false), 401, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "cy@example.com", "password": goodPassword}}), 401, "")
			// Active again: the old session stays ended; the password signs in anew.
			env.Call(patch, "/v1/users/"+id, env.AdminKey, map[string]any{"status": "ACTIVE"}, 200)
			tu.Problem(t, s.do(env, get, "/v1/users/me", nil, false), 401, "")
			signIn(t, env, "cy@example.com", goodPassword)
		})
		t.Run("the sweep deletes ended sessions", func(t *testing.T) {
			signIn(t, env, "ana@example.com", "a brand new passphrase")
			env.Clock.Advance(4 * time.Hour)
			if _, err := env.Service.Sweep(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n := env.RawInt(`SELECT count(*) FROM sessions`); n != 0 {
				t.Fatalf("%d sessions after the sweep", n)
			}
		})
	})
}

// An email in two orgs signs in to the one named, else the most recently
// used of those where it can sign in.
func TestSignInPicksTheOrg(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		invitee(t, env, "ana@example.com", goodPassword)
		otherAdmin := env.NewOrg("Globex")
		inv := env.Call(post, "/v1/invites", otherAdmin, map[string]any{"email": "ana@example.com"}, 201).JSON()
		anaThere := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"], "password": goodPassword}, 201).JSON()["user"].(map[string]any)["id"].(string)
		globex := env.Call(get, "/v1/organizations", otherAdmin, nil, 200).JSON()["id"].(string)
		orgOf := func(body map[string]any) any {
			env.Clock.Advance(time.Minute)
			return env.Call(post, "/v1/sessions", "", body, 201).JSON()["user"].(map[string]any)["orgId"]
		}
		if got := orgOf(map[string]any{"email": "ana@example.com", "password": goodPassword, "orgId": env.OrgID}); got != env.OrgID {
			t.Fatalf("orgId %s picked %v", env.OrgID, got)
		}
		orgOf(map[string]any{"email": "ana@example.com", "password": goodPassword, "orgId": globex})
		if got := orgOf(map[string]any{"email": "ana@example.com", "password": goodPassword}); got != globex {
			t.Fatalf("the most recently used org is %s; got %v", globex, got)
		}
		// Offboarded from Globex, Ana still signs in to Acme without naming it.
		env.Call(patch, "/v1/users/"+anaThere, otherAdmin, map[string]any{"status": "DEACTIVATED"}, 200)
		if got := orgOf(map[string]any{"email": "ana@example.com", "password": goodPassword}); got != env.OrgID {
			t.Fatalf("after deactivation in the most recent org: %v", got)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "ana@example.com", "password": goodPassword, "orgId": globex}}), 401, "")
	})
}

// 10,000 wrong sign-ins from one address must not slow another user's
// sign-in: past the address's burst (20) they are refused before any
// hashing. Each round times the user's sign-ins alone (the baseline), then
// while 10,000 wrong ones arrive from one address: first from a fresh
// address (its first 20 are hashed), then from the same address again (all
// refused). Each ratio is the mean sign-in time during the attack over the
// baseline's. The attacker sends one at a time, or 4 at once (on 2 cores a
// flood that takes the CPU whatever it asks: the control floods as many
// GET /healthz, which no sign-in logic touches).
func BenchmarkSignInUnderAttack(b *testing.B) {
	env := tu.NewEnv(b, sqlstore.SQLite)
	invitee(b, env, "ana@example.com", goodPassword)
	victim := func() time.Duration {
		start := time.Now()
		if w := signInFrom(env, "10.0.0.2", "ana@example.com", goodPassword); w.Code != 201 {
			b.Fatal(w.Code, w.Body)
		}
		return time.Since(start)
	}
	type mean struct {
		sum time.Duration
		n   int
	}
	ms := func(m mean) float64 { return float64(m.sum.Microseconds()) / 1000 / float64(max(m.n, 1)) }
	// flood sends 10,000 requests (send(i) reports a refusal) from
	// conc goroutines while timing the victim's sign-ins; it returns the refusals.
	flood := func(m *mean, conc int, send func(i int64) bool) int64 {
		var left, refused atomic.Int64
		left.Store(10000)
		var wg sync.WaitGroup
		for range conc {
			wg.Go(func() {
				for i := left.Add(-1); i >= 0; i = left.Add(-1) {
					if send(i) {
						refused.Add(1)
					}
				}
			})
		}
		for left.Load() > 0 {
			m.sum += victim()
			m.n++
		}
		wg.Wait()
		return refused.Load()
	}
	guess := func(i int64) bool {
		return signInFrom(env, "10.0.0.66", "victim"+strconv.Itoa(int(i%26))+"@example.com", "guess guess guess").Code == 429
	}
	health := func(int64) bool {
		req := httptest.NewRequest(get, "/healthz", nil)
		req.RemoteAddr = "10.0.0.67:1234"
		env.Server.Config.Handler.ServeHTTP(httptest.NewRecorder(), req)
		return false
	}
	for _, conc := range []int{1, 4} {
		b.Run(strconv.Itoa(conc)+"_at_a_time", func(b *testing.B) {
			var base, fresh, throttled, control mean
			for b.Loop() {
				for range 10 {
					base.sum += victim()
					base.n++
				}
				if n := flood(&fresh, conc, guess); n < 10000-20 {
					b.Fatalf("%d of 10,000 wrong sign-ins from a fresh address refused unhashed", n)
				}
				if n := flood(&throttled, conc, guess); n != 10000 {
					b.Fatalf("%d of 10,000 wrong sign-ins from a throttled address refused unhashed", n)
				}
				flood(&control, conc, health)
				env.Clock.Advance(time.Hour) // the address's bucket is full again
			}
			b.ReportMetric(ms(base), "baseline-ms")
			b.ReportMetric(ms(fresh)/ms(base), "ratio-fresh")
			b.ReportMetric(ms(throttled)/ms(base), "ratio-throttled")
			b.ReportMetric(ms(control)/ms(base), "ratio-healthz-flood")
		})
	}
}

// signInFrom signs in as a client at addr (the handler sees it as the peer).
func signInFrom(env *tu.Env, addr, email, password string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(post, "/v1/sessions", strings.NewReader(`{"email":"`+email+`","password":"`+password+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = net.JoinHostPort(addr, "1234")
	w := httptest.NewRecorder()
	env.Server.Config.Handler.ServeHTTP(w, req)
	return w
}

// Failed sign-ins are throttled per client address: past its burst an
// address is refused before any hashing, even when its guesses arrive all
// at once; other addresses are not.
func TestSessionThrottlePerAddress(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Sessions: wps.SessionConfig{AddressBurst: 5, AccountBurst: 1000}})
		invitee(t, env, "ana@example.com", goodPassword)

		t.Run("one guess after another", func(t *testing.T) {
			for i := range 5 {
				if w := signInFrom(env, "10.0.0.1", "guess"+strconv.Itoa(i)+"@example.com", "guess guess guess"); w.Code != 401 {
					t.Fatalf("guess %d: %d %s", i, w.Code, w.Body)
				}
			}
			w := signInFrom(env, "10.0.0.1", "ana@example.com", goodPassword)
			if w.Code != 429 || w.Header().Get("Retry-After") != "10" {
				t.Fatalf("after the burst: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
			}
			if w := signInFrom(env, "10.0.0.2", "ana@example.com", goodPassword); w.Code != 201 {
				t.Fatalf("another address: %d %s", w.Code, w.Body)
			}
			env.Clock.Advance(10 * time.Second)
			if w := signInFrom(env, "10.0.0.1", "ana@example.com", goodPassword); w.Code != 201 {
				t.Fatalf("after the refill: %d %s", w.Code, w.Body)
			}
		})
		t.Run("an IPv6 client's /64 counts as one address", func(t *testing.T) {
			for i := range 5 {
				if w := signInFrom(env, "2001:db8:0:1::"+strconv.Itoa(i+1), "guess"+strconv.Itoa(i)+"@example.com", "guess guess guess"); w.Code != 401 {
					t.Fatalf("guess %d: %d %s", i, w.Code, w.Body)
				}
			}
			if w := signInFrom(env, "2001:db8:0:1:ffff::99", "ana@example.com", goodPassword); w.Code != 429 {
				t.Fatalf("another address of the same /64: %d %s", w.Code, w.Body)
			}
			if w := signInFrom(env, "2001:db8:0:2::1", "ana@example.com", goodPassword); w.Code != 201 {
				t.Fatalf("another /64: %d %s", w.Code, w.Body)
			}
		})
		t.Run("guesses sent at once", func(t *testing.T) {
			codes := make(chan int, 40)
			var wg sync.WaitGroup
			for i := range cap(codes) {
				wg.Go(func() {
					codes <- signInFrom(env, "10.0.0.3", "guess"+strconv.Itoa(i)+"@example.com", "guess guess guess").Code
				})
			}
			wg.Wait()
			close(codes)
			n := map[int]int{}
			for c := range codes {
				n[c]++
			}
			if n[401] > 5 || n[401]+n[429] != cap(codes) {
				t.Fatalf("40 guesses at once from one address, burst 5: %v", n)
			}
		})
	})
}

// A wrong password and an unknown email take about the same time: both
// check one hash (medians of alternating tries, within a factor of 2).
func TestSignInTimesAlike(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Sessions: wps.SessionConfig{AccountBurst: 1000, AddressBurst: 1000}})
		invitee(t, env, "ana@example.com", goodPassword)
		took := func(email string) time.Duration {
			start := time.Now()
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": email, "password": "not the password"}}), 401, "")
			return time.Since(start)
		}
		var wrong, unknown []time.Duration
		for range 9 {
			wrong = append(wrong, took("ana@example.com"))
			unknown = append(unknown, took("nobody@example.com"))
		}
		median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
		w, u := median(wrong), median(unknown)
		if r := float64(u) / float64(w); r < 0.5 || r > 2 {
			t.Fatalf("median wrong password %v, unknown email %v (ratio %.2f)", w, u, r)
		}
		t.Logf("median wrong password %v, unknown email %v", w, u)
	})
}

// The session cookie is Secure when the request came over TLS, or always
// with SecureCookies (TLS ending at a proxy in front).
func TestSessionCookieSecure(t *testing.T) {
	secure := func(env *tu.Env, url string) bool {
		req := httptest.NewRequest(post, url, strings.NewReader(`{"email":"ana@example.com","password":"`+goodPassword+`"}`))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		env.Server.Config.Handler.ServeHTTP(w, req)
		if w.Code != 201 {
			t.Fatalf("sign in: %d %s", w.Code, w.Body)
		}
		return strings.Contains(w.Header().Get("Set-Cookie"), "; Secure")
	}
	env := tu.NewEnv(t, sqlstore.SQLite)
	invitee(t, env, "ana@example.com", goodPassword)
	if !secure(env, "https://wps.example/v1/sessions") || secure(env, "http://wps.example/v1/sessions") {
		t.Fatal("Secure should follow TLS")
	}
	proxied := tu.NewEnv(t, sqlstore.SQLite, tu.Options{API: httpapi.Options{SecureCookies: true}})
	invitee(t, proxied, "ana@example.com", goodPassword)
	if !secure(proxied, "http://wps.example/v1/sessions") {
		t.Fatal("SecureCookies: the cookie is not Secure over plain HTTP")
	}
}
