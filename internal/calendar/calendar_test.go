package calendar

import (
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, s Calendar) Working {
	t.Helper()
	c, errs := Parse(s)
	if len(errs) > 0 {
		t.Fatalf("parse %+v: %v", s, errs)
	}
	return c
}

// office is 08:00-12:00 and 13:00-17:00 on weekdays in zone.
func office(zone string, holidays ...string) Calendar {
	day := []string{"08:00-12:00", "13:00-17:00"}
	return Calendar{TimeZone: zone, WorkingHours: map[string][]string{"mon": day, "tue": day, "wed": day, "thu": day, "fri": day, "sat": {}, "sun": {}},
		Holidays: holidays}
}

func at(t *testing.T, zone, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAddWorking(t *testing.T) {
	const sp, berlin = "America/Sao_Paulo", "Europe/Berlin"
	nights := Calendar{TimeZone: berlin, WorkingHours: map[string][]string{"mon": {"22:00-06:00"}, "tue": {"22:00-06:00"}}}
	for _, c := range []struct {
		name       string
		spec       Calendar
		zone, from string
		d          time.Duration
		want       string // in zone
	}{
		{"within the morning", office(berlin), berlin, "2026-03-02 09:00", 2 * time.Hour, "2026-03-02 11:00"},
		{"over lunch", office(berlin), berlin, "2026-03-02 11:00", 2 * time.Hour, "2026-03-02 14:00"},
		{"a Friday evening's 24 hours end on Wednesday", office(berlin), berlin, "2026-03-06 16:00", 24 * time.Hour, "2026-03-11 16:00"},
		{"opened before work starts", office(berlin), berlin, "2026-03-02 06:30", time.Hour, "2026-03-02 09:00"},
		{"opened on a Saturday", office(berlin), berlin, "2026-03-07 10:00", 30 * time.Minute, "2026-03-09 08:30"},
		{"ends exactly at the end of a day's work", office(berlin), berlin, "2026-03-02 08:00", 8 * time.Hour, "2026-03-02 17:00"},
		{"opened on a holiday", office(berlin, "2026-05-01"), berlin, "2026-05-01 09:00", time.Hour, "2026-05-04 09:00"},
		{"a holiday in the middle", office(berlin, "2026-03-03"), berlin, "2026-03-02 16:00", 2 * time.Hour, "2026-03-04 09:00"},
		{"night shift across midnight", nights, berlin, "2026-03-02 23:00", 3 * time.Hour, "2026-03-03 02:00"},
		{"night shift: the rest on the next night", nights, berlin, "2026-03-03 05:00", 2 * time.Hour, "2026-03-03 23:00"},
		// Europe/Berlin springs forward on 2026-03-29 at 02:00: the 24/7 calendar counts real hours.
		{"Berlin's spring-forward day, every hour working", Default(), berlin, "2026-03-28 12:00", 24 * time.Hour, "2026-03-29 13:00"},
		{"Berlin's fall-back day", Default(), berlin, "2026-10-24 12:00", 24 * time.Hour, "2026-10-25 11:00"},
		// São Paulo's clocks went from 00:00 to 01:00 on 2018-11-04 and back on 2019-02-17.
		{"São Paulo 2018: midnight skipped", Calendar{TimeZone: sp, WorkingHours: Default().WorkingHours}, sp, "2018-11-03 23:00", 2 * time.Hour, "2018-11-04 02:00"},
		{"São Paulo 2019: the hour from 23:00 twice", Calendar{TimeZone: sp, WorkingHours: Default().WorkingHours}, sp, "2019-02-16 22:00", 3 * time.Hour, "2019-02-17 00:00"},
		{"São Paulo office hours around the change", office(sp), sp, "2018-11-02 16:00", 2 * time.Hour, "2018-11-05 09:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := mustParse(t, c.spec).AddWorking(at(t, c.zone, c.from), c.d)
			want := at(t, c.zone, c.want)
			if !ok || !got.Equal(want) {
				t.Fatalf("got %v (%v), want %v", got, ok, want)
			}
		})
	}
	if _, ok := mustParse(t, Calendar{TimeZone: "UTC", WorkingHours: map[string][]string{}}).AddWorking(time.Now(), time.Hour); ok {
		t.Fatal("a calendar without working time gave a deadline")
	}
}

func TestAddDays(t *testing.T) {
	const berlin = "Europe/Berlin"
	for _, c := range []struct {
		name, from string
		n          int
		holidays   []string
		want       string
	}{
		{"the next day's end of work", "2026-03-02 10:00", 1, nil, "2026-03-03 17:00"},
		{"from a Friday, Monday", "2026-03-06 16:59", 1, nil, "2026-03-09 17:00"},
		{"from a Saturday", "2026-03-07 10:00", 1, nil, "2026-03-09 17:00"},
		{"three days over a holiday", "2026-04-30 10:00", 3, []string{"2026-05-01"}, "2026-05-06 17:00"},
		{"opened on a holiday", "2026-05-01 10:00", 1, []string{"2026-05-01"}, "2026-05-04 17:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := mustParse(t, office(berlin, c.holidays...)).AddDays(at(t, berlin, c.from), c.n)
			if want := at(t, berlin, c.want); !ok || !got.Equal(want) {
				t.Fatalf("got %v (%v), want %v", got, ok, want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		spec  Calendar
		field string
	}{
		{Calendar{TimeZone: "Mars/Olympus"}, "timeZone"},
		{Calendar{TimeZone: ""}, "timeZone"},
		{Calendar{TimeZone: "UTC", WorkingHours: map[string][]string{"monday": {"08:00-12:00"}}}, "workingHours.monday"},
		{Calendar{TimeZone: "UTC", WorkingHours: map[string][]string{"mon": {"25:00-26:00"}}}, "workingHours.mon[0]"},
		{Calendar{TimeZone: "UTC", WorkingHours: map[string][]string{"mon": {"08:00"}}}, "workingHours.mon[0]"},
		{Calendar{TimeZone: "UTC", WorkingHours: map[string][]string{"mon": {"08:00-08:00"}}}, "workingHours.mon[0]"},
		{Calendar{TimeZone: "UTC", WorkingHours: map[string][]string{"mon": {"08:00-12:00", "11:00-13:00"}}}, "workingHours.mon"},
		{Calendar{TimeZone: "UTC", WorkingHours: map[string][]string{"mon": {"22:00-06:00"}, "tue": {"05:00-09:00"}}}, "workingHours.mon"},
		{Calendar{TimeZone: "UTC", Holidays: []string{"2026-02-30"}}, "holidays[0]"},
	} {
		_, errs := Parse(c.spec)
		if len(errs) == 0 || !strings.HasPrefix(errs[0].Field, c.field) {
			t.Errorf("%+v: %v, want an error on %s", c.spec, errs, c.field)
		}
	}
	if _, errs := Parse(Default()); len(errs) > 0 {
		t.Fatalf("the default calendar: %v", errs)
	}
}
