package httpapi

import "testing"

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
		got, found := markLoneSurrogates([]byte(in))
		if string(got) != want || found != (in != want) {
			t.Errorf("%s: %s %v, want %s", in, got, found, want)
		}
	}
}

func TestWithoutIndexes(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "a[0].b": "a.b", "a[1][2].b[3]": "a.b", "[0].a": ".a"} {
		if got := withoutIndexes(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
