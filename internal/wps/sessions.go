package wps

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/netip"
	"strings"
	"sync"
	"time"
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

// throttle limits sign-in attempts per key (an email, an address) with
// token buckets: an attempt takes a token before its password is hashed,
// and one that succeeds gives it back, so what is counted is failures,
// including those still being hashed. A key whose bucket is empty is
// refused at once, so guessing costs the server almost nothing, however
// many guesses arrive together. It lives in the replica's memory (each
// replica throttles alone).
type throttle struct {
	mu      sync.Mutex
	refill  time.Duration // one token comes back this often
	burst   float64
	buckets map[string]*tokens
	swept   time.Time
}

type tokens struct {
	n  float64
	at time.Time
}

func newThrottle(burst int, refill time.Duration) *throttle {
	return &throttle{refill: refill, burst: float64(burst), buckets: map[string]*tokens{}}
}

// fill brings b's count up to now.
func (t *throttle) fill(b *tokens, now time.Time) {
	if now.After(b.at) {
		b.n = min(t.burst, b.n+float64(now.Sub(b.at))/float64(t.refill))
		b.at = now
	}
}

// take takes a token from key's bucket, or says how long until one is
// there (and takes nothing).
func (t *throttle) take(key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.swept) > time.Minute { // forget buckets that are full again
		for k, b := range t.buckets {
			if t.fill(b, now); b.n >= t.burst {
				delete(t.buckets, k)
			}
		}
		t.swept = now
	}
	b := t.buckets[key]
	if b == nil {
		b = &tokens{n: t.burst, at: now}
		t.buckets[key] = b
	}
	t.fill(b, now)
	if b.n < 1 {
		return time.Duration((1 - b.n) * float64(t.refill))
	}
	b.n--
	return 0
}

// refund gives back the token of an attempt that did not fail.
func (t *throttle) refund(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.buckets[key]; b != nil {
		b.n = min(t.burst, b.n+1)
	}
}

// forget empties key's count (an account after a sign-in that succeeded).
func (t *throttle) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.buckets, key)
}

// throttled is the answer to an attempt refused by a throttle.
func throttled(wait time.Duration) error {
	return &Error{Code: CodeRateLimited, Message: "too many failed sign-ins; retry later", RetryAfter: wait}
}

// addressKey is what the per-address throttle counts a client address
// under: an IPv4 address, or the /64 of an IPv6 one (a single client
// commonly holds a whole /64 and could otherwise take a new address for
// every guess).
func addressKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	if ip = ip.Unmap(); ip.Is4() {
		return ip.String()
	}
	p, err := ip.Prefix(64)
	if err != nil {
		return addr
	}
	return p.String()
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
	account, addr := "email:"+email, "addr:"+addressKey(in.Address)
	if w := s.byAddress.take(addr, now); w > 0 {
		return SignedIn{}, throttled(w)
	}
	if w := s.byAccount.take(account, now); w > 0 {
		s.byAddress.refund(addr)
		return SignedIn{}, throttled(w)
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
	var u User // the org named, else the most recently used where the user can sign in
	for _, c := range candidates {
		if c.OrgID == in.OrgID || in.OrgID == "" && c.Status == UserActive && c.PasswordHash != "" {
			u = c
			break
		}
	}
	ok, err := s.hasher.verify(ctx, in.Password, u.PasswordHash)
	if err != nil {
		return SignedIn{}, err
	}
	if !ok || u.ID == "" || u.Status != UserActive {
		return SignedIn{}, errSignIn
	}
	at := s.Now()
	token := newSecret(SessionPrefix)
	sess := Session{ID: NewID(), OrgID: u.OrgID, UserID: u.ID, TokenHash: HashSecret(token), CreatedAt: at, LastSeenAt: at,
		ExpiresAt: At(at.Add(s.sessions.MaxAge))}
	err = s.store.Write(ctx, func(tx Tx) error {
		cur, err := activeUser(tx, u.OrgID, u.ID)
		if IsCode(err, CodeUnauthorized) {
			return errSignIn // deactivated meanwhile
		}
		if err != nil {
			return err
		}
		if cur.PasswordHash != u.PasswordHash {
			return errSignIn // the password changed meanwhile
		}
		if err := passwordAllowed(tx, cur); err != nil {
			return err
		}
		cur.LastSignInAt = at
		if err := tx.UpdateUser(cur); err != nil {
			return err
		}
		u = cur
		if err := tx.CreateSession(sess); err != nil {
			return err
		}
		return s.auditSession(tx, u, sess, "password")
	})
	if err != nil {
		return SignedIn{}, err
	}
	s.byAddress.refund(addr) // a success costs the address nothing, and clears the account
	s.byAccount.forget(account)
	return SignedIn{Token: token, CSRFToken: CSRFToken(token), User: u, ExpiresAt: sess.ExpiresAt}, nil
}

// auditSession records a sign-in (session.created) and its method.
func (s *Service) auditSession(tx Tx, u User, sess Session, method string) error {
	return s.recordAudit(tx, AuditEvent{OrgID: u.OrgID, Type: AuditSessionCreated, Actor: userActor(u),
		Target:  AuditTarget{Kind: TargetSession, ID: sess.ID, Name: u.Email},
		Changes: map[string]AuditChange{"method": {After: method}, "expiresAt": {After: sess.ExpiresAt}}})
}

// auditPassword records that a user's password was set (never the
// password or its hash); how is "changed" or "reset".
func (s *Service) auditPassword(tx Tx, actor AuditActor, u User, how string) error {
	return s.recordAudit(tx, AuditEvent{OrgID: u.OrgID, Type: AuditPasswordChanged, Actor: actor,
		Target:  AuditTarget{Kind: TargetUser, ID: u.ID, Name: u.Email},
		Changes: map[string]AuditChange{"password": secretChanged, "how": {After: how}}})
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

// SignOut ends the caller's session (nothing for an API key): a
// session.ended audit event.
func (s *Service) SignOut(ctx context.Context, p *Principal) error {
	if p.SessionID == "" {
		return nil
	}
	defer s.keys.forget(p.OrgID)
	return s.store.Write(ctx, func(tx Tx) error {
		if err := tx.DeleteSession(p.OrgID, p.SessionID); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditSessionEnded, Actor: actorOf(p),
			Target: AuditTarget{Kind: TargetSession, ID: p.SessionID, Name: p.User.Email}})
	})
}

// ChangePassword sets the caller's password; the current one is required
// once one is set. Every other session of the user ends. Errors:
// CodeInvalid (a new password of the wrong length, a wrong current one),
// CodeRateLimited when the account's failed sign-ins (wrong current
// passwords count) are throttled, CodeConflict when another change of the
// password came first.
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
		// A wrong current password counts as a failed sign-in of the
		// account: a stolen session or key cannot guess it at hash speed.
		account := "email:" + u.Email
		if w := s.byAccount.take(account, s.now()); w > 0 {
			return throttled(w)
		}
		ok, err := s.hasher.verify(ctx, current, u.PasswordHash)
		if err != nil {
			return err
		}
		if !ok {
			return Invalid("currentPassword", "is not the current password")
		}
		s.byAccount.refund(account)
	}
	hash, err := s.hasher.hash(ctx, next)
	if err != nil {
		return err
	}
	defer s.keys.forget(p.OrgID)
	return s.store.Write(ctx, func(tx Tx) error {
		cur, err := activeUser(tx, p.OrgID, p.UserID)
		if err != nil {
			return err
		}
		if cur.PasswordHash != u.PasswordHash {
			return Errorf(CodeConflict, "the password was changed meanwhile; try again")
		}
		cur.PasswordHash, cur.UpdatedAt = hash, s.Now()
		if err := tx.UpdateUser(cur); err != nil {
			return err
		}
		if err := s.auditPassword(tx, actorOf(p), cur, "changed"); err != nil {
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
