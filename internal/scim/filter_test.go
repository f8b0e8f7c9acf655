package scim

import (
	"fmt"
	"testing"
)

func TestParseFilter(t *testing.T) {
	allowed := []string{"userName", "externalId", "emails.value"}
	ok := []struct{ in, want string }{
		{`userName eq "ada@example.com"`, `[{userName ada@example.com}]`},
		{`USERNAME EQ "ada@example.com"`, `[{userName ada@example.com}]`},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "a@b.c"`, `[{userName a@b.c}]`},
		{`externalId eq "00u1\"x"`, `[{externalId 00u1"x}]`},
		{`  userName  eq  "a b"  `, `[{userName a b}]`},
		{`emails[type eq "work"].value eq "a@b.c"`, `[{emails.value a@b.c}]`},
		{`userName eq "a and b" AND externalId eq "x"`, `[{userName a and b} {externalId x}]`},
	}
	for _, c := range ok {
		f, err := parseFilter(c.in, userSchema, allowed...)
		if got := fmt.Sprint(f); err != nil || got != c.want {
			t.Errorf("%s: %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if f, err := parseFilter("", userSchema, allowed...); f != nil || err != nil {
		t.Errorf("empty: %+v, %v", f, err)
	}
	bad := []string{
		`userName`,
		`userName eq`,
		`userName co "a"`,
		`userName eq a@b.c`,
		`userName eq "a@b.c" and active eq true`,
		`userName eq "a@b.c" or externalId eq "x"`,
		`userName eq "a@b.c" and`,
		`userName eq "a@b.c"x`,
		`userName eq "unterminated`,
		`displayName eq "x"`,
		`emails[type eq "home"].value eq "a@b.c"`,
		`userName eq 1`,
		`(userName eq "a")`,
		`not (userName eq "a")`,
		`userName eq "a" and userName eq "a" and userName eq "a" and userName eq "a" and userName eq "a"`,
	}
	for _, in := range bad {
		_, err := parseFilter(in, userSchema, allowed...)
		e, isErr := err.(*Error)
		if !isErr || e.Status != 400 || e.ScimType != "invalidFilter" {
			t.Errorf("%s: %v, want 400 invalidFilter", in, err)
		}
	}
}
