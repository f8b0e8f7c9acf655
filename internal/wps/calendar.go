package wps

import (
	"context"
	"encoding/json"
	"time"

	"wps/internal/calendar"
)

// The deadline types that count working time over the org's business
// calendar (semantics section 17).
const (
	DeadlineBusinessHours = "BUSINESS_HOURS"
	DeadlineBusinessDays  = "BUSINESS_DAYS"
)

// CalendarVersion is the org's business calendar in force from From on.
type CalendarVersion struct {
	From     Time
	Calendar calendar.Calendar
}

// GetCalendar returns the org's business calendar: the default (UTC,
// every hour of every day) until one is set. Any member reads it.
func (s *Service) GetCalendar(ctx context.Context, p *Principal) (calendar.Calendar, error) {
	var list []CalendarVersion
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		list, err = tx.ListCalendars(p.OrgID)
		return err
	})
	if err != nil || len(list) == 0 {
		return calendar.Default(), err
	}
	return list[len(list)-1].Calendar, nil
}

// PutCalendar sets the org's business calendar (org:update). It is kept as
// a new version from now on: a step already open keeps the deadline it got
// when it opened, counted over the calendar in force then. A day missing
// from workingHours has no working time. Errors: CodeForbidden; CodeInvalid
// naming each bad field (timeZone, workingHours.mon[0], holidays[2]).
func (s *Service) PutCalendar(ctx context.Context, p *Principal, spec calendar.Calendar) (calendar.Calendar, error) {
	if err := p.Require(FnOrgUpdate); err != nil {
		return spec, err
	}
	if spec.WorkingHours == nil {
		spec.WorkingHours = map[string][]string{}
	}
	if spec.Holidays == nil {
		spec.Holidays = []string{}
	}
	if _, errs := calendar.Parse(spec); len(errs) > 0 {
		var v Validator
		for _, e := range errs {
			v.Add(e.Field, "%s", e.Message)
		}
		return spec, v.Err()
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return spec, Internal(err)
	}
	return spec, s.store.Write(ctx, func(tx Tx) error {
		list, err := tx.ListCalendars(p.OrgID)
		if err != nil {
			return err
		}
		before := calendar.Default()
		if len(list) > 0 {
			before = list[len(list)-1].Calendar
		}
		if err := tx.PutCalendar(p.OrgID, s.Now(), string(b)); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditCalendarUpdated, Actor: actorOf(p),
			Target: AuditTarget{Kind: TargetOrg, ID: p.OrgID, Name: "calendar"}, Changes: diffFields(before, spec)})
	})
}

// calendarAt is the org's calendar in force at t (the default before any).
func calendarAt(versions []CalendarVersion, t time.Time) calendar.Working {
	spec := calendar.Default()
	for _, v := range versions {
		if v.From.After(t) {
			break
		}
		spec = v.Calendar
	}
	c, _ := calendar.Parse(spec) // stored versions were checked when set
	return c
}

// businessDeadline reports a deadline type that counts over the calendar.
func businessDeadline(st Step) bool {
	return st.DeadlineType == DeadlineBusinessHours || st.DeadlineType == DeadlineBusinessDays
}
