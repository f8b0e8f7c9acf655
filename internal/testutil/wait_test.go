package testutil

import (
	"errors"
	"testing"
	"time"
)

func TestAwait(t *testing.T) {
	calls := 0
	Await(t, "the third call", func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("%d calls", calls)
	}
}

// Deadline leaves time before go test's own deadline to say what a test
// waited for; without one (-timeout 0), waits are all but unbounded.
func TestDeadline(t *testing.T) {
	end, ok := t.Deadline()
	got := Deadline(t)
	switch {
	case ok && (!got.Before(end) || got.Before(end.Add(-31*time.Second))):
		t.Fatalf("Deadline %v, test binary's %v", got, end)
	case !ok && time.Until(got) < 59*time.Minute:
		t.Fatalf("Deadline %v without -timeout", got)
	}
}
