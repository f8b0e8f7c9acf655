package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// auditEvents reads every audit event that query matches (all pages, with
// key), and the raw bodies of the answers.
func auditEvents(t *testing.T, env *tu.Env, key, query string) ([]map[string]any, []string) {
	t.Helper()
	var out []map[string]any
	var raw []string
	for page := 1; ; page++ {
		r := env.Call(get, fmt.Sprintf("/v1/audit-events?perPage=100&page=%d&%s", page, query), key, nil, 200)
		raw = append(raw, string(r.Body))
		body := r.JSON()
		for _, e := range body["data"].([]any) {
			out = append(out, e.(map[string]any))
		}
		if body["meta"].(map[string]any)["next"] == nil {
			return out, raw
		}
	}
}

// oneEvent is the only event of type about target (its id), checked to be
// by actor (a user id).
func oneEvent(t *testing.T, env *tu.Env, typ, actor, target string) map[string]any {
	t.Helper()
	list, _ := auditEvents(t, env, env.AdminKey, "type="+url.QueryEscape(typ)+"&targetId="+url.QueryEscape(target))
	if len(list) != 1 {
		t.Fatalf("%s of %s: %d events: %v", typ, target, len(list), list)
	}
	e := list[0]
	if a := e["actor"].(map[string]any); a["id"] != actor {
		t.Fatalf("%s: actor %v, want %s", typ, a, actor)
	}
	if tg := e["target"].(map[string]any); tg["id"] != target || tg["kind"] == "" {
		t.Fatalf("%s: target %v", typ, tg)
	}
	return e
}

// change is the change of field in e.
func change(t *testing.T, e map[string]any, field string) map[string]any {
	t.Helper()
	c, ok := e["changes"].(map[string]any)[field].(map[string]any)
	if !ok {
		t.Fatalf("%s: no change of %s: %v", e["type"], field, e["changes"])
	}
	return c
}

func TestAuditEvents(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		admin := env.Call(get, "/v1/users/me", env.AdminKey, nil, 200).JSON()["id"].(string)
		org := env.Call(get, "/v1/organizations", env.AdminKey, nil, 200).JSON()["id"].(string)
		start := env.Clock.Now()
		var secrets []string // every secret the test makes: none may appear in an audit answer

		// The organization, its calendar.
		env.Call(post, "/v1/organizations", env.AdminKey, map[string]any{"themeColor": "#0A7F5A"}, 200)
		if c := change(t, oneEvent(t, env, "org.updated", admin, org), "themeColor"); c["after"] != "#0A7F5A" {
			t.Fatalf("org.updated: %v", c)
		}
		env.Call(put, "/v1/organizations/calendar", env.AdminKey, map[string]any{"timeZone": "Europe/Berlin"}, 200)
		if c := change(t, oneEvent(t, env, "calendar.updated", admin, org), "timeZone"); c["before"] != "UTC" || c["after"] != "Europe/Berlin" {
			t.Fatalf("calendar.updated: %v", c)
		}

		// Policies.
		pol := env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"},
			"functions": []string{"measurement:read"}}, 201).JSON()["id"].(string)
		if c := change(t, oneEvent(t, env, "policy.created", admin, pol), "name"); c["after"] != "Inspector" || c["before"] != nil {
			t.Fatalf("policy.created: %v", c)
		}
		env.Call(patch, "/v1/users/policies/"+pol, env.AdminKey, map[string]any{"name": "Inspector", "functions": []string{"measurement:read", "entity:read"}}, 200)
		if c := change(t, oneEvent(t, env, "policy.updated", admin, pol), "functions"); fmt.Sprint(c["before"]) != "[measurement:read]" ||
			fmt.Sprint(c["after"]) != "[entity:read measurement:read]" {
			t.Fatalf("policy.updated: %v", c)
		}

		// People: invited, joined (with a password and a first key), signed
		// in, renamed, given a role, their keys made and revoked, their
		// password changed.
		const password = "correct horse battery staple"
		secrets = append(secrets, password)
		inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "ana@example.com", "name": "Ana", "roles": []string{"INSPECTOR"}}, 201).JSON()
		secrets = append(secrets, inv["token"].(string))
		if c := change(t, oneEvent(t, env, "user.invited", admin, inv["id"].(string)), "email"); c["after"] != "ana@example.com" {
			t.Fatalf("user.invited: %v", c)
		}
		acc := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"], "password": password}, 201).JSON()
		ana := acc["user"].(map[string]any)["id"].(string)
		anaKey := acc["apiKey"].(map[string]any)["key"].(string)
		secrets = append(secrets, anaKey)
		if c := change(t, oneEvent(t, env, "user.joined", ana, ana), "roles"); fmt.Sprint(c["after"]) != "[INSPECTOR]" {
			t.Fatalf("user.joined: %v", c)
		}
		signedIn := env.Call(post, "/v1/sessions", "", map[string]any{"email": "ana@example.com", "password": password}, 201)
		for _, c := range signedIn.Header.Values("Set-Cookie") {
			if v, _, _ := strings.Cut(c, ";"); strings.Contains(v, "=") {
				_, val, _ := strings.Cut(v, "=")
				secrets = append(secrets, val)
			}
		}
		signIns, _ := auditEvents(t, env, env.AdminKey, "type=session.created&actorId="+ana)
		if len(signIns) != 1 || change(t, signIns[0], "method")["after"] != "password" {
			t.Fatalf("session.created: %v", signIns)
		}
		sess := session{csrf: signedIn.JSON()["csrfToken"].(string)}
		for _, c := range signedIn.Header.Values("Set-Cookie") {
			if strings.HasPrefix(c, "wps_session=") {
				sess.cookie = strings.SplitN(strings.TrimPrefix(c, "wps_session="), ";", 2)[0]
			}
		}
		if r := sess.do(env, del, "/v1/sessions/current", nil, true); r.Status != 204 {
			t.Fatalf("sign out: %d", r.Status)
		}
		signIn := signIns[0]["target"].(map[string]any)["id"].(string)
		if e := oneEvent(t, env, "session.ended", ana, signIn); e["target"].(map[string]any)["kind"] != "session" {
			t.Fatalf("session.ended: %v", e)
		}
		env.Call(put, "/v1/users/me/notifications", anaKey, map[string]any{"email": "daily"}, 200)
		env.Call(put, "/v1/users/me/notifications", anaKey, map[string]any{"email": "daily"}, 200) // no change: no event
		if c := change(t, oneEvent(t, env, "user.notifications_changed", ana, ana), "email"); c["before"] != "immediate" || c["after"] != "daily" {
			t.Fatalf("user.notifications_changed: %v", c)
		}
		env.Call(patch, "/v1/users/"+ana, env.AdminKey, map[string]any{"name": "Ana Lima"}, 200)
		if c := change(t, oneEvent(t, env, "user.updated", admin, ana), "name"); c["before"] != "Ana" || c["after"] != "Ana Lima" {
			t.Fatalf("user.updated: %v", c)
		}
		env.Call(post, "/v1/roles/assign", env.AdminKey, map[string]any{"role": "QA", "userId": ana}, 200)
		if c := change(t, oneEvent(t, env, "user.roles_changed", admin, ana), "roles"); fmt.Sprint(c["before"]) != "[INSPECTOR]" ||
			fmt.Sprint(c["after"]) != "[INSPECTOR QA]" {
			t.Fatalf("user.roles_changed: %v", c)
		}
		key := env.Call(post, "/v1/users/me/api-keys", anaKey, map[string]any{"name": "ci"}, 201).JSON()
		secrets = append(secrets, key["key"].(string))
		if e := oneEvent(t, env, "apikey.created", ana, key["id"].(string)); e["target"].(map[string]any)["name"] != "ci" {
			t.Fatalf("apikey.created: %v", e)
		}
		env.Call(del, "/v1/users/me/api-keys/"+key["id"].(string), anaKey, nil, 204)
		oneEvent(t, env, "apikey.revoked", ana, key["id"].(string))
		env.Call(put, "/v1/users/me/password", anaKey, map[string]any{"currentPassword": password, "newPassword": "another long passphrase"}, 204)
		secrets = append(secrets, "another long passphrase")
		if c := change(t, oneEvent(t, env, "user.password_changed", ana, ana), "password"); c["changed"] != true || len(c) != 1 {
			t.Fatalf("user.password_changed: %v", c)
		}

		// Processes: created, a step added (a new field-level change),
		// deleted, restored.
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Pump check", "steps": []map[string]any{
			{"label": "Inspect", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{{"name": "pressure", "type": "NUMBER"}}},
		}}, 201).JSON()
		procID := proc["id"].(string)
		if c := change(t, oneEvent(t, env, "process.created", admin, procID), "steps"); fmt.Sprint(c["added"]) != "[Inspect]" {
			t.Fatalf("process.created: %v", c)
		}
		step := proc["steps"].([]any)[0].(map[string]any)
		env.Call(patch, "/v1/process/"+procID, env.AdminKey, map[string]any{"label": "Pump inspection", "steps": []map[string]any{
			{"id": step["id"], "label": "Inspect", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
				{"name": "pressure", "type": "NUMBER"}, {"name": "temperature", "type": "NUMBER"}}},
			{"label": "Close", "policyNames": []string{"Inspector"}},
		}}, 200)
		upd := oneEvent(t, env, "process.updated", admin, procID)
		if c := change(t, upd, "label"); c["before"] != "Pump check" || c["after"] != "Pump inspection" {
			t.Fatalf("process.updated label: %v", c)
		}
		if c := change(t, upd, "steps"); fmt.Sprint(c["added"]) != "[Close]" || fmt.Sprint(c["updated"]) != "[Inspect: parameters (added temperature)]" {
			t.Fatalf("process.updated steps: %v", c)
		}
		env.Call(del, "/v1/process/"+procID, env.AdminKey, nil, 204)
		oneEvent(t, env, "process.deleted", admin, procID)
		env.Call(post, "/v1/process/"+procID+":restore", env.AdminKey, nil, 200)
		oneEvent(t, env, "process.restored", admin, procID)

		// Entities.
		ent := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Pump", "parameters": []map[string]any{{"name": "serial", "type": "TEXT"}}}, 201).JSON()
		entID := ent["id"].(string)
		if c := change(t, oneEvent(t, env, "entity.created", admin, entID), "parameters"); fmt.Sprint(c["added"]) != "[serial]" {
			t.Fatalf("entity.created: %v", c)
		}
		env.Call(patch, "/v1/entities/"+entID, env.AdminKey, map[string]any{"parameters": []map[string]any{{"name": "model", "type": "TEXT"}}}, 200)
		if c := change(t, oneEvent(t, env, "entity.updated", admin, entID), "parameters"); fmt.Sprint(c["added"]) != "[model]" || fmt.Sprint(c["removed"]) != "[serial]" {
			t.Fatalf("entity.updated: %v", c)
		}
		env.Call(del, "/v1/entities/"+entID, env.AdminKey, nil, 204)
		oneEvent(t, env, "entity.deleted", admin, entID)
		env.Call(post, "/v1/entities/"+entID+":restore", env.AdminKey, nil, 200)
		oneEvent(t, env, "entity.restored", admin, entID)

		// Its records: created, changed, deleted, each field before and
		// after; a value hidden from a policy is only said to change.
		env.Call(patch, "/v1/entities/"+entID, env.AdminKey, map[string]any{"parameters": []map[string]any{{"name": "model", "type": "TEXT"},
			{"name": "cost", "type": "NUMBER", "advancedOptions": map[string]any{"hiddenFrom": []string{"Inspector"}}}}}, 200)
		records := "/v1/entities/" + entID + "/records"
		rec := env.Call(post, records, env.AdminKey, map[string]any{"values": map[string]any{"model": "X1", "cost": 120}}, 201).JSON()["id"].(string)
		created := oneEvent(t, env, "record.created", admin, rec)
		if c := change(t, created, "model"); c["before"] != nil || c["after"] != "X1" || created["target"].(map[string]any)["name"] != "Pump" {
			t.Fatalf("record.created: %v", created)
		}
		if c := change(t, created, "cost"); c["changed"] != true || len(c) != 1 {
			t.Fatalf("record.created cost: %v", c)
		}
		env.Call(patch, records+"/"+rec, env.AdminKey, map[string]any{"values": map[string]any{"model": "X2"}}, 200)
		if e := oneEvent(t, env, "record.updated", admin, rec); fmt.Sprint(change(t, e, "model")) != "map[after:X2 before:X1]" || len(e["changes"].(map[string]any)) != 1 {
			t.Fatalf("record.updated: %v", e)
		}
		env.Call(del, records+"/"+rec, env.AdminKey, nil, 204)
		if c := change(t, oneEvent(t, env, "record.deleted", admin, rec), "model"); c["before"] != "X2" || c["after"] != nil {
			t.Fatalf("record.deleted: %v", c)
		}

		// Contract templates.
		tpl := env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": "Service note", "body": "# Note {{measurement.name}}"}, 201).JSON()["id"].(string)
		oneEvent(t, env, "contract_template.created", admin, tpl)
		env.Call(patch, "/v1/contract-templates/"+tpl, env.AdminKey, map[string]any{"name": "Service record"}, 200)
		if c := change(t, oneEvent(t, env, "contract_template.updated", admin, tpl), "name"); c["before"] != "Service note" || c["after"] != "Service record" {
			t.Fatalf("contract_template.updated: %v", c)
		}
		env.Call(del, "/v1/contract-templates/"+tpl, env.AdminKey, nil, 204)
		oneEvent(t, env, "contract_template.deleted", admin, tpl)

		// Webhooks, their secret, chat channels.
		hook := env.Call(post, "/v1/webhooks", env.AdminKey, map[string]any{"url": "http://127.0.0.1:9/hook"}, 201).JSON()
		secrets = append(secrets, hook["secret"].(string))
		if c := change(t, oneEvent(t, env, "webhook.created", admin, hook["id"].(string)), "url"); c["after"] != "http://127.0.0.1:9/hook" {
			t.Fatalf("webhook.created: %v", c)
		}
		rot := env.Call(post, "/v1/webhooks/secret:rotate", env.AdminKey, nil, 200).JSON()
		secrets = append(secrets, rot["secret"].(string))
		if c := change(t, oneEvent(t, env, "webhook.secret_rotated", admin, org), "secret"); c["changed"] != true || len(c) != 1 {
			t.Fatalf("webhook.secret_rotated: %v", c)
		}
		env.Call(del, "/v1/webhooks/"+hook["id"].(string), env.AdminKey, nil, 204)
		oneEvent(t, env, "webhook.deleted", admin, hook["id"].(string))
		const chatToken = "T000/B000/XXXXSECRETXXXX"
		secrets = append(secrets, chatToken)
		ch := env.Call(post, "/v1/chat-channels", env.AdminKey, map[string]any{"kind": "slack", "url": "http://127.0.0.1:9/services/" + chatToken}, 201).JSON()
		if c := change(t, oneEvent(t, env, "chat_channel.created", admin, ch["id"].(string)), "url"); c["changed"] != true {
			t.Fatalf("chat_channel.created: %v", c)
		}
		env.Call(del, "/v1/chat-channels/"+ch["id"].(string), env.AdminKey, nil, 204)
		oneEvent(t, env, "chat_channel.deleted", admin, ch["id"].(string))

		t.Run("no secret in any answer", func(t *testing.T) {
			_, raw := auditEvents(t, env, env.AdminKey, "")
			all := strings.Join(raw, "\n")
			for _, s := range secrets {
				if strings.Contains(all, s) {
					t.Fatalf("an audit answer shows a secret %q", s)
				}
			}
		})

		t.Run("filters and pages", func(t *testing.T) {
			mine, _ := auditEvents(t, env, env.AdminKey, "actorId="+ana)
			if len(mine) != 8 { // joined, its first key, signed in and out, mail preferences, a key made and revoked, the password changed
				t.Fatalf("ana's events: %d: %v", len(mine), mine)
			}
			about, _ := auditEvents(t, env, env.AdminKey, "targetId="+procID)
			if len(about) != 4 || about[0]["type"] != "process.restored" || about[3]["type"] != "process.created" {
				t.Fatalf("the process's events, newest first: %v", about)
			}
			all, _ := auditEvents(t, env, env.AdminKey, "")
			page := env.Call(get, "/v1/audit-events?perPage=2&page=2", env.AdminKey, nil, 200).JSON()
			meta := page["meta"].(map[string]any)
			if len(page["data"].([]any)) != 2 || meta["total"] != float64(len(all)) || page["data"].([]any)[0].(map[string]any)["id"] != all[2]["id"] {
				t.Fatalf("page 2: %v", page)
			}
			env.Clock.Advance(time.Hour)
			later := env.Clock.Now()
			env.Call(post, "/v1/organizations", env.AdminKey, map[string]any{"themeColor": "#000000"}, 200)
			q := "from=" + url.QueryEscape(later.Format(time.RFC3339Nano))
			if got, _ := auditEvents(t, env, env.AdminKey, q); len(got) != 1 || got[0]["type"] != "org.updated" {
				t.Fatalf("from: %v", got)
			}
			q = "from=" + url.QueryEscape(start.Format(time.RFC3339Nano)) + "&to=" + url.QueryEscape(later.Format(time.RFC3339Nano)) + "&type=org.updated"
			if got, _ := auditEvents(t, env, env.AdminKey, q); len(got) != 1 || change(t, got[0], "themeColor")["after"] != "#0A7F5A" {
				t.Fatalf("from and to: %v", got)
			}
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/audit-events?from=" + url.QueryEscape(later.Format(time.RFC3339)) +
				"&to=" + url.QueryEscape(start.Format(time.RFC3339)), Key: env.AdminKey}), 422, "to")
		})

		t.Run("audit:read is needed", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/audit-events", Key: anaKey}), 403, "")
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Auditors", "roles": []string{"QA"}, "functions": []string{"audit:read"}}, 201)
			env.Call(get, "/v1/audit-events", anaKey, nil, 200)
		})

		t.Run("the ledger covers them", func(t *testing.T) {
			integrate(t, env)
			n := auditTotal(env)
			if rep := verify(env); rep["ok"] != true || rep["checked"] != float64(n) || rep["actions"] != 0.0 {
				t.Fatalf("verify: %v", rep)
			}
			// An audit event edited, deleted or forged in the database is reported.
			env.RawExec(`UPDATE audit_events SET data = replace(data, 'Pump inspection', 'Pump inspectior') WHERE type = 'process.updated'`)
			if rep := verify(env); rep["ok"] != false || !strings.Contains(fmt.Sprint(rep["broken"]), "does not match its hash") {
				t.Fatalf("an edited audit event: %v", rep)
			}
			env.RawExec(`UPDATE audit_events SET data = replace(data, 'Pump inspectior', 'Pump inspection') WHERE type = 'process.updated'`)
			if rep := verify(env); rep["ok"] != true {
				t.Fatalf("restored: %v", rep)
			}
			env.RawExec(`INSERT INTO audit_events (org_id, id, type, at, actor_id, target_kind, target_id, leaf_hash, data)
				SELECT org_id, 'forged', type, at, actor_id, target_kind, target_id, leaf_hash, data FROM audit_events WHERE type = 'org.updated' AND data LIKE '%#000000%'`)
			if rep := verify(env); rep["ok"] != false || !strings.Contains(fmt.Sprint(rep["broken"]), "audit entries") {
				t.Fatalf("a forged audit event: %v", rep)
			}
			env.RawExec(`DELETE FROM audit_events WHERE id = 'forged' OR type = 'policy.created'`)
			if rep := verify(env); rep["ok"] != false || !strings.Contains(fmt.Sprint(rep["broken"]), "has no row") {
				t.Fatalf("a deleted audit event: %v", rep)
			}
		})
	})
}
