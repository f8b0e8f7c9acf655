package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PDFText extracts the text of a PDF with poppler's pdftotext (Debian's
// poppler-utils), in reading order with the layout kept. Without pdftotext
// the test is skipped, except under CI=true, where it fails (.ci/run
// installs it).
func PDFText(t testing.TB, pdf []byte) string {
	t.Helper()
	path, err := exec.LookPath("pdftotext")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pdftotext is required under CI=true (.ci/run installs Debian's poppler-utils)")
		}
		t.Skip("pdftotext not found: PDF text checks skipped (apt-get install poppler-utils)")
	}
	in := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(in, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(path, "-layout", "-enc", "UTF-8", in, "-")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pdftotext: %v: %s", err, stderr.String())
	}
	return out.String()
}
