package notify

import (
	"testing"
	"time"
)

// TestNextDigest: the next 08:00 in the user's zone, strictly after now;
// UTC for no zone or an unknown one; right across a change of offset.
func TestNextDigest(t *testing.T) {
	for _, c := range []struct{ now, zone, want string }{
		{"2026-01-05T09:00:00Z", "", "2026-01-06T08:00:00Z"},
		{"2026-01-05T07:59:00Z", "Mars/Olympus", "2026-01-05T08:00:00Z"},
		{"2026-01-05T09:00:00Z", "America/Sao_Paulo", "2026-01-05T11:00:00Z"},
		{"2026-01-05T11:00:00Z", "America/Sao_Paulo", "2026-01-06T11:00:00Z"},
		{"2026-01-05T23:30:00Z", "Asia/Tokyo", "2026-01-06T23:00:00Z"},
		{"2026-03-28T09:00:00Z", "Europe/Berlin", "2026-03-29T06:00:00Z"}, // summer time starts on the 29th
		{"2026-10-24T07:00:00Z", "Europe/Berlin", "2026-10-25T07:00:00Z"}, // and ends on the 25th
	} {
		now, _ := time.Parse(time.RFC3339, c.now)
		if got := NextDigest(now, c.zone).UTC().Format(time.RFC3339); got != c.want {
			t.Errorf("NextDigest(%s, %q) = %s, want %s", c.now, c.zone, got, c.want)
		}
	}
}
