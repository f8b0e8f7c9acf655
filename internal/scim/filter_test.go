package scim

import "testing"

func TestParseFilter(t *testing.T) {
	ok := []struct{ in, attr, value string }{
		{`userName eq "ada@example.com"`, "userName", "ada@example.com"},
		{`USERNAME EQ "ada@example.com"`, "userName", "ada@example.com"},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "a@b.c"`, "userName", "a@b.c"},
		{`externalId eq "00u1\"x"`, "externalId", `00u1"x`},
		{`  userName  eq "a b"  `, "userName", "a b"},
	}
	for _, c := range ok {
		f, err := parseFilter(c.in, userSchema, "userName", "externalId")
		if err != nil || f.attr != c.attr || f.value != c.value {
			t.Errorf("%s: %+v, %v; want %s %q", c.in, f, err, c.attr, c.value)
		}
	}
	if f, err := parseFilter("", userSchema, "userName"); f != nil || err != nil {
		t.Errorf("empty: %+v, %v", f, err)
	}
	bad := []string{
		`userName`,
		`userName eq`,
		`userName co "a"`,
		`userName eq a@b.c`,
		`userName eq "a@b.c" and active eq true`,
		`userName eq "unterminated`,
		`displayName eq "x"`,
		`emails[type eq "work"].value eq "a@b.c"`,
		`userName eq 1`,
		`(userName eq "a")`,
	}
	for _, in := range bad {
		_, err := parseFilter(in, userSchema, "userName", "externalId")
		e, isErr := err.(*Error)
		if !isErr || e.Status != 400 || e.ScimType != "invalidFilter" {
			t.Errorf("%s: %v, want 400 invalidFilter", in, err)
		}
	}
}
