package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	tu "wps/internal/testutil"
)

// browser is one headless Chromium for a test; each person in the test
// gets their own browser context (cookies apart), as separate people would.
type browser struct {
	t     *testing.T
	alloc context.Context
	root  context.Context
}

// chromiumPath finds Debian's chromium (or another Chromium build).
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts Chromium, or skips the test without it (fails under
// CI=true, where .ci/run installs it).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is required under CI=true (.ci/run installs Debian's chromium)")
		}
		t.Skip("chromium not found: browser tests skipped (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.DisableGPU, chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	root, cancelRoot := chromedp.NewContext(alloc)
	t.Cleanup(cancelRoot)
	if err := chromedp.Do(root); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, alloc: alloc, root: root}
}

// tab is one person's page.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// person opens a tab in a browser context of its own.
func (b *browser) person(base string) *tab {
	ctx, cancel := chromedp.NewContext(b.root, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	// Open the tab now, on the tab's own context: a tab first used under a
	// context with a timeout would close when that context ends.
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open a tab: %v", err)
	}
	return &tab{t: b.t, ctx: ctx, base: base}
}

// timeout bounds a step in the browser by the test binary's deadline: a
// busy machine only makes pages slower, and a step that never ends fails
// when go test's -timeout nears, naming what it waited for (a shorter
// -timeout fails such a test sooner).
func (tb *tab) timeout() (context.Context, context.CancelFunc) {
	return context.WithDeadline(tb.ctx, tu.Deadline(tb.t))
}

// open navigates to a path of the server.
func (tb *tab) open(path string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(tb.base+path)); err != nil {
		tb.t.Fatalf("open %s: %v", path, err)
	}
}

// find returns the JavaScript object of the element whose accessible name
// (as the browser's accessibility tree computes it) is name, with role
// when role is not "".
func (tb *tab) find(ctx context.Context, role, name string) (runtime.RemoteObjectID, error) {
	var last error
	for { // the page may still be loading
		doc, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{Depth: ptr(int64(0))})
		if err == nil {
			var res accessibility.QueryAXTreeResult
			res, err = chromedp.Call(ctx, accessibility.QueryAXTree, accessibility.QueryAXTreeParams{NodeID: doc.Root.NodeID, AccessibleName: name, Role: role})
			if err == nil && !slices.ContainsFunc(res.Nodes, func(n *accessibility.Node) bool { return usable(n, role) }) {
				// queryAXTree misses some controls (a file input's button): the full tree has them.
				var full accessibility.GetFullAXTreeResult
				if full, err = chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{}); err == nil {
					for _, n := range full.Nodes {
						if n.Name != nil && axString(n.Name.Value) == name && (role == "" || n.Role != nil && axString(n.Role.Value) == role) {
							res.Nodes = append(res.Nodes, n)
						}
					}
				}
			}
			if err == nil {
				for _, n := range res.Nodes {
					if !usable(n, role) {
						continue
					}
					obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: n.BackendDOMNodeID})
					if err == nil && obj.Object != nil {
						return obj.Object.ObjectID, nil
					}
				}
				err = fmt.Errorf("no %s named %q", orAny(role), name)
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (still looking when the test's deadline neared)", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// notControl are the roles of what shares a control's name without being
// one: its label's text, a column header, a heading.
var notControl = map[string]bool{"StaticText": true, "LabelText": true, "InlineTextBox": true, "generic": true, "none": true,
	"paragraph": true, "heading": true, "cell": true, "gridcell": true, "columnheader": true, "rowheader": true, "row": true,
	"group": true, "legend": true, "Legend": true, "option": true, "listitem": true, "link": true, "button": true}

// usable is a node that is the control looked for: in the page, of the
// role asked, or of a control's role when none was.
func usable(n *accessibility.Node, role string) bool {
	if n.Ignored || n.BackendDOMNodeID == 0 || n.Role == nil {
		return false
	}
	if role != "" {
		return axString(n.Role.Value) == role
	}
	return !notControl[axString(n.Role.Value)]
}

// axString is a string value of the accessibility tree (JSON text).
func axString(v []byte) string {
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

func orAny(role string) string {
	if role == "" {
		return "element"
	}
	return role
}

// call runs a JavaScript function on the element named name.
func (tb *tab) call(role, name, fn string, args ...any) string {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	id, err := tb.find(ctx, role, name)
	if err != nil {
		tb.t.Fatalf("%s on %s: %v\n%s", fn, tb.location(), err, tb.text("main"))
	}
	params := runtime.CallFunctionOnParams{FunctionDeclaration: fn, ObjectID: id, ReturnByValue: ptr(true)}
	for _, a := range args {
		params.Arguments = append(params.Arguments, &runtime.CallArgument{Value: mustJSON(a)})
	}
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, params)
	if err != nil || res.ExceptionDetails != nil {
		tb.t.Fatalf("%s on %s %q: %v %v", fn, role, name, err, res.ExceptionDetails)
	}
	if res.Result == nil {
		return ""
	}
	return strings.Trim(string(res.Result.Value), `"`)
}

// fill sets a control's value (a text box, a number, a date, a select).
func (tb *tab) fill(name, value string) {
	tb.t.Helper()
	tb.call("", name, `function(v){ this.focus(); if (this.tagName === "SELECT") { for (const o of this.options) { if (o.value === v || o.text === v) o.selected = true } } else { this.value = v } this.dispatchEvent(new Event("input", {bubbles: true})); this.dispatchEvent(new Event("change", {bubbles: true})) }`, value)
}

// attach chooses files for a file input, as a person picking them would.
func (tb *tab) attach(name string, paths ...string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	id, err := tb.find(ctx, "button", name) // Chromium's role for a file input
	if err == nil {
		_, err = chromedp.Call(ctx, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: paths, ObjectID: id})
	}
	if err != nil {
		tb.t.Fatalf("attach to %q: %v", name, err)
	}
}

// check ticks a checkbox.
func (tb *tab) check(name string) {
	tb.t.Helper()
	tb.call("checkbox", name, `function(){ this.checked = true }`)
}

// press clicks a button (or a link) and waits for the page it loads.
func (tb *tab) press(role, name string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	id, err := tb.find(ctx, role, name)
	if err != nil {
		tb.t.Fatalf("press %s %q on %s: %v\n%s", role, name, tb.location(), err, tb.text("main"))
	}
	click := func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: `function(){ this.click() }`, ObjectID: id})
		return chromedp.Void{}, err
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, click)); err != nil {
		tb.t.Fatalf("press %s %q: %v", role, name, err)
	}
}

// text is the visible text of the first element sel matches.
func (tb *tab) text(sel string) string {
	ctx, cancel := tb.timeout()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+mustJSONString(sel)+`) || {innerText: ""}).innerText`))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// eval evaluates a JavaScript expression to a string.
func (tb *tab) eval(expr string) string {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		tb.t.Fatalf("eval %s: %v", expr, err)
	}
	return s
}

func (tb *tab) location() string {
	ctx, cancel := tb.timeout()
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Location())
	return strings.TrimPrefix(s, tb.base)
}

// sees fails the test unless the main content shows want.
func (tb *tab) sees(want string) {
	tb.t.Helper()
	if got := tb.text("main"); !strings.Contains(got, want) {
		tb.t.Fatalf("%s does not show %q:\n%s", tb.location(), want, got)
	}
}

// waitsToSee waits until the main content shows want: a change the page's
// script makes without loading a page.
func (tb *tab) waitsToSee(want string) {
	tb.t.Helper()
	tu.Await(tb.t, fmt.Sprintf("the page to show %q", want), func() error {
		if got := tb.text("main"); !strings.Contains(got, want) {
			return fmt.Errorf("%s shows:\n%s", tb.location(), got)
		}
		return nil
	})
}

// screenshot saves the page as PNG into $WPS_SCREENSHOTS (when set), for docs/console.md.
func (tb *tab) screenshot(name string) {
	dir := os.Getenv("WPS_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := tb.timeout()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
