package backoff

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	for _, c := range []struct {
		attempts int
		want     time.Duration
	}{{0, 5 * time.Second}, {1, 5 * time.Second}, {2, 10 * time.Second}, {3, 20 * time.Second}, {20, time.Hour}} {
		for range 20 {
			got := Delay(5*time.Second, time.Hour, c.attempts)
			if got < c.want*3/4 || got > c.want*5/4 {
				t.Fatalf("after %d attempts: %v, want %v ±25%%", c.attempts, got, c.want)
			}
		}
	}
}
