// Package calendar counts working time over an organization's business
// calendar (semantics section 17): a time zone, working hours per weekday
// (several intervals a day, one may run past midnight) and holidays. It is
// pure: no clock, no I/O; the domain passes in the instants.
package calendar

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Days are the weekday keys of working hours, Sunday first as time.Weekday.
var Days = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Calendar is a business calendar as the API takes and answers it: {timeZone, workingHours: {"mon":
// ["08:00-12:00", "13:00-17:00"], …}, holidays: ["YYYY-MM-DD"]}.
type Calendar struct {
	TimeZone     string              `json:"timeZone" doc:"An IANA time zone name (America/Sao_Paulo)"`
	WorkingHours map[string][]string `json:"workingHours" doc:"By day (sun, mon, tue, wed, thu, fri, sat): intervals HH:MM-HH:MM (24:00 ends a day; an end before the start runs past midnight); a day left out has no working time"`
	Holidays     []string            `json:"holidays" doc:"Dates YYYY-MM-DD without working time"`
}

// Default is every hour of every day in UTC: working time is wall-clock time.
func Default() Calendar {
	hours := map[string][]string{}
	for _, d := range Days {
		hours[d] = []string{"00:00-24:00"}
	}
	return Calendar{TimeZone: "UTC", WorkingHours: hours, Holidays: []string{}}
}

// Working is a checked Calendar, ready for arithmetic.
type Working struct {
	loc      *time.Location
	hours    [7][]span // by weekday, sorted, not overlapping
	holidays map[date]bool
}

// span is one working interval of a day, in minutes from its midnight; end
// may pass 24:00 (an interval that runs into the next day).
type span struct{ start, end int }

type date struct {
	y int
	m time.Month
	d int
}

func dateOf(t time.Time) date { y, m, d := t.Date(); return date{y, m, d} }

// FieldError names what is wrong in a Calendar (the API's field path).
type FieldError struct{ Field, Message string }

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// Parse checks s and returns its Working, or every error by field: an
// unknown time zone, a day that is not a weekday key, an interval that is
// not "HH:MM-HH:MM" (24:00 ends a day; an end before the start runs past
// midnight), intervals of a day that overlap, a holiday that is not a date.
func Parse(s Calendar) (Working, []FieldError) {
	var errs []FieldError
	c := Working{holidays: map[date]bool{}}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil || s.TimeZone == "" || s.TimeZone == "Local" {
		errs = append(errs, FieldError{"timeZone", "must be an IANA time zone name such as America/Sao_Paulo"})
		loc = time.UTC
	}
	c.loc = loc
	for day, list := range s.WorkingHours {
		wd := -1
		for i, d := range Days {
			if d == day {
				wd = i
			}
		}
		field := "workingHours." + day
		if wd < 0 {
			errs = append(errs, FieldError{field, "is not a day: use sun, mon, tue, wed, thu, fri or sat"})
			continue
		}
		var spans []span
		for i, iv := range list {
			sp, ok := parseSpan(iv)
			if !ok {
				errs = append(errs, FieldError{fmt.Sprintf("%s[%d]", field, i), `must be "HH:MM-HH:MM" with different times (00:00 to 24:00)`})
				continue
			}
			spans = append(spans, sp)
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
		for i := 1; i < len(spans); i++ {
			if spans[i].start < spans[i-1].end {
				errs = append(errs, FieldError{field, "has intervals that overlap"})
				break
			}
		}
		c.hours[wd] = spans
	}
	for wd, spans := range c.hours { // an interval past midnight runs into the next day's hours
		next := c.hours[(wd+1)%7]
		if n := len(spans); n > 0 && spans[n-1].end > 24*60 && len(next) > 0 && next[0].start < spans[n-1].end-24*60 {
			errs = append(errs, FieldError{"workingHours." + Days[wd], "has an interval past midnight that overlaps the next day's first"})
		}
	}
	for i, h := range s.Holidays {
		t, err := time.Parse(time.DateOnly, h)
		if err != nil {
			errs = append(errs, FieldError{fmt.Sprintf("holidays[%d]", i), "must be a date YYYY-MM-DD"})
			continue
		}
		c.holidays[dateOf(t)] = true
	}
	return c, errs
}

// parseSpan reads "HH:MM-HH:MM"; an end at or before the start runs into
// the next day (22:00-06:00), and 24:00 is the end of the day.
func parseSpan(s string) (span, bool) {
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return span{}, false
	}
	a, okA := parseClock(from)
	b, okB := parseClock(to)
	if !okA || !okB || a == b || a == 24*60 {
		return span{}, false
	}
	if b < a {
		b += 24 * 60
	}
	return span{a, b}, true
}

func parseClock(s string) (int, bool) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || len(h) != 2 || len(m) != 2 {
		return 0, false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59 || hh > 24 || hh == 24 && mm != 0 {
		return 0, false
	}
	return hh*60 + mm, true
}

// working are the working intervals that start on the calendar day of d (in
// the calendar's zone), as instants; none on a holiday. An interval runs
// in wall-clock time: across a daylight-saving change it is an hour
// shorter or longer.
func (c Working) working(d date) [][2]time.Time {
	if c.holidays[d] {
		return nil
	}
	wd := time.Date(d.y, d.m, d.d, 12, 0, 0, 0, c.loc).Weekday()
	var out [][2]time.Time
	for _, sp := range c.hours[wd] {
		from := c.at(d, sp.start)
		to := c.at(d, sp.end)
		if to.After(from) {
			out = append(out, [2]time.Time{from, to})
		}
	}
	return out
}

// at is minute m of day d (m may pass 24:00) as an instant. A wall-clock
// time that a daylight-saving change skips is read as time.Date reads it
// (moved forward); 24:00 is the next day's midnight.
func (c Working) at(d date, m int) time.Time {
	return time.Date(d.y, d.m, d.d, 0, m, 0, 0, c.loc)
}

// maxDays bounds a search for working time: a calendar with none (every
// day a holiday, no hours) has no deadline.
const maxDays = 3660

// AddWorking is the instant at which d of working time has passed since
// from (BUSINESS_HOURS): time outside the working intervals does not count.
// ok is false when the calendar has no working time within ten years.
func (c Working) AddWorking(from time.Time, d time.Duration) (time.Time, bool) {
	from = from.In(c.loc)
	day := dateOf(from)
	// An interval of the day before may run into from's day.
	start := time.Date(day.y, day.m, day.d-1, 12, 0, 0, 0, c.loc)
	left := d
	for i := 0; i <= maxDays; i++ {
		cur := start.AddDate(0, 0, i)
		for _, iv := range c.working(dateOf(cur)) {
			a, b := iv[0], iv[1]
			if !b.After(from) {
				continue
			}
			if a.Before(from) {
				a = from
			}
			if avail := b.Sub(a); left <= avail {
				return a.Add(left), true
			} else {
				left -= avail
			}
		}
	}
	return time.Time{}, false
}

// AddDays is the deadline of n business days from from (BUSINESS_DAYS):
// the end of the last working interval of the n-th working day after
// from's own day (a day with working time that is not a holiday). A step
// opened on a Friday with a deadline of 1 business day is due at the end
// of Monday's work.
func (c Working) AddDays(from time.Time, n int) (time.Time, bool) {
	from = from.In(c.loc)
	day := dateOf(from)
	noon := time.Date(day.y, day.m, day.d, 12, 0, 0, 0, c.loc)
	for i, seen := 1, 0; i <= maxDays; i++ {
		ivs := c.working(dateOf(noon.AddDate(0, 0, i)))
		if len(ivs) == 0 {
			continue
		}
		if seen++; seen >= n {
			return ivs[len(ivs)-1][1], true
		}
	}
	return time.Time{}, false
}
