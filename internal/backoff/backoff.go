// Package backoff is the retry delay of the background workers that send
// to the outside world (internal/webhook, internal/notify): exponential,
// capped, with jitter so that retries of many messages spread out.
package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Delay is the wait before attempt n+1 after n attempts: base doubled for
// each attempt after the first, at most limit, then ±25% at random.
func Delay(base, limit time.Duration, attempts int) time.Duration {
	d := float64(base) * math.Pow(2, float64(max(attempts-1, 0)))
	d = math.Min(d, float64(limit))
	return time.Duration(d * (0.75 + 0.5*rand.Float64()))
}
