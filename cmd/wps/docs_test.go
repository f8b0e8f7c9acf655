package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestMain lets this test binary stand in for the wps command the
// documents run (wps ledger verify, ...): the docs test puts a wps on
// PATH that runs it with WPS_DOCSTEST_RUN=1.
func TestMain(m *testing.M) {
	if os.Getenv("WPS_DOCSTEST_RUN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDocs runs the shell blocks of README.md and docs/*.md, in order, one
// bash per document, against a fresh server of its own (each engine):
// the documents' walk-throughs work when copied. The convention is in
// CONTRIBUTING.md ("Docs that run"): a block fenced as sh or bash runs,
// unless an HTML comment <!-- not run: reason --> is on the line before
// it; any other fence (console, text, json) does not. Each document's
// bash starts with WPS (the server's URL) and KEY (its first admin's key)
// set, set -euo pipefail, and curl failing on an HTTP error status.
func TestDocs(t *testing.T) {
	var missing []string
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the docs test needs %s under CI=true (.ci/run installs them)", strings.Join(missing, ", "))
		}
		t.Skipf("the docs test needs %s (apt-get install curl jq)", strings.Join(missing, ", "))
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{"../../README.md", "../../CONTRIBUTING.md"}, docs...)
	type doc struct {
		name   string
		blocks []docBlock
	}
	var runnable []doc
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(path, "../../")
		blocks, err := shellBlocks(string(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(blocks) > 0 {
			runnable = append(runnable, doc{name, blocks})
		}
	}
	wps := wpsCommand(t)
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		for i, d := range runnable {
			// The README on both engines, each other document on one, in
			// turn: a walk-through checks the document, and the API's tests
			// check both engines; run on both, the documents alone took half
			// of CI's time under -race.
			if i > 0 && tu.Engines[i%len(tu.Engines)] != engine {
				continue
			}
			t.Run(strings.TrimSuffix(filepath.Base(d.name), ".md"), func(t *testing.T) {
				t.Parallel()
				runDoc(t, engine, d.name, d.blocks, wps)
			})
		}
	})
}

// preamble starts each document's bash: errors stop it, and so does a
// curl answered an HTTP error status, unless the command writes out its
// status (-w '%{http_code}') to check it, or says --fail itself (to retry).
const preamble = `set -euo pipefail
curl() {
  case " $* " in
  *" -w "* | *" --write-out "* | *" --fail "*) command curl -q --show-error "$@" ;;
  *) command curl -q --fail-with-body --show-error "$@" ;;
  esac
}
`

// docBlock is a fenced block of a document that runs.
type docBlock struct {
	line int // of its opening fence, from 1
	code string
}

var (
	fence  = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([^\\s`]*)")
	notRun = regexp.MustCompile(`^\s*<!--\s*not run\b(.*)-->\s*$`)
)

// shellBlocks returns the blocks of a Markdown document that run: those
// fenced as sh or bash, unless the line before is <!-- not run: reason -->.
func shellBlocks(doc string) ([]docBlock, error) {
	var blocks []docBlock
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " \t"))
		start := i
		var code []string
		for i++; i < len(lines); i++ {
			if c := fence.FindStringSubmatch(lines[i]); c != nil && c[2] == "" && strings.HasPrefix(c[1], m[1][:1]) && len(c[1]) >= len(m[1]) {
				break
			}
			l := lines[i]
			if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
				l = l[indent:]
			}
			code = append(code, l)
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the block is not closed", start+1)
		}
		skipped := false
		if start > 0 {
			if c := notRun.FindStringSubmatch(lines[start-1]); c != nil {
				if !strings.HasPrefix(strings.TrimSpace(c[1]), ":") || strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c[1]), ":")) == "" {
					return nil, fmt.Errorf("line %d: <!-- not run --> needs a reason: <!-- not run: why -->", start)
				}
				skipped = true
			}
		}
		if (m[2] == "sh" || m[2] == "bash") && !skipped {
			blocks = append(blocks, docBlock{line: start + 1, code: strings.Join(code, "\n")})
		}
	}
	return blocks, nil
}

// wpsCommand makes a folder with a wps command that runs this test
// binary as the program, for the documents' wps commands.
func wpsCommand(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nWPS_DOCSTEST_RUN=1 exec %q \"$@\"\n", exe)
	if err := os.WriteFile(filepath.Join(dir, "wps"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runDoc starts a server on a new database of engine and runs the
// document's blocks in one bash, in a folder with the files documents
// upload (pricing.xlsx, gauge.jpg).
func runDoc(t *testing.T, engine sqlstore.Engine, name string, blocks []docBlock, wpsDir string) {
	var script strings.Builder
	script.WriteString(preamble)
	for _, b := range blocks {
		if strings.Contains(b.code, "pdftotext") {
			if _, err := exec.LookPath("pdftotext"); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s needs pdftotext under CI=true (.ci/run installs poppler-utils)", name)
				}
				t.Skipf("%s needs pdftotext (apt-get install poppler-utils)", name)
			}
		}
	}
	// Each block is a file the one bash sources, so that its errors name it
	// ("line 3" of docs/api.md's block at line 40 is line 43 of the document).
	dir := t.TempDir()
	writeFixtures(t, dir)
	blockDir := t.TempDir()
	for _, b := range blocks {
		file := filepath.Join(blockDir, fmt.Sprintf("%s-block-at-line-%d.sh", filepath.Base(name), b.line))
		if err := os.WriteFile(file, []byte(b.code+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "printf '\\n@@@ block %d\\n'\nsource %q\n", b.line, file)
	}
	key := "wps_" + strings.Repeat("d", 40)
	log := &tu.SyncBuffer{}
	dbURL := tu.DatabaseURL(t, engine)
	addr, _, stop := startLogging(t, map[string]string{"WPS_DATABASE_URL": dbURL, "WPS_BOOTSTRAP_API_KEY": key,
		"WPS_LEDGER_CHECKPOINT_EVERY": "100ms", "WPS_API_CALL_HOSTS": "fx.example.com"}, log)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	addr, mismatches := checked(t, addr)
	defer func() {
		for _, m := range mismatches() {
			t.Errorf("%s: an answer does not match the OpenAPI document: %s", name, m)
		}
	}()

	// No limit of its own: a slow machine makes a document take longer, and
	// only the test binary's deadline (go test -timeout) ends one, with what
	// its last block printed.
	ctx, cancel := context.WithDeadline(context.Background(), tu.Deadline(t))
	defer cancel()
	began := time.Now()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WPS_") && !strings.HasPrefix(kv, "WPS=") && !strings.HasPrefix(kv, "KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "WPS=http://"+addr, "KEY="+key, "WPS_DATABASE_URL="+dbURL, "HOME="+dir, "PATH="+wpsDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		if testing.Verbose() {
			t.Logf("%s:\n%s", name, out.String())
		}
		return
	}
	// The block that failed is the last one that started.
	text := out.String()
	line, blockOut := 0, text
	if i := strings.LastIndex(text, "\n@@@ block "); i >= 0 {
		rest := text[i+len("\n@@@ block "):]
		num, after, _ := strings.Cut(rest, "\n")
		fmt.Sscan(num, &line)
		blockOut = after
	}
	var code string
	for _, b := range blocks {
		if b.line == line {
			code = b.code
		}
	}
	failed := fmt.Sprintf("failed (%v)", err)
	if ctx.Err() != nil {
		failed = fmt.Sprintf("was still running %s after the document began, when the test's deadline (go test -timeout) neared", time.Since(began).Round(time.Second))
	}
	t.Errorf("%s: the block at line %d %s:\n%s\n--- its output:\n%s\n--- the server's log (end):\n%s",
		name, line, failed, code, tail(blockOut, 6000), tail(requests(log.String()), 3000))
}

// checked puts a proxy in front of the server at addr that checks every
// answer against the OpenAPI document the server serves, as Env.Do does
// for the HTTP tests; mismatches lists those that do not match.
func checked(t *testing.T, addr string) (proxyAddr string, mismatches func() []string) {
	t.Helper()
	res, err := http.Get("http://" + addr + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	contract, err := tu.NewContract(doc)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bad []string
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	proxy.ModifyResponse = func(r *http.Response) error {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := contract.Check(r.Request, r.StatusCode, r.Header, body); err != nil {
			mu.Lock()
			bad = append(bad, err.Error())
			mu.Unlock()
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return bad
	}
}

// requests drops the server log's lines about migrations.
func requests(log string) string {
	var b strings.Builder
	for l := range strings.Lines(log) {
		if !strings.Contains(l, "migration applied") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// writeFixtures writes the files the documents upload: pricing.xlsx (the
// workbook docs/sheets.md describes: quantity and price in Inputs!B1:B2,
// the total in B7) and gauge.jpg (a photo).
func writeFixtures(t *testing.T, dir string) {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.SetSheetName("Sheet1", "Inputs"))
	_, err := f.NewSheet("Rates")
	must(err)
	must(f.SetCellValue("Inputs", "A1", "Quantity"))
	must(f.SetCellValue("Inputs", "A2", "Price"))
	must(f.SetCellValue("Inputs", "A7", "Total"))
	must(f.SetCellFormula("Inputs", "B7", "ROUND(B1*B2,2)"))
	must(f.SaveAs(filepath.Join(dir, "pricing.xlsx")))

	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for x := range 16 {
		for y := range 16 {
			img.Set(x, y, color.RGBA{uint8(x * 16), uint8(y * 16), 128, 255})
		}
	}
	var buf bytes.Buffer
	must(jpeg.Encode(&buf, img, nil))
	must(os.WriteFile(filepath.Join(dir, "gauge.jpg"), buf.Bytes(), 0o644))
}

func TestShellBlocks(t *testing.T) {
	doc := "# Title\n\n```sh\necho one\n```\n\n<!-- not run: starts the server -->\n```sh\ngo run ./cmd/wps\n```\n\n" +
		"```console\n$ echo no\n```\n\n- a list:\n\n  ```bash\n  echo two\n    indented\n  ```\n\n~~~sh\necho three\n```\nstill three\n~~~\n\n```json\n{}\n```\n"
	blocks, err := shellBlocks(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(blocks)
	want := "[{3 echo one} {18 echo two\n  indented} {23 echo three\n```\nstill three}]"
	if got != want {
		t.Fatalf("blocks:\n%q\nwant\n%q", got, want)
	}
	for _, bad := range []string{"```sh\necho\n", "<!-- not run -->\n```sh\necho\n```\n", "<!-- not run: -->\n```sh\necho\n```\n"} {
		if _, err := shellBlocks(bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}
