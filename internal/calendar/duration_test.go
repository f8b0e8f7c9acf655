package calendar

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"PT0S", 0},
		{"P0D", 0},
		{"PT4H", 4 * time.Hour},
		{"P1D", 24 * time.Hour},
		{"P1DT2H30M", 26*time.Hour + 30*time.Minute},
		{"PT90M", 90 * time.Minute},
		{"PT1H1M1S", time.Hour + time.Minute + time.Second},
		{"P30D", 30 * 24 * time.Hour},
		{"PT100000H", 100000 * time.Hour},
		{"P4166DT16H", 100000 * time.Hour},
	} {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, says string }{
		{"", "ISO 8601"},
		{"P", "ISO 8601"},
		{"PT", "ISO 8601"},
		{"P1DT", "ISO 8601"},
		{"T4H", "ISO 8601"},
		{"4H", "ISO 8601"},
		{"pt4h", "ISO 8601"},
		{"PT4", "ISO 8601"},
		{"P5", "ISO 8601"},
		{"PT4H4H", "ISO 8601"},
		{"PT1S1H", "ISO 8601"},
		{"P1H", "ISO 8601"},
		{"PT1D", "ISO 8601"},
		{"PT1.5H", "ISO 8601"},
		{"PT1,5H", "ISO 8601"},
		{"PT 4H", "ISO 8601"},
		{"PT4H ", "ISO 8601"},
		{"PT١H", "ISO 8601"},
		{"PT1e3S", "ISO 8601"},
		{"PT1234567890S", "ISO 8601"},
		{"-PT4H", "negative"},
		{"+PT4H", "negative"},
		{"P1Y", "months"},
		{"P2M", "months"},
		{"P1W", "months"},
		{"P1Y2M3DT4H", "months"},
		{"P1MT1H", "months"},
		{"PT100001H", "100000 hours"},
		{"P4167D", "100000 hours"},
	} {
		_, err := ParseDuration(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v; want an error saying %q", c.in, err, c.says)
		}
	}
}
