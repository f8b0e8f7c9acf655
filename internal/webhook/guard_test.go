package webhook_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// Every spelling of a private address is refused when a webhook or a step's
// webhookUrls is saved (422 naming the field), as a resolver would read it.
func TestPrivateURLsRefusedWhenSaved(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{RefusePrivateWebhooks: true})
		hook := env.Call("POST", "/v1/webhooks", env.AdminKey, map[string]any{"url": "https://hooks.example.com/wps"}, 201).JSON()
		for _, u := range []string{
			"http://LOCALHOST/x", "http://localhost./x", "http://127.1/x", "http://2130706433/x", "http://0x7f000001/x",
			"http://017700000001/x", "http://127.0.0.1:9/x", "http://[::ffff:127.0.0.1]/x", "http://0/x", "http://169.254.169.254/latest",
		} {
			tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/webhooks", Key: env.AdminKey, Body: map[string]any{"url": u}}), 422, "url")
			tu.Problem(t, env.Do(tu.Request{Method: "PATCH", Path: "/v1/webhooks/" + hook["id"].(string), Key: env.AdminKey, Body: map[string]any{"url": u}}), 422, "url")
			tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "P " + url.PathEscape(u),
				"steps": []map[string]any{{"label": "One", "webhookUrls": "https://hooks.example.com/ok," + u}}}}), 422, "steps[0].webhookUrls")
		}
		env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Public",
			"steps": []map[string]any{{"label": "One", "webhookUrls": "https://hooks.example.com/ok"}}}, 201)
	})
}

// Deleting a webhook cancels its pending deliveries, the one in flight
// included (its failure is recorded, and it is not retried): none is sent
// again, and none can be retried by hand.
func TestDeletingWebhookCancelsItsDeliveries(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		rcv := newReceiver(t)
		proc := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Plain", "steps": []map[string]any{{"label": "One"}}}, 201).JSON()["id"]
		hook := env.Call("POST", "/v1/webhooks", env.AdminKey, map[string]any{"url": rcv.srv.URL + "/org", "events": []string{"measurement.created"}}, 201).JSON()
		// The first delivery is in flight, held by the receiver, and the
		// second waits for the worker, when the webhook is deleted.
		release := make(chan struct{})
		rcv.block, rcv.script["/org"] = release, []int{500}
		env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc}, 201)
		w := worker(env)
		w.Start(context.Background())
		<-rcv.seen
		env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc}, 201)
		env.Call("DELETE", "/v1/webhooks/"+hook["id"].(string), env.AdminKey, nil, 204)
		deliveries := func() []map[string]any {
			var out []map[string]any
			for _, d := range env.Call("GET", "/v1/webhook-deliveries?perPage=100", env.AdminKey, nil, 200).JSON()["data"].([]any) {
				if dm := d.(map[string]any); dm["webhookId"] == hook["id"] {
					out = append(out, dm)
				}
			}
			return out
		}
		close(release)
		var got []map[string]any
		tu.Await(t, "the attempt in flight to be logged", func() error {
			if got = deliveries(); len(got) == 2 && len(got[1]["attemptLog"].([]any)) == 0 {
				return fmt.Errorf("deliveries %v", got)
			}
			return nil
		})
		w.Stop()
		if len(got) != 2 {
			t.Fatalf("deliveries of the webhook: %v", got)
		}
		if inFlight := got[1]; inFlight["attempts"] != 1.0 || inFlight["attemptLog"].([]any)[0].(map[string]any)["statusCode"] != 500.0 {
			t.Fatalf("the delivery in flight: %v", inFlight)
		}
		for _, d := range got {
			if d["status"] != "CANCELLED" || d["lastError"] != "cancelled: its webhook was deleted" {
				t.Fatalf("after the delete: %v", d)
			}
			tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/webhook-deliveries/" + d["id"].(string) + ":retry", Key: env.AdminKey}), 409, "")
		}
		before := len(rcv.received("/org"))
		env.Clock.Advance(time.Hour)
		drain(t, env, w)
		if after := len(rcv.received("/org")); after != before {
			t.Fatalf("a cancelled delivery went out: %d then %d", before, after)
		}
		if n := len(env.Call("GET", "/v1/webhook-deliveries?status=CANCELLED", env.AdminKey, nil, 200).JSON()["data"].([]any)); n != 2 {
			t.Fatalf("?status=CANCELLED lists %d", n)
		}
	})
}
