package wps

import "testing"

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"Acme":                          "Acme",
		"Acme\r\nBcc: evil@example.com": "Acme Bcc: evil@example.com",
		"  a\tb\x00c\u2028d  ":          "a b c d",
		"çãé":                           "çãé",
	} {
		if got := OneLine(in, 200); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
	if got := OneLine("abcdefghij", 5); got != "abcd…" {
		t.Errorf("cut: %q", got)
	}
}
