package wps

import (
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The kinds of notification (docs/notifications.md).
const (
	KindInvite        = "invite"
	KindPasswordReset = "password.reset"
)

// The statuses of a notification.
const (
	NotificationPending = "PENDING" // waiting to be sent, or to be tried again
	NotificationSent    = "SENT"    // the SMTP server accepted it
	NotificationFailed  = "FAILED"  // refused for good, or not sent within its window
)

// MailConfig says whether mail is sent (an SMTP server is configured) and
// the console's public address, for links. Without Enabled nothing is
// written to the outbox.
type MailConfig struct {
	Enabled   bool
	PublicURL string // e.g. https://wps.example.com (no trailing slash)
}

// NotificationWindow is how long a message is tried before it is given up.
const NotificationWindow = 24 * time.Hour

const notificationWindow = NotificationWindow

// Notification is one message of the outbox: written in the transaction
// of the change that causes it, sent by internal/notify, kept as the log.
// Body holds the message's facts (MailFacts as JSON, with a link that may
// carry a token) only while PENDING: it is emptied once the message is sent
// or given up. Subject is recorded by internal/notify when it words the
// message (in the recipient's language), at its first attempt.
type Notification struct {
	ID            string `json:"id"`
	Kind          string `json:"kind" enum:"invite,password.reset,work.waiting,work.returned,work.overdue,work.digest"`
	UserID        string `json:"userId,omitempty" doc:"The recipient's user; empty for an invitation (not a user yet)"`
	To            string `json:"to" doc:"The recipient's email address"`
	Subject       string `json:"subject" doc:"The message's subject (on one line), in the recipient's language; empty until the first attempt to send it"`
	Status        string `json:"status" enum:"PENDING,SENT,FAILED"`
	Attempts      int    `json:"attempts"`
	LastError     string `json:"lastError" doc:"What the SMTP server (or the connection to it) answered to the last attempt that failed"`
	CreatedAt     Time   `json:"createdAt"`
	SentAt        *Time  `json:"sentAt,omitempty" doc:"When the SMTP server accepted it"`
	NextAttemptAt Time   `json:"-"`
	GiveUpAt      Time   `json:"-"`
	LockedUntil   *Time  `json:"-"`
	Body          string `json:"-"`
	OrgID         string `json:"-"`
}

// NotificationQuery filters GET /v1/notifications.
type NotificationQuery struct {
	Page   Page
	UserID string
	Kind   string
	Status string
}

// queueMail writes a message to the outbox in tx, when mail is enabled:
// its kind, recipient and facts; internal/notify words it (and records its
// subject) when it sends it.
func (s *Service) queueMail(tx Tx, orgID, kind, userID, to string, facts MailFacts, giveUpAt Time) error {
	if !s.mail.Enabled {
		return nil
	}
	body, err := json.Marshal(facts)
	if err != nil {
		return err
	}
	now := s.Now()
	return tx.CreateNotification(Notification{ID: NewID(), OrgID: orgID, Kind: kind, UserID: userID, To: to,
		Body: string(body), Status: NotificationPending, NextAttemptAt: now, GiveUpAt: giveUpAt, CreatedAt: now})
}

// OneLine makes text safe for a header or a line of a message: every
// control character (CR and LF included) becomes a space, runs of spaces
// one, and it is cut to at most max characters.
func OneLine(text string, max int) string {
	text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if utf8.RuneCountInString(text) > max {
		text = string([]rune(text)[:max-1]) + "…"
	}
	return text
}

// link is an address of the console.
func (s *Service) link(path string) string {
	return strings.TrimRight(s.mail.PublicURL, "/") + path
}

// Link is an address of the console (WPS_PUBLIC_URL + path).
func (s *Service) Link(path string) string { return s.link(path) }

// QueueMail writes a message to the outbox in tx, the transaction of the
// change that causes it (queueMail), for a package beside the domain.
func (s *Service) QueueMail(tx Tx, orgID, kind, userID, to string, facts MailFacts, giveUpAt Time) error {
	return s.queueMail(tx, orgID, kind, userID, to, facts, giveUpAt)
}

// MailEnabled tells whether messages are mailed (WPS_SMTP_URL is set).
func (s *Service) MailEnabled() bool { return s.mail.Enabled }
