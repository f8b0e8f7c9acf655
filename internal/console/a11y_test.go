package console_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// axeScript reads axe-core's browser build: $WPS_AXE_JS, else where .ci/run
// installs it. Without it the test is skipped, except under CI=true.
func axeScript(t *testing.T) string {
	t.Helper()
	path := os.Getenv("WPS_AXE_JS")
	if path == "" {
		home, _ := os.UserHomeDir()
		path = filepath.Join(home, ".cache", "wps", "axe-core", "node_modules", "axe-core", "axe.min.js")
	}
	src, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("axe-core is required under CI=true (.ci/run installs it): %v", err)
		}
		t.Skipf("axe-core not found (%v): accessibility checks skipped (.ci/run installs it, or set WPS_AXE_JS)", err)
	}
	return string(src)
}

// violation is one axe-core rule a page breaks, with the elements that break it.
type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

func (v violation) String() string {
	return fmt.Sprintf("%s (%s: %s)\n\t%s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n\t"))
}

// axe runs axe-core on the page and returns its serious and critical violations.
func (tb *tab) axe(src string) []violation {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](src+";0")); err != nil {
		tb.t.Fatalf("load axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then((r) => JSON.stringify(
		r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({
			id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.map((n) => n.target.join(" ") + ": " + (n.failureSummary || "").replaceAll("\n", " ")) }))))`, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("axe.run on %s: %v", tb.location(), err)
	}
	var vs []violation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		tb.t.Fatalf("axe's answer %q: %v", out, err)
	}
	return vs
}

// viewport sets the tab's window size (0, 0: back to the browser's).
func (tb *tab) viewport(width, height int64) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	var err error
	if width == 0 {
		_, err = chromedp.Call(ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
	} else {
		_, err = chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: width, Height: height, DeviceScaleFactor: 1})
	}
	if err != nil {
		tb.t.Fatalf("viewport %dx%d: %v", width, height, err)
	}
}

// scheme makes the tab prefer a colour scheme ("light" or "dark").
func (tb *tab) scheme(s string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}}); err != nil {
		tb.t.Fatalf("colour scheme %s: %v", s, err)
	}
}

// key presses a key (kb.Tab, or a character).
func (tb *tab) key(k string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.KeyEvent(k)); err != nil {
		tb.t.Fatalf("press %q: %v", k, err)
	}
}

// phoneProblems lists what does not fit a phone: the page scrolling
// sideways, and controls (checkboxes, radios, buttons, fields, links in
// tables and in the header) smaller than 24 px.
const phoneProblems = `(() => {
	const out = [];
	const se = document.scrollingElement;
	if (se.scrollWidth > innerWidth) {
		const wide = [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest(".grid-wrap, .skip, .sr"))
			.slice(0, 5).map((e) => e.tagName.toLowerCase() + "." + e.className + " " + Math.round(e.getBoundingClientRect().right) + "px");
		out.push("the page is " + se.scrollWidth + " px wide at " + innerWidth + " px: " + wide.join(", "));
	}
	const sel = "input:not([type=hidden]), select, textarea, button, .button, summary, td a, th a, .top a, .pager a";
	for (const el of document.querySelectorAll(sel)) {
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.right <= 0 || el.closest(".sr")) continue; // not shown
		const link = el.tagName === "A" && !el.classList.contains("button");
		if (r.height < 24 || (!link && r.width < 24)) {
			out.push(el.tagName.toLowerCase() + (el.type ? "[" + el.type + "]" : "") + " " + JSON.stringify((el.innerText || el.name || el.id || "").slice(0, 30)) + " is " + Math.round(r.width) + "x" + Math.round(r.height));
		}
	}
	return JSON.stringify(out);
})()`

// consolePages opens every page of the console for a signed-in person,
// the admin and the inspector whose form is open.
func consolePages(t *testing.T, o *org) (admin, inspector, anonymous []string) {
	// A measurement with history and values; another with the inspector's form open.
	o.env.Call(post, "/v1/measurements/"+o.measure+"/actions", o.inspector, map[string]any{"stepId": stepID(t, o, "Inspect"), "type": "WRITE_DATA",
		"parameters": map[string]any{"condition": "good", "temperature": 61.5, "checks": []string{"seal"}}}, 201)
	open := o.env.Call(post, "/v1/measurements", o.inspector, map[string]any{"processId": o.process}, 201).JSON()["id"].(string)
	inv := o.env.Call(post, "/v1/invites", o.env.AdminKey, map[string]any{"email": "zoe@example.com", "roles": []string{"INSPECTOR"}}, 201).JSON()
	admin = []string{"/inbox", "/measurements", "/measurements/" + o.measure, "/processes", "/processes/" + o.process, "/processes/" + o.process + "/edit", "/entities",
		"/entities/" + o.supplier, "/entities/" + o.supplier + "/design", "/entities/" + o.supplier + "?edit=new", "/settings", "/admin", "/admin/users", "/admin/policies", "/admin/webhooks", "/admin/org", "/admin/sso", "/no-such-page"}
	inspector = []string{"/inbox", "/measurements/" + open}
	anonymous = []string{"/signin", "/forgot", "/invite/" + inv["token"].(string), "/reset/wpsrst_unknown"}
	return admin, inspector, anonymous
}

// TestConsoleForEveryone: every page fits a phone 360 px wide with
// controls of at least 24 px, axe-core finds no serious or critical
// violation at two theme colours (a dark green and a light yellow), in
// light and dark mode, and keyboard focus shows on the header.
func TestConsoleForEveryone(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		b := newBrowser(t)
		axeJS := axeScript(t)
		base := o.env.Server.URL
		adminPages, inspectorPages, anonPages := consolePages(t, o)
		root, ines, anon := b.person(base), b.person(base), b.person(base)
		signIn(root, "root@example.com")
		signIn(ines, "ines@example.com")
		visits := []struct {
			who   *tab
			pages []string
		}{{root, adminPages}, {ines, inspectorPages}, {anon, anonPages}}

		// axe finds what it should: text as pale as its background is a violation.
		anon.open("/signin")
		anon.eval(`document.querySelector("h1").style.color = "#f0f0f0"; "x"`)
		if vs := anon.axe(axeJS); len(vs) == 0 || vs[0].ID != "color-contrast" {
			t.Fatalf("axe did not find pale text: %v", vs)
		}

		// Each pass sets the theme colour and the colour scheme, visits every
		// page and runs axe on it; the first is on a phone and measures the
		// page too. The pages are the same HTML on either engine, so each
		// engine runs two of the four colour passes, both the phone's.
		passes := []struct {
			colour, scheme string
			phone          bool
		}{{"#0A7F5A", "light", true}, {"#FFD700", "dark", false}}
		if engine != sqlstore.SQLite {
			passes = []struct {
				colour, scheme string
				phone          bool
			}{{"#FFD700", "light", true}, {"#0A7F5A", "dark", false}}
		}
		for _, pass := range passes {
			name := pass.colour + "/" + pass.scheme
			if pass.phone {
				name += "/360px"
			}
			t.Run(name, func(t *testing.T) {
				o.env.Call(post, "/v1/organizations", o.env.AdminKey, map[string]any{"themeColor": pass.colour}, 200)
				for _, v := range visits {
					v.who.scheme(pass.scheme)
					if pass.phone {
						v.who.viewport(360, 740)
					}
					for _, p := range v.pages {
						v.who.open(p)
						if pass.phone {
							var problems []string
							if err := json.Unmarshal([]byte(v.who.eval(phoneProblems)), &problems); err != nil {
								t.Fatal(err)
							}
							if len(problems) > 0 {
								t.Errorf("%s at 360 px:\n\t%s", p, strings.Join(problems, "\n\t"))
							}
						}
						for _, vi := range v.who.axe(axeJS) {
							t.Errorf("%s (%s): %s", p, name, vi)
						}
						if engine == sqlstore.SQLite && v.who == ines && strings.HasPrefix(p, "/measurements/") && (pass.phone || pass.scheme == "dark") {
							ines.screenshot(map[bool]string{true: "phone", false: "dark"}[pass.phone]) // for docs/console.md
						}
					}
					if pass.phone {
						v.who.viewport(0, 0)
					}
				}
				// Keyboard focus on the header shows: its outline is not the header's colour.
				root.open("/inbox")
				root.key(kb.Tab) // the skip link
				root.key(kb.Tab) // the org's name, in the header
				got := root.eval(`(() => { const a = document.activeElement, s = getComputedStyle(a), h = getComputedStyle(document.querySelector("header.top"));
					return [a.closest("header") ? "header" : a.tagName, s.outlineStyle, s.outlineWidth, s.outlineColor, h.backgroundColor].join("|") })()`)
				f := strings.Split(got, "|")
				if f[0] != "header" || f[1] == "none" || f[2] == "0px" || f[3] == f[4] {
					t.Errorf("focus in the header is not visible: focused %s, outline %s %s %s on %s", f[0], f[1], f[2], f[3], f[4])
				}
			})
		}
	})
}

// TestConsoleDrafts: what is typed in a step's form survives a reload (a
// lost connection) until it is saved, kept under its author's name, and
// saving or signing out clears it.
func TestConsoleDrafts(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		b := newBrowser(t)
		base := o.env.Server.URL
		ines := b.person(base)
		signIn(ines, "ines@example.com")
		page := "/measurements/" + o.measure
		ines.open(page)
		notice := func(tb *tab) string {
			return tb.eval(`(() => { const n = document.querySelector(".draft-restored"); return n && !n.hidden ? n.innerText : "" })()`)
		}
		if got := notice(ines); got != "" {
			t.Fatalf("a fresh form says %q", got)
		}
		ines.fill("Outlet temperature (°C)", "71.5")
		ines.fill("Condition", "worn")
		ines.check("bearing")
		ines.call("button", "Add row to Readings", `function(){ this.click() }`)
		ines.fill("Minute (row 1)", "3")
		ines.fill("Minute (new row)", "9")
		ines.fill("<script>alert('x')</script> notes", "Noisy at start")

		// The connection drops, the page is reloaded: the entries come back, and the page says so.
		ines.open(page)
		for id, want := range map[string]string{"f-temperature": "71.5", "f-condition": "worn", "f-notes": "Noisy at start"} {
			if got := ines.eval(`document.getElementById("` + id + `").value`); got != want {
				t.Fatalf("%s restored as %q, want %q", id, got, want)
			}
		}
		if got := ines.call("checkbox", "bearing", `function(){ return String(this.checked) }`); got != "true" {
			t.Fatalf("the checkbox was not restored: %s", got)
		}
		if got := ines.eval(`[...document.querySelectorAll(".table-field [name$='.at']")].map((i) => i.value).join(",")`); got != "3,9" {
			t.Fatalf("the table's rows restored as %q, want 3,9", got)
		}
		if got := notice(ines); !strings.Contains(got, "Restored unsaved entries") || !strings.Contains(got, "Files") {
			t.Fatalf("the page does not say the draft was restored: %q", got)
		}

		// The draft is keyed by its author, the measurement and the step: another person on this device has other keys.
		me := o.env.Call(get, "/v1/users/me", o.inspector, nil, 200).JSON()["id"].(string)
		want := "wps-draft:" + me + "/" + o.measure + "/" + stepID(t, o, "Inspect")
		if got := ines.eval(`Object.keys(localStorage).filter((k) => k.startsWith("wps-draft:")).join(" ")`); got != want {
			t.Fatalf("drafts kept as %q, want %q", got, want)
		}

		// Saved: the draft is gone, a reload shows the saved values and no notice.
		ines.press("button", "Save")
		ines.sees("Saved.")
		if got := ines.eval(`String(Object.keys(localStorage).filter((k) => k.startsWith("wps-draft:")).length)`); got != "0" {
			t.Fatalf("%s drafts left after saving", got)
		}
		ines.open(page)
		if got := notice(ines); got != "" {
			t.Fatalf("after saving the page says %q", got)
		}
		ines.sees("Worn")

		// Signing out clears the person's drafts.
		other := o.env.Call(post, "/v1/measurements", o.inspector, map[string]any{"processId": o.process}, 201).JSON()["id"].(string)
		ines.open("/measurements/" + other)
		ines.fill("<script>alert('x')</script> notes", "Second thoughts")
		if got := ines.eval(`String(Object.keys(localStorage).filter((k) => k.startsWith("wps-draft:")).length)`); got != "1" {
			t.Fatalf("%s drafts kept while typing, want 1", got)
		}
		ines.press("button", "Sign out")
		if got := ines.eval(`String(Object.keys(localStorage).filter((k) => k.startsWith("wps-draft:")).length)`); got != "0" {
			t.Fatalf("%s drafts left after signing out", got)
		}
	})
}
