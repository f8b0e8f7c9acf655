package wps

import (
	"context"
	"strings"
	"time"
)

// ResetPrefix starts every password reset token.
const ResetPrefix = "wpsrst_"

// ResetTTL is how long a password reset link works.
const ResetTTL = time.Hour

// PasswordReset is a single-use permission to set a user's password; only
// the hash of its token is stored.
type PasswordReset struct {
	ID        string
	OrgID     string
	UserID    string
	TokenHash string
	ExpiresAt Time
	UsedAt    *Time
	CreatedAt Time
}

// RequestPasswordReset mails each active user with email (one per org) a
// link to set a new password, valid ResetTTL. It answers the same whether
// or not the email is known (no enumeration) and mails nothing when mail
// is off. Errors: CodeRateLimited with RetryAfter when the email or the
// client address asked too often (counted whatever the email).
func (s *Service) RequestPasswordReset(ctx context.Context, email, address string) error {
	email = strings.ToLower(strings.TrimSpace(email))
	var v Validator
	v.Check(len(email) <= 320, "email", "must be at most 320 characters")
	if err := v.Err(); err != nil {
		return err
	}
	now := s.now()
	addr := "addr:" + addressKey(address)
	if w := s.resetsBy.take(addr, now); w > 0 {
		return &Error{Code: CodeRateLimited, Message: "too many password resets asked; retry later", RetryAfter: w}
	}
	if w := s.resets.take("email:"+email, now); w > 0 {
		return &Error{Code: CodeRateLimited, Message: "too many password resets asked; retry later", RetryAfter: w}
	}
	// The lookup runs in a write whether or not anything is written, so a
	// known email costs about the time of an unknown one.
	return s.store.Write(ctx, func(tx Tx) error {
		users, err := tx.FindUsersByEmail(email)
		if err != nil || !s.mail.Enabled {
			return err
		}
		at := s.Now()
		for _, u := range users {
			if u.Status != UserActive {
				continue
			}
			org, err := tx.GetOrg(u.OrgID)
			if err != nil {
				return err
			}
			token := newSecret(ResetPrefix)
			r := PasswordReset{ID: NewID(), OrgID: u.OrgID, UserID: u.ID, TokenHash: HashSecret(token),
				ExpiresAt: At(at.Add(ResetTTL)), CreatedAt: at}
			if err := tx.CreatePasswordReset(r); err != nil {
				return err
			}
			facts := MailFacts{Org: OneLine(org.Name, 100), Link: s.link("/reset/" + token)}
			if err := s.queueMail(tx, u.OrgID, KindPasswordReset, u.ID, u.Email, facts, r.ExpiresAt); err != nil {
				return err
			}
		}
		return nil
	})
}

// AcceptPasswordReset sets the password of the reset's user and ends every
// session of that user and every other reset link. Errors: CodeInvalid for
// a password of the wrong length, CodeNotFound for an unknown token,
// CodeGone for one used or expired (or whose user was deactivated).
func (s *Service) AcceptPasswordReset(ctx context.Context, token, password string) error {
	var v Validator
	checkPassword(&v, "newPassword", password)
	if err := v.Err(); err != nil {
		return err
	}
	if !strings.HasPrefix(token, ResetPrefix) || len(token) > 128 {
		return NotFound("password reset")
	}
	hash := HashSecret(token)
	check := func(tx Tx) (PasswordReset, error) {
		r, err := tx.GetPasswordResetByHash(hash)
		if err != nil {
			return r, err
		}
		if r.UsedAt != nil {
			return r, Errorf(CodeGone, "the password reset link was used already")
		}
		if !s.Now().Before(r.ExpiresAt.Time) {
			return r, Errorf(CodeGone, "the password reset link has expired")
		}
		return r, nil
	}
	// Hashing costs: only for a token that can be used.
	if err := s.store.Read(ctx, func(tx Tx) error { _, err := check(tx); return err }); err != nil {
		return err
	}
	pwHash, err := s.hasher.hash(ctx, password)
	if err != nil {
		return err
	}
	var orgID string
	err = s.store.Write(ctx, func(tx Tx) error {
		r, err := check(tx)
		if err != nil {
			return err
		}
		u, err := tx.LockUser(r.OrgID, r.UserID)
		if err != nil {
			return err
		}
		if u.Status != UserActive {
			return Errorf(CodeGone, "the password reset link no longer works")
		}
		now := s.Now()
		u.PasswordHash, u.UpdatedAt = pwHash, now
		if err := tx.UpdateUser(u); err != nil {
			return err
		}
		if err := s.auditPassword(tx, userActor(u), u, "reset"); err != nil {
			return err
		}
		if err := tx.DeleteSessions(r.OrgID, r.UserID, ""); err != nil {
			return err
		}
		orgID = r.OrgID
		return tx.EndPasswordResets(r.OrgID, r.UserID, now)
	})
	if err == nil {
		s.keys.forget(orgID)
	}
	return err
}
