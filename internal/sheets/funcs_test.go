package sheets

import (
	"os"
	"strings"
	"testing"
)

// The functions docs/sheets.md lists are the ones the engine calculates.
func TestDocumentedFunctions(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sheets.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(doc), "<!-- functions -->")
	list, _, _ = strings.Cut(list, "<!-- /functions -->")
	if !ok || len(strings.Fields(list)) < 400 {
		t.Fatal("docs/sheets.md lists no functions between <!-- functions --> and <!-- /functions -->")
	}
	for _, name := range strings.Fields(strings.ReplaceAll(list, ",", " ")) {
		if !Supported(name) {
			t.Errorf("docs/sheets.md lists %s, which the engine does not calculate", name)
		}
	}
}
