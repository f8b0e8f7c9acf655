package wps

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// What a user chooses to be mailed about work (semantics §16).
const (
	PrefImmediate = "immediate" // each work.* message as it happens (the default)
	PrefDaily     = "daily"     // one work.digest a day at 08:00 UTC listing what waits
	PrefOff       = "off"       // no work.* message (invitations and resets still go)
)

// KindWorkDigest is the daily list of what waits on a user who chose daily.
const KindWorkDigest = "work.digest"

// DigestHour is the hour (UTC, until users have a time zone) of the daily digest.
const DigestHour = 8

// NotificationPrefs is GET/PUT /v1/users/me/notifications.
type NotificationPrefs struct {
	Email string `json:"email" enum:"immediate,daily,off" doc:"Mail about work: immediate (each message as it happens), daily (one digest at 08:00 UTC listing what waits) or off"`
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

// digestCutoff is the last 08:00 UTC at or before now: a daily user whose
// last digest is older gets one.
func digestCutoff(now time.Time) time.Time {
	now = now.UTC()
	c := time.Date(now.Year(), now.Month(), now.Day(), DigestHour, 0, 0, 0, time.UTC)
	if now.Before(c) {
		c = c.AddDate(0, 0, -1)
	}
	return c
}

// SendDigests writes the daily digests that are due: each user who chose
// daily and had none since the last 08:00 UTC gets one listing the
// measurements the Inbox lists for them (none when nothing waits). Each
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
		due, err := tx.ClaimDigests(At(digestCutoff(now.Time)), now, 50)
		if err != nil {
			return err
		}
		for _, d := range due {
			p, err := principalOf(tx, d.OrgID, d.UserID)
			if IsCode(err, CodeNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if p.User.Status != UserActive || !p.Can(FnMeasurementRead) {
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
			subject, body := digestMessage(list, total, s.link("/inbox"), s.link("/measurements/"))
			if err := s.queueMail(tx, d.OrgID, KindWorkDigest, d.UserID, p.User.Email, subject, body, At(now.Add(notificationWindow))); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func digestMessage(list []ListedMeasurement, total int, inbox, measurements string) (subject, body string) {
	subject = fmt.Sprintf("%d measurements wait for you", total)
	if total == 1 {
		subject = "1 measurement waits for you"
	}
	var b strings.Builder
	b.WriteString("Waiting for you today:\n\n")
	for _, m := range list {
		fmt.Fprintf(&b, "- %s: %s%s\n", OneLine(m.Name, 100), measurements, m.ID)
	}
	if total > len(list) {
		fmt.Fprintf(&b, "- and %d more\n", total-len(list))
	}
	fmt.Fprintf(&b, "\nYour Inbox: %s\n", inbox)
	return subject, b.String()
}
