package wps

import (
	"context"
	"slices"
	"time"
)

// What a user chooses to be mailed about work (semantics §16).
const (
	PrefImmediate = "immediate" // each work.* message as it happens (the default)
	PrefDaily     = "daily"     // one work.digest a day at 08:00 in the user's time zone listing what waits
	PrefOff       = "off"       // no work.* message (invitations and resets still go)
)

// KindWorkDigest is the daily list of what waits on a user who chose daily.
const KindWorkDigest = "work.digest"

// DigestHour is the hour of the daily digest, in each user's time zone.
const DigestHour = 8

// NotificationPrefs is GET/PUT /v1/users/me/notifications.
type NotificationPrefs struct {
	Email string `json:"email" enum:"immediate,daily,off" doc:"Mail about work: immediate (each message as it happens), daily (one digest at 08:00 in the user's time zone listing what waits) or off"`
}

// DigestDue is a user whose daily digest is due.
type DigestDue struct {
	OrgID  string
	UserID string
}

// GetNotificationPrefs is the caller's choice (immediate when never set).
func (s *Service) GetNotificationPrefs(ctx context.Context, p *Principal) (NotificationPrefs, error) {
	out := NotificationPrefs{Email: PrefImmediate}
	err := s.store.Read(ctx, func(tx Tx) error {
		pref, err := tx.GetNotificationPref(p.OrgID, p.UserID)
		if pref != "" {
			out.Email = pref
		}
		return err
	})
	return out, err
}

// SetNotificationPrefs saves the caller's choice. Errors: CodeInvalid.
func (s *Service) SetNotificationPrefs(ctx context.Context, p *Principal, in NotificationPrefs) (NotificationPrefs, error) {
	if !slices.Contains([]string{PrefImmediate, PrefDaily, PrefOff}, in.Email) {
		return in, Invalid("email", "must be immediate, daily or off")
	}
	err := s.store.Write(ctx, func(tx Tx) error {
		if _, err := activeUser(tx, p.OrgID, p.UserID); err != nil {
			return err
		}
		return tx.PutNotificationPref(p.OrgID, p.UserID, in.Email, s.Now())
	})
	return in, err
}

// NextDigest is the first DigestHour o'clock in zone (a time zone name;
// "" or unknown: UTC) after now: when a daily user's next digest is due.
func NextDigest(now time.Time, zone string) time.Time {
	loc, err := time.LoadLocation(zone)
	if zone == "" || err != nil {
		loc = time.UTC
	}
	t := now.In(loc)
	next := time.Date(t.Year(), t.Month(), t.Day(), DigestHour, 0, 0, 0, loc)
	for !next.After(now) {
		next = time.Date(next.Year(), next.Month(), next.Day()+1, DigestHour, 0, 0, 0, loc)
	}
	return next
}

// SendDigests writes the daily digests that are due: each user who chose
// daily whose next digest is due (08:00 in their time zone) gets one
// listing the measurements the Inbox lists for them (none when nothing
// waits), and their next is set to the next 08:00 in their zone. Each
// user's digest is claimed and written in one transaction, so it is
// written once across replicas. It returns how many were written.
func (s *Service) SendDigests(ctx context.Context) (int, error) {
	if !s.mail.Enabled {
		return 0, nil
	}
	n := 0
	err := s.store.Write(ctx, func(tx Tx) error {
		n = 0
		now := s.Now()
		due, err := tx.ClaimDigests(now, 50)
		if err != nil {
			return err
		}
		for _, d := range due {
			p, err := principalOf(tx, d.OrgID, d.UserID)
			if err != nil && !IsCode(err, CodeNotFound) {
				return err
			}
			zone := ""
			if p != nil {
				zone = p.User.TimeZone
			}
			if err := tx.SetDigestDue(d.OrgID, d.UserID, now, At(NextDigest(now.Time, zone))); err != nil {
				return err
			}
			if p == nil || p.User.Status != UserActive || !p.Can(FnMeasurementRead) {
				continue
			}
			dels, err := delegatorsOf(tx, d.OrgID, d.UserID, now)
			if err != nil {
				return err
			}
			if !mayAct(p) {
				if dels = slices.DeleteFunc(dels, func(d delegator) bool { return !mayActFor(d) }); len(dels) == 0 {
					continue
				}
			}
			f := fillerOf(p.User, p.Policies, dels)
			if !mayAct(p) {
				f.Keys = nil // only delegated seats
			}
			list, total, err := tx.ListMeasurements(d.OrgID, MeasurementQuery{Page: Page{Page: 1, PerPage: 20}, Actionable: true,
				Filler: f, Now: now})
			if err != nil {
				return err
			}
			if total == 0 {
				continue
			}
			facts := MailFacts{Link: s.link("/inbox"), Total: total}
			for _, m := range list {
				facts.Items = append(facts.Items, MailItem{Name: OneLine(m.Name, 100), Link: s.link("/measurements/" + m.ID)})
			}
			if err := s.queueMail(tx, d.OrgID, KindWorkDigest, d.UserID, p.User.Email, facts, At(now.Add(notificationWindow))); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
