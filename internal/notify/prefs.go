package notify

import (
	"context"
	"slices"
	"time"

	"wps/internal/wps"
)

// DigestHour is the hour of the daily digest, in each user's time zone.
const DigestHour = 8

// GetNotificationPrefs is the caller's choice (immediate when never set).
func GetNotificationPrefs(ctx context.Context, s *wps.Service, p *wps.Principal) (wps.NotificationPrefs, error) {
	out := wps.NotificationPrefs{Email: wps.PrefImmediate}
	err := s.Store().Read(ctx, func(tx wps.Tx) error {
		pref, err := tx.GetNotificationPref(p.OrgID, p.UserID)
		if pref != "" {
			out.Email = pref
		}
		return err
	})
	return out, err
}

// SetNotificationPrefs saves the caller's choice; a change is a
// user.notifications_changed audit event. Errors: CodeInvalid.
func SetNotificationPrefs(ctx context.Context, s *wps.Service, p *wps.Principal, in wps.NotificationPrefs) (wps.NotificationPrefs, error) {
	if !slices.Contains([]string{wps.PrefImmediate, wps.PrefDaily, wps.PrefOff}, in.Email) {
		return in, wps.Invalid("email", "must be immediate, daily or off")
	}
	err := s.Store().Write(ctx, func(tx wps.Tx) error {
		u, err := wps.ActiveUser(tx, p.OrgID, p.UserID)
		if err != nil {
			return err
		}
		before, err := tx.GetNotificationPref(p.OrgID, p.UserID)
		if err != nil {
			return err
		}
		if before == "" {
			before = wps.PrefImmediate
		}
		if err := tx.PutNotificationPref(p.OrgID, p.UserID, in.Email, s.Now()); err != nil || before == in.Email {
			return err
		}
		return s.RecordAudit(tx, wps.AuditEvent{OrgID: p.OrgID, Type: wps.AuditNotificationPrefs, Actor: wps.ActorOf(p),
			Target:  wps.AuditTarget{Kind: wps.TargetUser, ID: u.ID, Name: u.Email},
			Changes: map[string]wps.AuditChange{"email": {Before: before, After: in.Email}}})
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
// listing the measurements the Inbox lists for them (wps.DigestFiller;
// none when nothing waits), and their next is set to the next 08:00 in
// their zone. Each user's digest is claimed and written in one
// transaction, so it is written once across replicas. It returns how many
// were written.
func SendDigests(ctx context.Context, s *wps.Service) (int, error) {
	if !s.MailEnabled() {
		return 0, nil
	}
	n := 0
	err := s.Store().Write(ctx, func(tx wps.Tx) error {
		n = 0
		now := s.Now()
		due, err := tx.ClaimDigests(now, 50)
		if err != nil {
			return err
		}
		for _, d := range due {
			u, f, ok, err := wps.DigestFiller(tx, d.OrgID, d.UserID, now)
			if err != nil {
				return err
			}
			zone := ""
			if u != nil {
				zone = u.TimeZone
			}
			if err := tx.SetDigestDue(d.OrgID, d.UserID, now, wps.At(NextDigest(now.Time, zone))); err != nil {
				return err
			}
			if !ok {
				continue
			}
			list, total, err := tx.ListMeasurements(d.OrgID, wps.MeasurementQuery{Page: wps.Page{Page: 1, PerPage: 20}, Actionable: true,
				Filler: f, Now: now})
			if err != nil {
				return err
			}
			if total == 0 {
				continue
			}
			facts := wps.MailFacts{Link: s.Link("/inbox"), Total: total}
			for _, m := range list {
				facts.Items = append(facts.Items, wps.MailItem{Name: wps.OneLine(m.Name, 100), Link: s.Link("/measurements/" + m.ID)})
			}
			if err := s.QueueMail(tx, d.OrgID, wps.KindWorkDigest, d.UserID, u.Email, facts, wps.At(now.Add(wps.NotificationWindow))); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// ListNotifications lists the outbox, newest first: the caller's own
// messages, or with users:manage everyone's (q.UserID filters). Errors:
// CodeForbidden for another user's messages without users:manage.
func ListNotifications(ctx context.Context, s *wps.Service, p *wps.Principal, q wps.NotificationQuery) ([]wps.Notification, int, error) {
	if !p.Can(wps.FnUsersManage) {
		if q.UserID != "" && q.UserID != p.UserID {
			return nil, 0, wps.Errorf(wps.CodeForbidden, "only users:manage lists other users' notifications")
		}
		q.UserID = p.UserID
	}
	var list []wps.Notification
	var total int
	err := s.Store().Read(ctx, func(tx wps.Tx) (err error) {
		list, total, err = tx.ListNotifications(p.OrgID, q)
		return err
	})
	return list, total, err
}
