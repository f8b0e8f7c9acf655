package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// A step that opens posts one Slack text and one Teams card through the
// webhook worker, unsigned, with the console's link and no parameter
// value; a failing channel is retried; another org's channel is out of
// reach.
func TestChatChannels(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Mail: wps.MailConfig{PublicURL: "https://wps.example.com"}})
		rcv := newReceiver(t)

		t.Run("create, list, get, delete and what is refused", func(t *testing.T) {
			c := env.Call("POST", "/v1/chat-channels", env.AdminKey, map[string]any{"kind": "slack", "url": rcv.srv.URL + "/x", "events": []string{"work.overdue"}}, 201).JSON()
			id := c["id"].(string)
			if c["kind"] != "slack" || c["events"].([]any)[0] != "work.overdue" {
				t.Fatalf("created: %v", c)
			}
			if got := env.Call("GET", "/v1/chat-channels/"+id, env.AdminKey, nil, 200).JSON(); got["url"] != rcv.srv.URL+"/x" {
				t.Fatalf("get: %v", got)
			}
			if l := env.Call("GET", "/v1/chat-channels", env.AdminKey, nil, 200).JSON()["data"].([]any); len(l) != 1 {
				t.Fatalf("list: %v", l)
			}
			env.Call("DELETE", "/v1/chat-channels/"+id, env.AdminKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: "GET", Path: "/v1/chat-channels/" + id, Key: env.AdminKey}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: "DELETE", Path: "/v1/chat-channels/" + id, Key: env.AdminKey}), 404, "")
			for name, body := range map[string]map[string]any{
				"kind":      {"kind": "discord", "url": rcv.srv.URL},
				"url":       {"kind": "teams", "url": "ftp://example.com/x"},
				"events[0]": {"kind": "teams", "url": rcv.srv.URL, "events": []string{"step.overdue"}},
			} {
				tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/chat-channels", Key: env.AdminKey, Body: body}), 422, name)
			}
			strict := tu.NewEnv(t, engine, tu.Options{RefusePrivateWebhooks: true})
			tu.Problem(t, strict.Do(tu.Request{Method: "POST", Path: "/v1/chat-channels", Key: strict.AdminKey,
				Body: map[string]any{"kind": "slack", "url": "http://127.0.0.1:9/hook"}}), 422, "url")
			tu.Problem(t, strict.Do(tu.Request{Method: "POST", Path: "/v1/chat-channels", Key: strict.AdminKey,
				Body: map[string]any{"kind": "slack", "url": "http://10.1.2.3/hook"}}), 422, "url")
		})

		t.Run("a step opening posts one Slack text and one Teams card", func(t *testing.T) {
			env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
			p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Furnace", "steps": []map[string]any{
				{"label": "Measure", "policyNames": []string{"Admins"}, "parameters": []map[string]any{{"name": "serial", "type": "TEXT"}}},
				{"label": "Approve", "policyNames": []string{"Admins"}, "deadline": "2", "deadlineType": "HOURS"},
			}}, 201).JSON()
			slack := env.Call("POST", "/v1/chat-channels", env.AdminKey, map[string]any{"kind": "slack", "url": rcv.srv.URL + "/slack"}, 201).JSON()
			env.Call("POST", "/v1/chat-channels", env.AdminKey, map[string]any{"kind": "teams", "url": rcv.srv.URL + "/teams", "events": []string{"work.waiting"}}, 201)
			rcv.script["/teams"] = []int{503} // fails once, then is retried

			// Another org's channel is neither listed nor reachable, and is told nothing.
			otherKey := env.NewOrg("Other")
			env.Call("POST", "/v1/chat-channels", otherKey, map[string]any{"kind": "slack", "url": rcv.srv.URL + "/other"}, 201)
			tu.Problem(t, env.Do(tu.Request{Method: "GET", Path: "/v1/chat-channels/" + slack["id"].(string), Key: otherKey}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: "DELETE", Path: "/v1/chat-channels/" + slack["id"].(string), Key: otherKey}), 404, "")
			if l := env.Call("GET", "/v1/chat-channels", otherKey, nil, 200).JSON()["data"].([]any); len(l) != 1 {
				t.Fatalf("the other org lists %v", l)
			}

			m := env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"], "parameters": map[string]any{"serial": "SECRET-4711"}}, 201).JSON()
			link := "https://wps.example.com/measurements/" + m["id"].(string)
			w := worker(env)
			drain(t, env, w)
			if got := rcv.received("/teams"); len(got) != 0 {
				t.Fatalf("the 503 was counted as delivered: %v", got)
			}
			env.Clock.Advance(2 * time.Second)
			tu.Await(t, "the Teams card retried", func() error {
				drain(t, env, w)
				if len(rcv.received("/teams")) == 0 {
					return fmt.Errorf("not received")
				}
				return nil
			})
			s, tm := rcv.received("/slack"), rcv.received("/teams")
			if len(s) != 1 || len(tm) != 1 {
				t.Fatalf("slack %d, teams %d messages", len(s), len(tm))
			}
			var sb struct{ Text string }
			if err := json.Unmarshal(s[0].body, &sb); err != nil || !strings.HasPrefix(sb.Text, "Waiting: Approve of ") ||
				!strings.Contains(sb.Text, "Furnace") || !strings.Contains(sb.Text, "due ") || !strings.Contains(sb.Text, link) {
				t.Fatalf("slack body %s", s[0].body)
			}
			var card map[string]string
			if err := json.Unmarshal(tm[0].body, &card); err != nil || card["@type"] != "MessageCard" || card["@context"] != "https://schema.org/extensions" ||
				!strings.HasPrefix(card["summary"], "Waiting: Approve") || !strings.Contains(card["text"], link) {
				t.Fatalf("teams body %s", tm[0].body)
			}
			for _, r := range append(s, tm...) {
				if strings.Contains(string(r.body), "SECRET-4711") || r.signature != "" {
					t.Fatalf("a chat message carries a value or a signature: %s %q", r.body, r.signature)
				}
			}
			if got := rcv.received("/other"); len(got) != 0 {
				t.Fatalf("another org's channel was told: %v", got)
			}
			// Past its deadline: one work.overdue, to the channel that wants it.
			env.Clock.Advance(3 * time.Hour)
			if n, err := env.Service.NotifyOverdue(context.Background()); err != nil || n != 1 {
				t.Fatalf("overdue pass: %d, %v", n, err)
			}
			drain(t, env, w)
			if s := rcv.received("/slack"); len(s) != 2 || !strings.Contains(string(s[1].body), `"Overdue: Approve of `) || !strings.Contains(string(s[1].body), link) {
				t.Fatalf("slack after the deadline: %v", s)
			}
			if tm := rcv.received("/teams"); len(tm) != 1 {
				t.Fatalf("teams, which wants work.waiting only, got %d", len(tm))
			}
			// The deliveries log shows them, with their channel.
			list := env.Call("GET", "/v1/webhook-deliveries?perPage=100", env.AdminKey, nil, 200).JSON()["data"].([]any)
			n := 0
			for _, d := range list {
				if d := d.(map[string]any); d["eventType"] == "work.waiting" {
					n++
					if d["status"] != "SUCCEEDED" {
						t.Fatalf("delivery %v", d)
					}
				}
			}
			if n != 2 {
				t.Fatalf("%d work.waiting deliveries", n)
			}
		})
	})
}
