package jsonscan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMarkLoneSurrogates(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"x"}`:                       `{"a":"x"}`,
		`{"a":"\ud83d\ude00"}`:            `{"a":"\ud83d\ude00"}`,
		`{"a":"\ud800"}`:                  `{"a":"\u0000"}`,
		`{"a":"\uDC00\uD800"}`:            `{"a":"\u0000\u0000"}`,
		`{"a":"\ud800\u0041"}`:            `{"a":"\u0000\u0041"}`,
		`{"a":"\\ud800"}`:                 `{"a":"\\ud800"}`,
		`{"a":"\\\ud800"}`:                `{"a":"\\\u0000"}`,
		`{"a":"\"\ud800"}`:                `{"a":"\"\u0000"}`,
		`{"\ud800":1,"b":"\ud83d\ud83d"}`: `{"\u0000":1,"b":"\u0000\u0000"}`,
	} {
		got, found := MarkLoneSurrogates([]byte(in))
		if string(got) != want || found != (in != want) {
			t.Errorf("%s: %s %v, want %s", in, got, found, want)
		}
	}
}

// A valid document keeps its length and stays valid once marked, and what
// is left unmarked decodes without a replacement character it did not hold.
func FuzzMarkLoneSurrogates(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `{"\\ud83d":"\ud83d\ude00"}`, `["\udfff\ud800\udc00",1]`, `"\\\"\u00e9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var doc any
		if !utf8.ValidString(s) || json.Unmarshal([]byte(s), &doc) != nil {
			return // unmarshalJSON refuses invalid UTF-8 before
		}
		marked, found := MarkLoneSurrogates([]byte(s))
		if len(marked) != len(s) || json.Unmarshal(marked, &doc) != nil {
			t.Fatalf("%q marked as %q", s, marked)
		}
		if !found && !strings.Contains(s, "\uFFFD") && !strings.Contains(strings.ToLower(s), `\ufffd`) && strings.ContainsRune(fmt.Sprint(doc), '\uFFFD') {
			t.Fatalf("%q: a lone surrogate left unmarked: %v", s, doc)
		}
	})
}
