package notify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"wps/internal/notify"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestMailInTheRecipientsLanguage: each mail is worded in its recipient's
// language with times in their zone: a pt-BR user in America/Sao_Paulo
// gets Portuguese, a user without a setting English, an invitation the
// inviter's language; a daily digest goes at 08:00 in the user's zone.
func TestMailInTheRecipientsLanguage(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, srv, w := mailing(t, engine) // 2026-01-05T09:00Z: 06:00 in São Paulo
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Walkers", "roles": []string{"WALKER"},
			"functions": []string{"measurement:read", "measurement:create", "action:write"}}, 201)
		keys := map[string]string{}
		for _, name := range []string{"ana", "bob", "dia"} {
			keys[name], _ = joined(t, env, name+"@example.com", "WALKER")
		}
		for _, name := range []string{"ana", "dia"} {
			env.Call("PATCH", "/v1/users/me", keys[name], map[string]any{"locale": "pt-BR", "timeZone": "America/Sao_Paulo"}, 200)
		}
		env.Call("PUT", "/v1/users/me/notifications", keys["dia"], map[string]any{"email": "daily"}, 200)
		env.Call("PATCH", "/v1/users/me", env.AdminKey, map[string]any{"locale": "es"}, 200)
		env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": "eva@example.com", "roles": []string{"WALKER"}}, 201)
		proc := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Round", "code": "RD", "steps": []map[string]any{
			{"label": "Walk", "policyNames": []string{"Walkers"}, "deadline": "2", "deadlineType": "HOURS"}}}, 201).JSON()
		env.Call("POST", "/v1/measurements", keys["bob"], map[string]any{"processId": proc["id"]}, 201)
		drain(t, w)

		ana := srv.Mails("ana@example.com")[1:] // after her invitation
		if len(ana) != 1 || !strings.HasPrefix(ana[0].Subject, "Aguardando você: Walk de ") || !strings.Contains(ana[0].Body, "(processo Round) aguarda você.") ||
			!strings.Contains(ana[0].Body, "O prazo é 05/01/2026 08:00 (UTC-03:00).") {
			t.Fatalf("ana's mail: %+v", ana)
		}
		bob := srv.Mails("bob@example.com")[1:]
		if len(bob) != 1 || !strings.HasPrefix(bob[0].Subject, "Waiting for you: Walk of ") || !strings.Contains(bob[0].Body, "It is due 2026-01-05 11:00 UTC.") {
			t.Fatalf("bob's mail: %+v", bob)
		}
		if eva := srv.Mails("eva@example.com"); len(eva) != 1 || !strings.HasPrefix(eva[0].Subject, "Te invitan a ") || !strings.Contains(eva[0].Body, "Acepta la invitación") {
			t.Fatalf("the invitation by a Spanish-speaking admin: %+v", eva)
		}
		// The log shows the subject as worded.
		if l := notifications(t, env, keys["ana"], ""); len(l) != 1 || l[0]["subject"] != ana[0].Subject {
			t.Fatalf("ana's log: %v", l)
		}

		// The daily digest: the first at once, then at 08:00 in São Paulo (11:00Z).
		digest := func(want int) {
			t.Helper()
			if n, err := notify.SendDigests(context.Background(), env.Service); err != nil || n != want {
				t.Fatalf("at %s: %d digests (%v), want %d", env.Clock.Now().UTC().Format(time.RFC3339), n, err, want)
			}
		}
		digest(1)
		env.Clock.Advance(time.Hour + 59*time.Minute) // 10:59Z, 07:59 in São Paulo
		digest(0)
		env.Clock.Advance(time.Minute) // 11:00Z, 08:00 in São Paulo
		digest(1)
		env.Clock.Advance(23 * time.Hour) // 10:00Z the next day
		digest(0)
		env.Clock.Advance(time.Hour)
		digest(1)
		drain(t, w)
		dia := srv.Mails("dia@example.com")[1:]
		if len(dia) != 3 || dia[2].Subject != "1 medição aguarda você" || !strings.Contains(dia[2].Body, "Aguardando você hoje:") ||
			!strings.Contains(dia[2].Body, "Sua caixa de entrada: "+publicURL+"/inbox") {
			t.Fatalf("dia's digests: %+v", dia)
		}
	})
}
