package console_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// postMultipart sends a form with files, as a browser sends a form with
// enctype multipart/form-data.
func (c *client) postMultipart(path string, fields url.Values, files map[string][][2]string) (*http.Response, string) {
	c.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			_ = w.WriteField(k, v)
		}
	}
	for field, fs := range files {
		for _, f := range fs {
			part, _ := w.CreateFormFile(field, f[0])
			_, _ = part.Write([]byte(f[1]))
		}
	}
	_ = w.Close()
	req, _ := http.NewRequest(post, c.base+path, &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	return c.send(req)
}

func TestConsolePages(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		base := o.env.Server.URL

		t.Run("a form with several files: each uploaded, linked and downloadable", func(t *testing.T) {
			c := newClient(t, base)
			c.signIn("ines@example.com")
			_, page := c.do(get, "/measurements/"+o.measure, nil)
			step := regexp.MustCompile(`name="stepId" value="([^"]+)"`).FindStringSubmatch(page)
			if step == nil {
				t.Fatal("no form on the page")
			}
			res, body := c.postMultipart("/measurements/"+o.measure+"/actions",
				url.Values{"csrf": {csrf(page)}, "stepId": {step[1]}, "type": {"WRITE_DATA"}, "p.temperature": {"64.5"}, "p.condition": {"worn"},
					"t.readings.0.at": {"5"}, "t.readings.0.bar": {"2.5"}, "t.readings.3.at": {"10"}, "t.readings.3.bar": {"2.75"}},
				map[string][][2]string{"p.photos": {{"front.txt", "front of the pump"}, {"back.txt", "back of the pump"}}})
			if res.StatusCode != http.StatusSeeOther {
				t.Fatalf("save: %d %s", res.StatusCode, body)
			}
			_, page = c.do(get, "/measurements/"+o.measure, nil)
			links := regexp.MustCompile(`href="/files/([^"]+)"`).FindAllStringSubmatch(page, -1)
			if len(links) != 2 {
				t.Fatalf("%d file links on the page, want 2", len(links))
			}
			got := map[string]bool{}
			for _, l := range links {
				res, content := c.do(get, "/files/"+l[1], nil)
				if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment") {
					t.Fatalf("download: %d %v", res.StatusCode, res.Header)
				}
				got[content] = true
			}
			if !got["front of the pump"] || !got["back of the pump"] {
				t.Fatalf("downloaded %v", got)
			}
			// The table's two rows, and the values through the API.
			m := o.env.Call(get, "/v1/measurements/"+o.measure, o.inspector, nil, 200).JSON()
			if !strings.Contains(string(mustJSON(m)), `"2.75"`) || !strings.Contains(page, "Pressure (bar): 2.75") {
				t.Fatalf("the table's second row is missing: %s", page)
			}
			// Someone who does not see the value does not get the file: the
			// service's rule (a Supervisor reads measurements, so does see it;
			// a person without measurement:read does not).
			person(t, o.env, "nobody@example.com", "NOBODY")
			n := newClient(t, base)
			n.signIn("nobody@example.com")
			if res, _ := n.do(get, "/files/"+links[0][1], nil); res.StatusCode != http.StatusNotFound {
				t.Fatalf("a user with no policy downloaded a file: %d", res.StatusCode)
			}
		})

		t.Run("a form only where a seat can be filled now: ordered seats", func(t *testing.T) {
			m := o.env.Call(post, "/v1/measurements", o.inspector, map[string]any{"processId": o.process}, 201).JSON()
			step := m["process"].(map[string]any)["steps"].([]any)[0].(map[string]any)["id"]
			o.env.Call(post, "/v1/measurements/"+m["id"].(string)+"/actions", o.inspector, map[string]any{"stepId": step, "type": "WRITE_DATA",
				"parameters": map[string]any{"temperature": 50, "condition": "good"}}, 201)
			forms := func(email string) int {
				c := newClient(t, base)
				c.signIn(email)
				_, page := c.do(get, "/measurements/"+m["id"].(string), nil)
				return strings.Count(page, `name="stepId"`)
			}
			if mia, sam, ines := forms("mia@example.com"), forms("sam@example.com"), forms("ines@example.com"); mia != 0 || sam != 1 || ines != 0 {
				t.Fatalf("forms: manager %d (after the supervisor), supervisor %d, inspector %d (step done)", mia, sam, ines)
			}
		})

		t.Run("reprove an earlier action from the history", func(t *testing.T) {
			sam := newClient(t, base)
			sam.signIn("sam@example.com")
			_, page := sam.do(get, "/measurements/"+o.measure, nil)
			action := regexp.MustCompile(`action="/actions/([^/]+)/reprove"`).FindStringSubmatch(page)
			if action == nil {
				t.Fatal("no Reprove form in the history")
			}
			if res, _ := sam.do(post, "/actions/"+action[1]+"/reprove", url.Values{"csrf": {csrf(page)}, "observation": {"The photos are of another pump."}}); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("reprove: %d", res.StatusCode)
			}
			_, page = sam.do(get, "/measurements/"+o.measure+"?done=reproved", nil)
			if !strings.Contains(page, "Reproved: the action") || !strings.Contains(page, "The photos are of another pump.") || !strings.Contains(page, ">Reproved</span>") {
				t.Fatal("the reproval is not in the history")
			}
			// Twice is a conflict, shown as a page.
			if res, body := sam.do(post, "/actions/"+action[1]+"/reprove", url.Values{"csrf": {csrf(page)}, "observation": {"again"}}); res.StatusCode != http.StatusConflict || !strings.Contains(body, "Conflict") {
				t.Fatalf("second reprove: %d", res.StatusCode)
			}
		})

		t.Run("admin pages: a policy, a webhook, a deactivation", func(t *testing.T) {
			root := newClient(t, base)
			root.signIn("root@example.com")
			_, page := root.do(get, "/admin/policies", nil)
			tok := csrf(page)
			if res, body := root.do(post, "/admin/policies", url.Values{"csrf": {tok}, "name": {"Auditor"}, "roles": {"auditor, QA"}, "functions": {"measurement:read", "ledger:read"}}); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("create policy: %d %s", res.StatusCode, body)
			}
			pols := o.env.Call(get, "/v1/users/policies", o.env.AdminKey, nil, 200).Body
			if !strings.Contains(string(pols), `"name":"Auditor","roles":["AUDITOR","QA"],"functions":["ledger:read","measurement:read"]`) {
				t.Fatalf("policies: %s", pols)
			}
			if res, body := root.do(post, "/admin/policies", url.Values{"csrf": {tok}, "name": {"Auditor"}, "functions": {"no:such"}}); res.StatusCode != http.StatusUnprocessableEntity && res.StatusCode != http.StatusConflict || !strings.Contains(body, `class="error"`) {
				t.Fatalf("a bad policy: %d", res.StatusCode)
			}
			res, body := root.do(post, "/admin/webhooks", url.Values{"csrf": {tok}, "url": {"https://hooks.example/wps"}, "events": {"measurement.created"}})
			if res.StatusCode != http.StatusCreated || !strings.Contains(body, "whsec_") {
				t.Fatalf("webhook: %d", res.StatusCode)
			}
			users := o.env.Call(get, "/v1/users?perPage=100", o.env.AdminKey, nil, 200).JSON()["data"].([]any)
			var mia string
			for _, u := range users {
				if u.(map[string]any)["email"] == "mia@example.com" {
					mia = u.(map[string]any)["id"].(string)
				}
			}
			m := newClient(t, base)
			m.signIn("mia@example.com")
			if res, _ := root.do(post, "/admin/users/"+mia, url.Values{"csrf": {tok}, "do": {"deactivate"}}); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("deactivate: %d", res.StatusCode)
			}
			if res, _ := m.do(get, "/inbox", nil); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("a deactivated user's session still works: %d", res.StatusCode)
			}
		})

		t.Run("the org's operations choose the sections non-admins see; the logo shows to all", func(t *testing.T) {
			logo := upload(t, o.env, "logo.png", pngBytes)
			o.env.Call(post, "/v1/organizations", o.env.AdminKey, map[string]any{"operations": []string{"inbox"}, "logoKey": logo, "pinnedUrl": "https://wiki.example/ops"}, 200)
			c := newClient(t, base)
			c.signIn("ines@example.com")
			_, page := c.do(get, "/inbox", nil)
			nav := page[strings.Index(page, `<nav aria-label="Sections">`):strings.Index(page, "</nav>")]
			if !strings.Contains(nav, ">Inbox<") || strings.Contains(nav, ">Measurements<") || strings.Contains(nav, ">Entities<") || !strings.Contains(nav, "https://wiki.example/ops") {
				t.Fatalf("inspector's navigation: %s", nav)
			}
			if res, img := c.do(get, "/files/"+logo, nil); res.StatusCode != 200 || img != string(pngBytes) || res.Header.Get("Content-Type") != "image/png" {
				t.Fatalf("logo for a member: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
			}
			root := newClient(t, base)
			root.signIn("root@example.com")
			_, page = root.do(get, "/inbox", nil)
			if !strings.Contains(page, ">Entities<") || !strings.Contains(page, `src="/files/`+logo+`"`) {
				t.Fatal("an admin does not see every section and the logo")
			}
			o.env.Call(post, "/v1/organizations", o.env.AdminKey, map[string]any{"operations": []string{}}, 200)
		})

		t.Run("measurements by the start of their name", func(t *testing.T) {
			c := newClient(t, base)
			c.signIn("ines@example.com")
			if _, page := c.do(get, "/measurements?q="+strings.ToLower(o.name[:len(o.name)-1]), nil); !strings.Contains(page, ">"+o.name+"<") {
				t.Fatal("the name search does not find the measurement")
			}
			if _, page := c.do(get, "/measurements?q=PUMP_", nil); !strings.Contains(page, "No measurements match.") {
				t.Fatal("_ is a wildcard in the name search")
			}
			if n := o.env.Call(get, "/v1/measurements?name="+o.name, o.inspector, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 1.0 {
				t.Fatalf("API name filter: total %v", n)
			}
		})

		t.Run("page weight: HTML, CSS and JS under 150 KB", func(t *testing.T) {
			c := newClient(t, base)
			c.signIn("ines@example.com")
			for _, path := range []string{"/inbox", "/measurements/" + o.measure} {
				_, page := c.do(get, path, nil)
				total := len(page)
				for _, asset := range regexp.MustCompile(`(?:href|src)="(/assets/[^"]+)"`).FindAllStringSubmatch(page, -1) {
					_, b := c.do(get, strings.ReplaceAll(asset[1], "&amp;", "&"), nil)
					total += len(b)
				}
				t.Logf("%s: %d bytes with its assets", path, total)
				if total > 150_000 {
					t.Fatalf("%s weighs %d bytes", path, total)
				}
			}
		})

		t.Run("a bad filter is a clear page, not a crash", func(t *testing.T) {
			c := newClient(t, base)
			c.signIn("ines@example.com")
			if res, page := c.do(get, "/measurements?status=NOPE", nil); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, "status") {
				t.Fatalf("bad status filter: %d", res.StatusCode)
			}
			root := newClient(t, base)
			root.signIn("root@example.com")
			if res, page := root.do(get, "/entities/"+o.supplier+"?filter.since=yesterday", nil); res.StatusCode != 200 || !strings.Contains(page, `id="filter-since-err"`) {
				t.Fatalf("bad record filter: %d", res.StatusCode)
			}
		})
	})
}

// upload stores a file through the API as the admin and returns its id.
func upload(t *testing.T, env *tu.Env, name string, content []byte) string {
	t.Helper()
	return uploadAs(t, env, env.AdminKey, name, content)
}

// uploadAs stores a file through the API as the holder of key.
func uploadAs(t *testing.T, env *tu.Env, key, name string, content []byte) string {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("file", name)
	_, _ = part.Write(content)
	_ = w.Close()
	r := env.Do(tu.Request{Method: post, Path: "/v1/attachments", Key: key, Body: body.Bytes(), Header: map[string]string{"Content-Type": w.FormDataContentType()}})
	if r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	return r.JSON()["id"].(string)
}

// pngBytes is a 1×1 PNG.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")
