package wps

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
	"golang.org/x/mod/sumdb/tlog"
)

// An action's leaf is made again from its stored row: with or without the
// client's transactionHash, whatever its strings hold.
func TestActionLeafFromTheRow(t *testing.T) {
	for _, client := range []string{"", "0xabc"} {
		a := Action{ID: "a1", OrgID: "o1", MeasurementID: "m1", StepID: "s1", Type: "WRITE_DATA", UserID: "u1", Username: `<Ana & "Bo">`,
			UserRoles: []string{"INSPECTOR"}, Observation: "\u2028ok", CreatedAt: FromMillis(1_700_000_000_123),
			Data: map[string]any{"p": 0.1, "q": []any{"x", "<&>"}, "r": true, "s": 12345678901234.5, "t": 1e-7, "u": map[string]any{"b": 1, "a": "é"}}}
		e := sealAction(&a, client, nil)
		if a.LeafHash != e.LeafHash.String() || a.LedgerHash != hex.EncodeToString(e.LeafHash[:]) || a.PrevHash != "" {
			t.Fatalf("sealed %+v, entry %+v", a, e)
		}
		if want := client; want == "" && a.TransactionHash != a.LedgerHash || want != "" && a.TransactionHash != want {
			t.Fatalf("transactionHash %q with client %q", a.TransactionHash, client)
		}
		if got := tlog.RecordHash(ActionLeaf(a, LeafAction, nil)); got != e.LeafHash {
			t.Fatalf("client %q: the row's leaf hashes to %s, not %s", client, got, e.LeafHash)
		}
		if !strings.Contains(string(ActionLeaf(a, LeafAction, nil)), `"username":"<Ana & \"Bo\">"`) {
			t.Fatalf("leaf: %s", ActionLeaf(a, LeafAction, nil))
		}
		// Read back from the store (which writes them with encoding/json),
		// the values are json.Number: the same leaf.
		stored, _ := json.Marshal(a.Data)
		d := gojson.NewDecoder(bytes.NewReader(stored))
		d.UseNumber()
		back := a
		if err := d.Decode(&back.Data); err != nil {
			t.Fatal(err)
		}
		if got := tlog.RecordHash(ActionLeaf(back, LeafAction, nil)); got != e.LeafHash {
			t.Fatalf("read back, the values %v hash to another leaf", back.Data)
		}
		b := a
		b.Data = map[string]any{"p": 0.2, "q": []any{"x"}}
		if tlog.RecordHash(ActionLeaf(b, LeafAction, nil)) == e.LeafHash {
			t.Fatal("the values are not covered")
		}
	}
}

func TestParseCheckpoint(t *testing.T) {
	root := tlog.RecordHash([]byte("x"))
	c, err := ParseCheckpoint(checkpointText("o1", 42, root) + "extension\n")
	if err != nil || c.Origin != "wps/o1" || c.Size != 42 || c.Root != root {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"", "wps/o1\n42\n", "wps/o1\n-1\n" + root.String() + "\n", "wps/o1\n042\n" + root.String() + "\n", "wps/o1\n1\nnot a hash\n"} {
		if _, err := ParseCheckpoint(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// AppendLeaf refuses what its callers must not send, before writing.
func TestAppendLeafRefuses(t *testing.T) {
	ok := Leaf{Kind: LeafDocument, OrgID: "o1", MeasurementID: "m1", SubjectID: "d1", SHA256: strings.Repeat("0f", 32)}
	for name, l := range map[string]Leaf{
		"a reserved kind": func() Leaf { l := ok; l.Kind = LeafAction; return l }(),
		"a bad kind":      func() Leaf { l := ok; l.Kind = "Doc ument"; return l }(),
		"no subject":      func() Leaf { l := ok; l.SubjectID = ""; return l }(),
		"upper-case hex":  func() Leaf { l := ok; l.SHA256 = strings.ToUpper(l.SHA256); return l }(),
		"a short hash":    func() Leaf { l := ok; l.SHA256 = "0f"; return l }(),
	} {
		if _, err := AppendLeaf(nil, l); !IsCode(err, CodeInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
