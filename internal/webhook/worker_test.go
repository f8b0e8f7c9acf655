package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/webhook"
	"wps/internal/wps"
)

// receiver records what it is sent and answers with the next scripted
// status (200 when the script is empty).
type receiver struct {
	mu     sync.Mutex
	got    []received
	script map[string][]int // path → statuses
	srv    *httptest.Server
	block  chan struct{} // when set, the first request waits on it
	seen   chan struct{}
}

type received struct {
	path, id, timestamp, signature string
	body                           []byte
	event                          map[string]any
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{script: map[string][]int{}, seen: make(chan struct{}, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rec := received{path: req.URL.Path, id: req.Header.Get("webhook-id"), timestamp: req.Header.Get("webhook-timestamp"),
			signature: req.Header.Get("webhook-signature"), body: body}
		_ = json.Unmarshal(body, &rec.event)
		r.mu.Lock()
		block := r.block
		r.block = nil
		r.mu.Unlock()
		r.seen <- struct{}{}
		if block != nil {
			select {
			case <-block:
			case <-req.Context().Done():
				return
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		status := 200
		if s := r.script[req.URL.Path]; len(s) > 0 {
			status, r.script[req.URL.Path] = s[0], s[1:]
		}
		if status < 300 {
			r.got = append(r.got, rec)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// received lists what path got, of the given event types (all when none).
func (r *receiver) received(path string, types ...string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, g := range r.got {
		if g.path == path && (len(types) == 0 || slices.Contains(types, g.event["type"].(string))) {
			out = append(out, g)
		}
	}
	return out
}

func (r received) String() string { return r.path + " " + r.id + " " + fmt.Sprint(r.event["type"]) }

// verify checks a signature the way the Standard Webhooks scheme defines
// it, written here without the library the service uses.
func verify(t *testing.T, secret string, r received) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.id + "." + r.timestamp + "." + string(r.body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(r.signature) {
		if sig == want {
			return
		}
	}
	t.Fatalf("signature %q does not verify with %s", r.signature, secret)
}

// fixture: a process whose first step sends its events to the receiver's
// /step, and an org subscription to /org.
func fixture(t *testing.T, env *tu.Env, rcv *receiver) (processID string) {
	t.Helper()
	env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
	p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Hooked", "steps": []map[string]any{
		{"label": "One", "policyNames": []string{"Admins"}, "webhookUrls": rcv.srv.URL + "/step"},
		{"label": "Two", "policyNames": []string{"Admins"}},
	}}, 201).JSON()
	return p["id"].(string)
}

func worker(env *tu.Env) *webhook.Worker {
	// An attempt waits for the test's receiver however busy the machine.
	return webhook.New(env.DB, webhook.Config{Now: env.Clock.Now, AllowPrivate: true, BaseDelay: time.Second, Lease: time.Minute,
		Timeout: time.Until(tu.Deadline(env.T))})
}

func drain(t *testing.T, env *tu.Env, w *webhook.Worker) {
	t.Helper()
	for range 20 {
		n, err := w.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func TestDeliverySignedRetriedAndGivenUp(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		rcv := newReceiver(t)
		proc := fixture(t, env, rcv)
		hook := env.Call("POST", "/v1/webhooks", env.AdminKey, map[string]any{"url": rcv.srv.URL + "/org", "events": []string{"measurement.created"}}, 201).JSON()
		secret := hook["secret"].(string)
		gone := env.Call("POST", "/v1/webhooks", env.AdminKey, map[string]any{"url": rcv.srv.URL + "/gone"}, 201).JSON()
		if !strings.HasPrefix(secret, "whsec_") || gone["secret"] != secret {
			t.Fatalf("secret %q", secret)
		}
		rcv.script["/org"] = []int{500}
		rcv.script["/gone"] = []int{410}

		env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc}, 201)
		w := worker(env)
		drain(t, env, w)
		// /step got action.created and step.consensed; /org failed with 500 and waits.
		if got := rcv.received("/step"); len(got) != 2 || got[0].event["type"] != "action.created" || got[1].event["type"] != "step.consensed" {
			t.Fatalf("step deliveries: %v", got)
		}
		if len(rcv.received("/org")) != 0 {
			t.Fatal("the 500 was counted as delivered")
		}
		env.Clock.Advance(2 * time.Second)
		drain(t, env, w)
		org := rcv.received("/org")
		if len(org) != 1 || org[0].event["type"] != "measurement.created" {
			t.Fatalf("org deliveries after the retry: %v", org)
		}
		verify(t, secret, org[0])
		verify(t, secret, rcv.received("/step")[0])
		ev := org[0].event
		if ev["orgId"] != env.OrgID || ev["id"] != org[0].id || ev["data"].(map[string]any)["measurementId"] == nil {
			t.Fatalf("payload: %v", ev)
		}

		list := env.Call("GET", "/v1/webhook-deliveries?perPage=100", env.AdminKey, nil, 200).JSON()["data"].([]any)
		byURL := map[string]map[string]any{}
		for _, d := range list {
			dm := d.(map[string]any)
			if dm["eventType"] == "measurement.created" || dm["eventType"] == "action.created" {
				byURL[strings.TrimPrefix(dm["url"].(string), rcv.srv.URL)+" "+dm["eventType"].(string)] = dm
			}
		}
		orgD := byURL["/org measurement.created"]
		if orgD["status"] != "SUCCEEDED" || orgD["attempts"] != 2.0 || len(orgD["attemptLog"].([]any)) != 2 ||
			orgD["attemptLog"].([]any)[0].(map[string]any)["statusCode"] != 500.0 {
			t.Fatalf("org delivery: %v", orgD)
		}
		goneD := byURL["/gone measurement.created"]
		if goneD["status"] != "GIVEN_UP" || goneD["attempts"] != 1.0 || goneD["lastStatusCode"] != 410.0 {
			t.Fatalf("410 delivery: %v", goneD)
		}
		// A given-up delivery can be sent again by hand.
		retried := env.Call("POST", "/v1/webhook-deliveries/"+goneD["id"].(string)+":retry", env.AdminKey, nil, 200).JSON()
		if retried["status"] != "PENDING" {
			t.Fatalf("retry: %v", retried)
		}
		drain(t, env, w)
		if got := rcv.received("/gone"); len(got) < 1 {
			t.Fatalf("the retried delivery did not arrive")
		}
		tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/webhook-deliveries/nope:retry", Key: env.AdminKey}), 404, "")
	})
}

func TestDeliveryOrderPerMeasurement(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		rcv := newReceiver(t)
		proc := fixture(t, env, rcv)
		env.Call("POST", "/v1/webhooks", env.AdminKey, map[string]any{"url": rcv.srv.URL + "/all"}, 201)
		rcv.script["/all"] = []int{503, 503}
		m := env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc}, 201).JSON()
		two := m["process"].(map[string]any)["steps"].([]any)[1].(map[string]any)["id"].(string)
		env.Call("POST", "/v1/measurements/"+m["id"].(string)+"/actions", env.AdminKey, map[string]any{"stepId": two, "type": "APPROVAL"}, 201)
		w := worker(env)
		for range 6 {
			drain(t, env, w)
			env.Clock.Advance(10 * time.Second)
		}
		var types []string
		for _, r := range rcv.received("/all") {
			types = append(types, r.event["type"].(string))
		}
		want := "measurement.created action.created step.consensed action.created step.consensed measurement.approved"
		if strings.Join(types, " ") != want {
			t.Fatalf("order: %v\nwant   %s", types, want)
		}
	})
}

func TestSecretRotationSignsWithBoth(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	rcv := newReceiver(t)
	proc := fixture(t, env, rcv)
	old := env.Call("GET", "/v1/webhooks/secret", env.AdminKey, nil, 200).JSON()["secret"].(string)
	rot := env.Call("POST", "/v1/webhooks/secret:rotate", env.AdminKey, nil, 200).JSON()
	if rot["secret"] == old || rot["previous"] != old {
		t.Fatalf("rotation: %v", rot)
	}
	env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc}, 201)
	drain(t, env, worker(env))
	got := rcv.received("/step", "action.created")
	if len(got) != 1 || len(strings.Fields(got[0].signature)) != 2 {
		t.Fatalf("signatures: %v", got)
	}
	verify(t, old, got[0])
	verify(t, rot["secret"].(string), got[0])
}

// A receiver whose address the guard refuses fails at once, with the
// reason, instead of being retried for a day.
func TestPrivateTargetRefusedWhenDialled(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	rcv := newReceiver(t)
	proc := fixture(t, env, rcv) // saved by a server that allows 127.0.0.1
	env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc}, 201)
	strict := webhook.New(env.DB, webhook.Config{Now: env.Clock.Now, AllowPrivate: false})
	if _, err := strict.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rcv.received("/step")) != 0 {
		t.Fatal("a loopback receiver was called")
	}
	list := env.Call("GET", "/v1/webhook-deliveries", env.AdminKey, nil, 200).JSON()["data"].([]any)
	oldest := list[len(list)-1].(map[string]any)
	if e := oldest["lastError"].(string); oldest["attempts"] != 1.0 || !strings.HasPrefix(e, "refused: ") || !strings.Contains(e, "127.0.0.1") ||
		oldest["status"] != "GIVEN_UP" {
		t.Fatalf("refused delivery: %v", oldest)
	}
}

// A worker stopped mid-delivery leaves the event to be delivered after the
// restart; a worker that died holding a claim frees it when the lease ends.
func TestDeliverySurvivesRestart(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		rcv := newReceiver(t)
		proc := fixture(t, env, rcv)
		rcv.block = make(chan struct{})
		env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc}, 201)

		first := worker(env)
		first.Start(context.Background())
		<-rcv.seen // the receiver holds the request
		first.Stop()
		if len(rcv.received("/step")) != 0 {
			t.Fatal("delivered before the restart")
		}
		drain(t, env, worker(env))
		if got := rcv.received("/step", "action.created"); len(got) != 1 {
			t.Fatalf("after restart: %v", got)
		}

		// A claim held by a dead worker: nothing until its lease ends.
		env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc}, 201)
		now := wps.At(env.Clock.Now())
		if err := env.DB.Write(context.Background(), func(tx wps.Tx) error {
			ids, err := tx.DueDeliveries(now, 10, 10)
			if err == nil {
				_, err = tx.ClaimDeliveries(ids, now, wps.At(now.Add(time.Minute)))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		w := worker(env)
		drain(t, env, w)
		if got := rcv.received("/step", "action.created"); len(got) != 1 {
			t.Fatalf("a held claim was delivered: %v", got)
		}
		env.Clock.Advance(2 * time.Minute)
		drain(t, env, w)
		if got := rcv.received("/step", "action.created"); len(got) != 2 {
			t.Fatalf("after the lease: %v", got)
		}
	})
}
