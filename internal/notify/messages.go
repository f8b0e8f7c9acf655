package notify

import (
	"fmt"
	"strings"
	"time"

	"wps/internal/lang"
	"wps/internal/wps"
)

// The texts of the messages: the domain writes what a message is about
// (wps.MailFacts); here it is worded in the recipient's language (their
// own setting, else for an invitation the inviter's, else English) with
// times in their time zone. The words are in internal/lang's catalogues
// (mail.*). Names in them were put on one line (wps.OneLine) when written:
// a name cannot add a header or a line of its own. They carry no
// parameter value.

// render words message n for its recipient u (nil for an invitation).
// A body that holds no facts (a message written before the domain wrote
// facts) is sent as it was written.
func render(n wps.Notification, u *wps.User) (subject, body string) {
	f, err := wps.ParseMailFacts(n.Body)
	if err != nil {
		return n.Subject, n.Body
	}
	locale, zone := f.Locale, f.TimeZone
	if u != nil {
		locale, zone = u.Locale, u.TimeZone
	}
	loc, err := time.LoadLocation(zone)
	if zone == "" || err != nil {
		loc = time.UTC
	}
	p := lang.For(lang.Pick(locale, ""))
	return words(p, loc, n.Kind, f)
}

// words are the subject and text of a message of kind about f in p's
// language, with times in loc.
func words(p *lang.Printer, loc *time.Location, kind string, f wps.MailFacts) (subject, body string) {
	what := f.Measurement
	if what == "" {
		what = p.T("mail.newMeasurement") // its number is given at commit (PostgreSQL)
	}
	due := ""
	if f.DueAt != nil {
		due = p.When(f.DueAt.Time, loc)
	}
	args := []any{"Org", f.Org, "Inviter", f.Inviter, "Link", f.Link, "Measurement", what, "Process", f.Process,
		"Step", f.Step, "Due", due, "Policy", f.Policy, "After", f.After}
	t := func(id string, more ...any) string { return p.T(id, append(append([]any(nil), args...), more...)...) }
	switch kind {
	case wps.KindInvite:
		return t("mail.invite.subject"), t("mail.invite.body")
	case wps.KindPasswordReset:
		return t("mail.reset.subject"), t("mail.reset.body")
	case wps.KindWorkWaiting:
		dueText := t("mail.noDeadline")
		if due != "" {
			dueText = t("mail.dueAt")
		}
		return t("mail.waiting.subject"), t("mail.waiting.body", "DueText", dueText)
	case wps.KindWorkReturned:
		return t("mail.returned.subject"), t("mail.returned.body")
	case wps.KindWorkOverdue:
		dueText := ""
		if due != "" {
			dueText = " " + t("mail.wasDue")
		}
		return t("mail.overdue.subject"), t("mail.overdue.body", "DueText", dueText)
	case wps.KindWorkEscalated:
		dueText := ""
		if due != "" {
			dueText = " " + t("mail.wasDuePast")
		}
		return t("mail.escalated.subject"), t("mail.escalated.body", "DueText", dueText)
	case wps.KindWorkDigest:
		var b strings.Builder
		b.WriteString(t("mail.digest.head") + "\n\n")
		for _, m := range f.Items {
			fmt.Fprintf(&b, "- %s: %s\n", m.Name, m.Link)
		}
		if more := f.Total - len(f.Items); more > 0 {
			b.WriteString("- " + t("mail.digest.more", "Count", more) + "\n")
		}
		b.WriteString("\n" + t("mail.digest.inbox") + "\n")
		return t("mail.digest.subject", "Count", f.Total), b.String()
	}
	return kind, f.Link + "\n"
}
