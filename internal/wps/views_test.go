package wps

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// derivedID is uuid.NewSHA1 of its base and "/part…": ids already handed
// out stay the same.
func TestDerivedID(t *testing.T) {
	long := strings.Repeat("x", 300) // past derivedID's stack buffer
	for _, c := range []struct {
		base  string
		parts []string
	}{
		{"01a201c2-3633-7a05-991e-41cce54bcfe6", []string{"01a201c2-362b-7613-adc1-8e960400d843"}},
		{"357dc3e7-d085-5fcf-a9d0-add5068bb366", []string{"01a201c2-362b-7613-adc1-8e960400d843", "0"}},
		{"357dc3e7-d085-5fcf-a9d0-add5068bb366", []string{"row", "12"}},
		{"not a uuid", []string{"definition"}},
		{"01a201c2-3633-7a05-991e-41cce54bcfe6", []string{long}},
	} {
		ns, err := uuid.Parse(c.base)
		if err != nil {
			ns = uuid.NameSpaceOID
		}
		want := uuid.NewSHA1(ns, []byte("/"+strings.Join(c.parts, "/"))).String()
		if got := derivedID(c.base, c.parts...); got != want {
			t.Errorf("derivedID(%s, %v) = %s, want %s", c.base, c.parts, got, want)
		}
	}
}
