// Package wps is the domain of the Workflow Process Service: its types, the
// rules that govern them, the Store interface that persists them and the
// Service that applies the rules. It imports neither net/http nor a SQL driver.
package wps

import (
	"time"

	"github.com/google/uuid"
)

// TimeFormat is how every instant is written in the API: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time is an instant that marshals as RFC 3339 UTC with milliseconds.
type Time struct{ time.Time }

// At truncates t to milliseconds in UTC, the precision of the API and the stores.
func At(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// FromMillis turns a stored Unix-milliseconds value into a Time.
func FromMillis(ms int64) Time { return Time{time.UnixMilli(ms).UTC()} }

// Millis is the stored form of t.
func (t Time) Millis() int64 { return t.UnixMilli() }

// MarshalJSON writes t as "2006-01-02T15:04:05.000Z".
// Written digit by digit: a response holds dozens of instants, and the
// general formatter was a tenth of the cost of encoding one.
func (t Time) MarshalJSON() ([]byte, error) {
	u := t.UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		b := append([]byte{'"'}, u.AppendFormat(nil, TimeFormat)...)
		return append(b, '"'), nil
	}
	hour, minute, sec := u.Clock()
	ms := u.Nanosecond() / 1e6
	b := make([]byte, 26)
	b[0], b[25] = '"', '"'
	digits := func(at, v, n int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	digits(1, year, 4)
	b[5] = '-'
	digits(6, int(month), 2)
	b[8] = '-'
	digits(9, day, 2)
	b[11] = 'T'
	digits(12, hour, 2)
	b[14] = ':'
	digits(15, minute, 2)
	b[17] = ':'
	digits(18, sec, 2)
	b[20] = '.'
	digits(21, ms, 3)
	b[24] = 'Z'
	return b, nil
}

// UnmarshalJSON reads any RFC 3339 instant.
func (t *Time) UnmarshalJSON(b []byte) error {
	var v time.Time
	if err := v.UnmarshalJSON(b); err != nil {
		return err
	}
	*t = At(v)
	return nil
}

// Clock tells the time; tests replace it to move time without sleeping.
type Clock func() time.Time

// NewID returns a new UUIDv7 string: unique and sortable by creation time.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Org is a tenant. Every other row belongs to exactly one org.
type Org struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	LogoKey    string   `json:"logoKey"`
	PinnedURL  string   `json:"pinnedUrl"`
	ThemeColor string   `json:"themeColor"`
	Operations []string `json:"operations"`
	CreatedAt  Time     `json:"createdAt"`
	UpdatedAt  Time     `json:"updatedAt"`
}

// User is a member of one org. Roles are free strings; ADMIN may do anything.
type User struct {
	ID     string   `json:"id"`
	OrgID  string   `json:"orgId"`
	Email  string   `json:"email"`
	Name   string   `json:"name"`
	Roles  []string `json:"roles"`
	Status string   `json:"status" enum:"ACTIVE,DEACTIVATED"`
	// TimeZone is the user's own setting (PATCH /v1/users/me).
	TimeZone string `json:"timeZone" doc:"The IANA time zone the console shows the user's times in; empty: not set (UTC)"`
	// Locale is the user's language (PATCH /v1/users/me).
	Locale    string `json:"locale" doc:"The language of the console and of mail: en, pt-BR or es; empty: not set (the browser's language, else English)"`
	CreatedAt Time   `json:"createdAt"`
	UpdatedAt Time   `json:"updatedAt"`
	// PasswordHash is the argon2id hash of the user's password, "" for none.
	PasswordHash string `json:"-"`
	LastSignInAt Time   `json:"-"`
	// ExternalID is the identity provider's id of the user, set by SCIM
	// (its externalId); "" for none.
	ExternalID string `json:"-"`
}

// UserQuery narrows a list of users; the fields set must all match.
type UserQuery struct {
	Email      string // lower case, as stored
	ExternalID string
	Role       string // a valid role name
}

// User statuses.
const (
	UserActive      = "ACTIVE"
	UserDeactivated = "DEACTIVATED"
)

// Session is a signed-in browser: only the SHA-256 of its token is stored.
type Session struct {
	ID         string
	OrgID      string
	UserID     string
	TokenHash  string
	CreatedAt  Time
	LastSeenAt Time
	ExpiresAt  Time // the absolute expiry
}

// APIKey is a credential of one user. Only its SHA-256 hash is stored; the
// key itself is shown once, in Key, when it is created.
type APIKey struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Prefix    string `json:"prefix"`
	Key       string `json:"key,omitempty"`
	CreatedAt Time   `json:"createdAt"`
	OrgID     string `json:"-"`
	UserID    string `json:"-"`
	Hash      string `json:"-"`
	RevokedAt *Time  `json:"-"`
}

// Invite statuses.
const (
	InvitePending  = "PENDING"
	InviteAccepted = "ACCEPTED"
	InviteRevoked  = "REVOKED"
	InviteExpired  = "EXPIRED"
)

// Invite asks someone to join an org with some roles. Token is shown once.
type Invite struct {
	ID        string   `json:"id"`
	Email     string   `json:"email"`
	Name      string   `json:"name"`
	Roles     []string `json:"roles"`
	Status    string   `json:"status" enum:"PENDING,ACCEPTED,REVOKED,EXPIRED"`
	ExpiresAt Time     `json:"expiresAt"`
	CreatedAt Time     `json:"createdAt"`
	Token     string   `json:"token,omitempty"`
	OrgID     string   `json:"-"`
	TokenHash string   `json:"-"`
}

// Policy grants functions to the holders of any of its roles, and is the
// unit of a seat in a step's consensus.
type Policy struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Roles     []string `json:"roles"`
	Functions []string `json:"functions"`
	CreatedAt Time     `json:"createdAt"`
	UpdatedAt Time     `json:"updatedAt"`
	OrgID     string   `json:"-"`
}

// Page asks for one page of a list. Page counts from 1.
type Page struct {
	Page    int
	PerPage int
	// Skip, when Page is 0, is the number of rows before the page (SCIM's
	// startIndex - 1 need not fall on a page's start).
	Skip int
}

// Offset is the number of rows before the page.
func (p Page) Offset() int {
	if p.Page == 0 {
		return p.Skip
	}
	return (p.Page - 1) * p.PerPage
}
