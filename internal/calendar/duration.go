package calendar

import (
	"errors"
	"regexp"
	"strconv"
	"time"
)

// MaxDuration bounds a duration ParseDuration accepts (as deadlines are
// bounded: 100000 hours).
const MaxDuration = 100000 * time.Hour

// isoDuration is the PnDTnHnMnS subset of ISO 8601 durations: whole
// numbers, days of 24 hours, each designator at most once and in order.
var isoDuration = regexp.MustCompile(`^P(?:([0-9]{1,9})D)?(?:T(?:([0-9]{1,9})H)?(?:([0-9]{1,9})M)?(?:([0-9]{1,9})S)?)?$`)

// ParseDuration reads an ISO 8601 duration of the PnDTnHnMnS subset
// ("PT0S", "PT4H", "P1D", "P1DT2H30M"); a day is 24 hours. Years and
// months are refused (their length depends on the date they start from,
// and a week is written as P7D); so are fractions, signs, an empty
// duration ("P", "PT", a "T" with nothing after it) and durations longer
// than MaxDuration. The error says which, for a 422.
func ParseDuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	switch {
	case len(s) > 0 && (s[0] == '-' || s[0] == '+'):
		return 0, errors.New("must not be negative or signed: escalations come after dueAt")
	case m == nil && yearsOrMonths.MatchString(s):
		return 0, errors.New("years, months and weeks are not accepted (a month or a year has no fixed length): write days, as P30D")
	case m == nil || s == "P" || s[len(s)-1] == 'T':
		return 0, errors.New(`must be an ISO 8601 duration PnDTnHnMnS in whole numbers, as "PT0S", "PT4H", "P1D" or "P1DT2H30M"`)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, _ := strconv.ParseInt(m[i+1], 10, 64) // at most 9 digits: no overflow
		d += time.Duration(n) * unit
		if d > MaxDuration {
			return 0, errors.New("must be at most 100000 hours")
		}
	}
	return d, nil
}

// yearsOrMonths tells a duration with Y, W or a date-part M from other
// malformed ones, to say why it is refused.
var yearsOrMonths = regexp.MustCompile(`^P[0-9.,]*[YMW]|^P[^T]*[0-9][YMW]`)
