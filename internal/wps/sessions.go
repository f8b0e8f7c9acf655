package wps

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// SessionPrefix starts every session token (the cookie's value).
const SessionPrefix = "wpss_"

// SessionConfig tunes sign-in; zero values take defaults.
type SessionConfig struct {
	Idle   time.Duration // a session unused this long ends (default 12 h)
	MaxAge time.Duration // a session ends this long after sign-in (default 7 days)
	// Failed sign-ins allowed in a burst, then one per refill interval, per
	// account (email) and per client address (defaults 5 per minute; 20, one per 10 s).
	AccountBurst  int
	AccountRefill time.Duration
	AddressBurst  int
	AddressRefill time.Duration
	// Hashes is how many password hashes may run at once (default 4; each takes 19 MiB).
	Hashes int
}

func (c *SessionConfig) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&c.Idle, 12*time.Hour)
	set(&c.MaxAge, 7*24*time.Hour)
	set(&c.AccountRefill, time.Minute)
	set(&c.AddressRefill, 10*time.Second)
	if c.AccountBurst <= 0 {
		c.AccountBurst = 5
	}
	if c.AddressBurst <= 0 {
		c.AddressBurst = 20
	}
}

// throttle counts failed sign-ins per key in token buckets: a key whose
// bucket is empty is refused before any password is hashed, so that
// guessing costs the server almost nothing. It lives in the replica's
// memory (each replica throttles alone).
type throttle struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	buckets map[string]*rate.Limiter
	swept   time.Time
}

func newThrottle(burst int, refill time.Duration) *throttle {
	return &throttle{limit: rate.Every(refill), burst: burst, buckets: map[string]*rate.Limiter{}}
}

// wait is how long key must wait before its next attempt (0: go ahead).
func (t *throttle) wait(key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buckets[key]
	if b == nil {
		return 0
	}
	if tokens := b.TokensAt(now); tokens < 1 {
		return time.Duration((1 - tokens) / float64(t.limit) * float64(time.Second))
	}
	return 0
}

// fail takes a token from key's bucket.
func (t *throttle) fail(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.swept) > time.Minute { // forget buckets that are full again
		for k, b := range t.buckets {
			if b.TokensAt(now) >= float64(t.burst) {
				delete(t.buckets, k)
			}
		}
		t.swept = now
	}
	b := t.buckets[key]
	if b == nil {
		b = rate.NewLimiter(t.limit, t.burst)
		t.buckets[key] = b
	}
	b.AllowN(now, 1)
}

// forget empties key's count (after a sign-in that succeeded).
func (t *throttle) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.buckets, key)
}

// CSRFToken is the token a cookie-authenticated request sends in
// X-CSRF-Token: derived from the session token, so nothing more is stored,
// and unknown to a page of another site, which cannot read the cookie.
func CSRFToken(sessionToken string) string {
	sum := sha256.Sum256([]byte("wps csrf\x00" + sessionToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// SignInInput is the body of POST /v1/sessions, with the client's address.
type SignInInput struct {
	Email    string
	Password string
	OrgID    string
	Address  string
}

// SignedIn is a new session: its token (the cookie's value, shown once),
// the CSRF token, its user and when it ends at the latest.
type SignedIn struct {
	Token     string
	CSRFToken string
	User      User
	ExpiresAt Time
}

// errSignIn is the one answer to a wrong email or a wrong password.
var errSignIn = Errorf(CodeUnauthorized, "wrong email or password")

// SignIn checks an email and password and starts a session. Errors:
// CodeUnauthorized (the same for an unknown email, a wrong password, a
// user without a password or deactivated), CodeRateLimited with RetryAfter
// after repeated failures of the account or the address.
func (s *Service) SignIn(ctx context.Context, in SignInInput) (SignedIn, error) {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	now := s.now()
	account, addr := "email:"+email, "addr:"+in.Address
	if w := max(s.byAccount.wait(account, now), s.byAddress.wait(addr, now)); w > 0 {
		return SignedIn{}, &Error{Code: CodeRateLimited, Message: "too many failed sign-ins; retry later", RetryAfter: w}
	}
	if len(in.Password) > MaxPasswordLength {
		in.Password = in.Password[:MaxPasswordLength]
	}
	var candidates []User
	if err := s.store.Read(ctx, func(tx Tx) (err error) {
		candidates, err = tx.FindUsersByEmail(email)
		return err
	}); err != nil {
		return SignedIn{}, err
	}
	var u User
	for _, c := range candidates {
		if in.OrgID == "" || c.OrgID == in.OrgID {
			u = c
			break
		}
	}
	ok, err := s.hasher.verify(ctx, in.Password, u.PasswordHash)
	if err != nil {
		return SignedIn{}, err
	}
	if !ok || u.ID == "" || u.Status != UserActive {
		s.byAccount.fail(account, now)
		s.byAddress.fail(addr, now)
		return SignedIn{}, errSignIn
	}
	s.byAccount.forget(account)
	at := s.Now()
	token := newSecret(SessionPrefix)
	sess := Session{ID: NewID(), OrgID: u.OrgID, UserID: u.ID, TokenHash: HashSecret(token), CreatedAt: at, LastSeenAt: at,
		ExpiresAt: At(at.Add(s.sessions.MaxAge))}
	err = s.store.Write(ctx, func(tx Tx) error {
		cur, err := tx.GetUser(u.OrgID, u.ID)
		if err != nil {
			return err
		}
		if cur.Status != UserActive { // deactivated meanwhile
			return errSignIn
		}
		cur.LastSignInAt = at
		if err := tx.UpdateUser(cur); err != nil {
			return err
		}
		u = cur
		return tx.CreateSession(sess)
	})
	if err != nil {
		return SignedIn{}, err
	}
	return SignedIn{Token: token, CSRFToken: CSRFToken(token), User: u, ExpiresAt: sess.ExpiresAt}, nil
}

// AuthenticateSession resolves a session token to its principal. An
// unknown, ended, idle or expired session, or one of a deactivated user,
// is CodeUnauthorized.
func (s *Service) AuthenticateSession(ctx context.Context, token string) (*Principal, error) {
	bad := Errorf(CodeUnauthorized, "the session has ended; sign in again")
	if !strings.HasPrefix(token, SessionPrefix) || len(token) > 128 {
		return nil, bad
	}
	hash := HashSecret(token)
	now := s.Now()
	if p := s.keys.get("session:"+hash, time.Now()); p != nil && now.Before(p.sessionEnds) && now.Sub(p.sessionSeen) <= time.Minute {
		return p, nil
	}
	var p *Principal
	var sess Session
	gen := s.keys.generation() // before the transaction reads anything
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		sess, err = tx.GetSessionByHash(hash)
		if IsCode(err, CodeNotFound) {
			return bad
		}
		if err != nil {
			return err
		}
		p, err = principalOf(tx, sess.OrgID, sess.UserID)
		return err
	})
	if err != nil {
		return nil, err
	}
	idleEnd := sess.LastSeenAt.Add(s.sessions.Idle)
	if !now.Before(sess.ExpiresAt.Time) || !now.Before(idleEnd) || p.User.Status != UserActive {
		return nil, bad
	}
	if now.Sub(sess.LastSeenAt.Time) > time.Minute { // idle time is kept to the minute: no write per request
		if err := s.store.Write(ctx, func(tx Tx) error { return tx.TouchSession(sess.OrgID, sess.ID, now) }); err != nil {
			return nil, err
		}
		idleEnd = now.Add(s.sessions.Idle)
		sess.LastSeenAt = now
	}
	p.SessionID, p.sessionSeen = sess.ID, sess.LastSeenAt.Time
	p.sessionEnds = sess.ExpiresAt.Time
	if idleEnd.Before(p.sessionEnds) {
		p.sessionEnds = idleEnd
	}
	s.keys.put("session:"+hash, p, time.Now(), gen)
	return p, nil
}

// SignOut ends the caller's session (nothing for an API key).
func (s *Service) SignOut(ctx context.Context, p *Principal) error {
	if p.SessionID == "" {
		return nil
	}
	defer s.keys.forget(p.OrgID)
	return s.store.Write(ctx, func(tx Tx) error { return tx.DeleteSession(p.OrgID, p.SessionID) })
}

// ChangePassword sets the caller's password; the current one is required
// once one is set. Every other session of the user ends. Errors:
// CodeInvalid (a new password of the wrong length, a wrong current one).
func (s *Service) ChangePassword(ctx context.Context, p *Principal, current, next string) error {
	var v Validator
	checkPassword(&v, "newPassword", next)
	if err := v.Err(); err != nil {
		return err
	}
	u, err := s.Me(ctx, p)
	if err != nil {
		return err
	}
	if u.PasswordHash != "" {
		ok, err := s.hasher.verify(ctx, current, u.PasswordHash)
		if err != nil {
			return err
		}
		if !ok {
			return Invalid("currentPassword", "is not the current password")
		}
	}
	hash, err := s.hasher.hash(ctx, next)
	if err != nil {
		return err
	}
	defer s.keys.forget(p.OrgID)
	return s.store.Write(ctx, func(tx Tx) error {
		u, err := tx.GetUser(p.OrgID, p.UserID)
		if err != nil {
			return err
		}
		u.PasswordHash, u.UpdatedAt = hash, s.Now()
		if err := tx.UpdateUser(u); err != nil {
			return err
		}
		return tx.DeleteSessions(p.OrgID, p.UserID, p.SessionID)
	})
}

// IdempotencyTTL is how long the first answer to a POST with an
// Idempotency-Key is replayed.
const IdempotencyTTL = 24 * time.Hour

// sweepBatch and sweepBatches bound a sweep: each transaction deletes at
// most sweepBatch rows of a table, and one run at most sweepBatches
// transactions per table, so a backlog drains within a few runs while no
// lock is held long.
const sweepBatch, sweepBatches = 1000, 100

// Sweep deletes what has expired: sessions past their end and idempotency
// records past IdempotencyTTL, in batches of sweepBatch rows, each in its
// own transaction, until a batch is not full (or sweepBatches ran). It
// returns how many rows went. Several replicas may sweep at once.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	now := s.Now()
	total := 0
	for _, del := range []func(Tx) (int, error){
		func(tx Tx) (int, error) {
			return tx.DeleteExpiredSessions(now, At(now.Add(-s.sessions.Idle)), sweepBatch)
		},
		func(tx Tx) (int, error) { return tx.DeleteIdempotentBefore(At(now.Add(-IdempotencyTTL)), sweepBatch) },
	} {
		for range sweepBatches {
			n := 0
			err := s.store.Write(ctx, func(tx Tx) (err error) {
				n, err = del(tx)
				return err
			})
			if err != nil {
				return total, err
			}
			total += n
			if n < sweepBatch {
				break
			}
		}
	}
	return total, nil
}
