package testutil

import (
	"testing"
	"time"
)

// Deadline is when a test that waits for something gives up: shortly before
// the test binary's own deadline (go test -timeout, 10 minutes by default),
// leaving it time to say what it was waiting for. So a slow machine only
// makes a test wait longer, and only go test's -timeout ends a slow one.
// Without a deadline (-timeout 0, or a benchmark), an hour from now.
func Deadline(t testing.TB) time.Time {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok {
			return end.Add(-min(30*time.Second, time.Until(end)/10))
		}
	}
	return time.Now().Add(time.Hour)
}

// Await polls cond, more slowly as it goes (5 ms, doubling to 100 ms), until
// it returns nil; cond's error says what is still missing. When Deadline
// comes first the test fails, naming what it awaited and cond's last error.
func Await(t testing.TB, what string, cond func() error) {
	t.Helper()
	end := Deadline(t)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("still waiting for %s when the test's deadline (go test -timeout) neared: %v", what, err)
		}
		time.Sleep(pause)
	}
}
