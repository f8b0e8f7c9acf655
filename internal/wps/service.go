package wps

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Service applies the rules of the domain over a Store. It is safe for
// concurrent use; every method that changes state does so in one transaction.
type Service struct {
	noChat       sync.Map // org id → when it was seen without chat channels (chatWork)
	store        Store
	now          Clock
	inviteTTL    time.Duration
	allowPrivate bool
	calls        APICaller
	sheets       SheetEngine
	keys         keyCache
	sessions     SessionConfig
	hasher       *hasher
	byAccount    *throttle // failed sign-ins per email
	byAddress    *throttle // failed sign-ins per client address
	// maxTemplateBytes bounds a contract template's body.
	maxTemplateBytes int
	docs             DocumentConfig
	rerenders        *throttle                    // documents rendered again, per user
	naming           *gates                       // writes that name a new measurement and render its documents, by process
	lkey             atomic.Pointer[ledgerSigner] // the ledger's signing key, once loaded (ledgerKey)
	lkeyMu           sync.Mutex
	imports          ImportConfig
	// importGate lets one import job's write at a time into the store
	// (importWrite), so that other writes wait for one chunk at most.
	importGate chan struct{}
	sso        SSODiscoverer
	escalated  func(Tx, Escalated, []User) error
	mail       MailConfig
	resets     *throttle // password reset requests per email
	resetsBy   *throttle // password reset requests per client address
}

// keyCache remembers resolved API keys briefly: authentication would
// otherwise cost three queries on every request. A key revoked here is
// forgotten at once; changes made elsewhere (another replica, roles,
// policies) take effect within keyCacheTTL.
type keyCache struct {
	mu sync.Mutex
	m  map[string]cachedKey
	// gen counts forgets: a principal whose reading began before a forget
	// is not cached after it (it may predate the change that caused it).
	gen uint64
}

type cachedKey struct {
	p       *Principal
	expires time.Time
}

const keyCacheTTL = 2 * time.Second

func (c *keyCache) get(hash string, now time.Time) *Principal {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.m[hash]; ok && now.Before(k.expires) {
		return k.p
	}
	return nil
}

// generation is the forget count, taken before reading a principal.
func (c *keyCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put caches p unless something was forgotten since generation gen.
func (c *keyCache) put(hash string, p *Principal, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil || len(c.m) > 10000 {
		c.m = map[string]cachedKey{}
	}
	c.m[hash] = cachedKey{p: p, expires: now.Add(keyCacheTTL)}
}

// forget drops every cached principal of an org, after a change to its
// keys, users, roles or policies.
func (c *keyCache) forget(orgID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, k := range c.m {
		if k.p.OrgID == orgID {
			delete(c.m, h)
		}
	}
}

// ServiceConfig holds the Service's tunables; zero values take defaults.
type ServiceConfig struct {
	Now       Clock         // default time.Now
	InviteTTL time.Duration // default 7 days
	// AllowPrivateWebhooks lets webhook URLs point to loopback and private
	// addresses (tests, closed networks).
	AllowPrivateWebhooks bool
	// APICaller makes the calls of parameters' apiCalls; nil: API calls are off.
	APICaller APICaller
	Sessions  SessionConfig
	// Sheets runs the workbooks of sheetData; nil: uploads are refused.
	Sheets SheetEngine
	// MaxTemplateBytes bounds a contract template's body (default
	// DefaultMaxTemplateBytes).
	MaxTemplateBytes int
	// Imports tunes records imports and their jobs.
	Imports ImportConfig
	// Documents bounds the rendering of contract documents.
	Documents DocumentConfig
	// SSO fetches OpenID providers' discovery documents; nil: PUT /v1/sso
	// is refused.
	SSO SSODiscoverer
	// OnEscalated, when set, is told of every escalation emitted, with
	// its recipients (EscalationRecipients), in the scheduler's transaction,
	// after the work.escalated mail is queued (with Mail on). It may run
	// more than once for one escalation (a retried transaction), so it only
	// writes through tx.
	OnEscalated func(tx Tx, e Escalated, recipients []User) error
	// Mail says whether messages are mailed, and the console's address.
	Mail MailConfig
	// ResetsPerHour is how many password resets one email may ask for in
	// an hour (default 3); an address may ask for ten times as many.
	ResetsPerHour int
}

// NewService returns a Service over store.
func NewService(store Store, cfg ServiceConfig) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.InviteTTL == 0 {
		cfg.InviteTTL = 7 * 24 * time.Hour
	}
	if cfg.MaxTemplateBytes <= 0 {
		cfg.MaxTemplateBytes = DefaultMaxTemplateBytes
	}
	cfg.Sessions.defaults()
	cfg.Imports.defaults()
	cfg.Documents.defaults()
	if cfg.ResetsPerHour <= 0 {
		cfg.ResetsPerHour = 3
	}
	if cfg.Sheets == nil {
		cfg.Sheets = noSheets{}
	}
	return &Service{store: store, now: cfg.Now, inviteTTL: cfg.InviteTTL, allowPrivate: cfg.AllowPrivateWebhooks, calls: cfg.APICaller, sheets: cfg.Sheets,
		sessions: cfg.Sessions, hasher: newHasher(cfg.Sessions.Hashes), maxTemplateBytes: cfg.MaxTemplateBytes,
		byAccount: newThrottle(cfg.Sessions.AccountBurst, cfg.Sessions.AccountRefill),
		byAddress: newThrottle(cfg.Sessions.AddressBurst, cfg.Sessions.AddressRefill),
		imports:   cfg.Imports, importGate: make(chan struct{}, 1), sso: cfg.SSO, escalated: cfg.OnEscalated,
		mail:     cfg.Mail,
		resets:   newThrottle(cfg.ResetsPerHour, time.Hour/time.Duration(cfg.ResetsPerHour)),
		resetsBy: newThrottle(10*cfg.ResetsPerHour, time.Hour/time.Duration(10*cfg.ResetsPerHour)),
		naming:   newGates(), docs: cfg.Documents, rerenders: newThrottle(cfg.Documents.RerendersPerMinute, time.Minute/time.Duration(cfg.Documents.RerendersPerMinute))}
}

// Store returns the service's store, for the HTTP layer's idempotency records.
func (s *Service) Store() Store { return s.store }

// Now is the service's clock, truncated to the API's precision.
func (s *Service) Now() Time { return At(s.now()) }

// KeyPrefix starts every API key, so that leaked keys are easy to find.
const KeyPrefix = "wps_"

// newSecret returns prefix followed by 32 random bytes in base64url.
func newSecret(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret is how keys and tokens are stored: hex SHA-256.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// newAPIKey makes a key for user; the secret is in Key and shown once.
func newAPIKey(orgID, userID, name string, at Time) APIKey {
	secret := newSecret(KeyPrefix)
	return APIKey{
		ID: NewID(), OrgID: orgID, UserID: userID, Name: name,
		Prefix: secret[:len(KeyPrefix)+8], Key: secret, Hash: HashSecret(secret), CreatedAt: at,
	}
}

// Authenticate resolves an API key to its principal. An unknown, malformed
// or revoked key, or one of a deactivated user, is CodeUnauthorized.
func (s *Service) Authenticate(ctx context.Context, key string) (*Principal, error) {
	if !strings.HasPrefix(key, KeyPrefix) || len(key) > 128 {
		return nil, Errorf(CodeUnauthorized, "invalid API key")
	}
	hash := HashSecret(key)
	now := time.Now()
	if p := s.keys.get(hash, now); p != nil {
		return p, nil
	}
	var p *Principal
	gen := s.keys.generation() // before the transaction reads anything
	err := s.store.Read(ctx, func(tx Tx) error {
		k, err := tx.GetAPIKeyByHash(hash)
		if IsCode(err, CodeNotFound) {
			return Errorf(CodeUnauthorized, "invalid API key")
		}
		if err != nil {
			return err
		}
		if p, err = principalOf(tx, k.OrgID, k.UserID); err != nil {
			return err
		}
		if p.User.Status != UserActive {
			return Errorf(CodeUnauthorized, "invalid API key")
		}
		p.KeyID = k.ID
		return nil
	})
	if err == nil {
		s.keys.put(hash, p, now, gen)
	}
	return p, err
}

// principalOf reads a user of an org as a principal: roles, and the org's
// policies with those the user holds.
func principalOf(tx Tx, orgID, userID string) (*Principal, error) {
	u, err := tx.GetUser(orgID, userID)
	if err != nil {
		return nil, err
	}
	pols, err := tx.ListPolicies(orgID)
	if err != nil {
		return nil, err
	}
	p := &Principal{OrgID: orgID, UserID: u.ID, Roles: u.Roles, User: u, OrgPolicies: pols}
	for _, pol := range pols {
		if Holds(u.Roles, pol) {
			p.Policies = append(p.Policies, pol)
		}
	}
	return p, nil
}

// OrgAdmin is what creating an org hands back: the org, its first admin and
// that admin's key (shown once).
type OrgAdmin struct {
	Org   Org
	Admin User
	Key   APIKey
}

// Bootstrap creates the first org, admin and key on an empty database. It
// returns nil (and creates nothing) when the database was bootstrapped before,
// even by another replica. When key is not empty it becomes the admin's key.
func (s *Service) Bootstrap(ctx context.Context, orgName, key string) (*OrgAdmin, error) {
	if key != "" && (!strings.HasPrefix(key, KeyPrefix) || len(key) < len(KeyPrefix)+32) {
		return nil, Errorf(CodeInvalid, "the bootstrap API key must start with %q and carry at least 32 characters after it", KeyPrefix)
	}
	var out *OrgAdmin
	err := s.store.Write(ctx, func(tx Tx) error {
		out = nil
		first, err := tx.ClaimBootstrap(s.Now())
		if err != nil || !first {
			return err
		}
		out, err = s.createOrg(tx, orgName, "")
		if err != nil || key == "" {
			return err
		}
		// Replace the generated key by the configured one.
		if err := tx.RevokeAPIKey(out.Org.ID, out.Admin.ID, out.Key.ID, out.Key.CreatedAt); err != nil {
			return err
		}
		k := out.Key
		k.ID, k.Key, k.Hash, k.Prefix = NewID(), key, HashSecret(key), key[:len(KeyPrefix)+8]
		out.Key = k
		return tx.CreateAPIKey(k)
	})
	return out, err
}

// CreateOrg is the operator's way to add a tenant: a new org with its own
// ADMIN user and key.
func (s *Service) CreateOrg(ctx context.Context, name, adminEmail string) (*OrgAdmin, error) {
	var out *OrgAdmin
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		out, err = s.createOrg(tx, name, adminEmail)
		return err
	})
	return out, err
}

func (s *Service) createOrg(tx Tx, name, adminEmail string) (*OrgAdmin, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, Invalid("name", "must be 1 to 200 characters")
	}
	if adminEmail != "" && !validEmail(adminEmail) {
		return nil, Invalid("adminEmail", "is not an email address")
	}
	now := s.Now()
	org := Org{ID: NewID(), Name: name, Operations: []string{}, CreatedAt: now, UpdatedAt: now}
	admin := User{ID: NewID(), OrgID: org.ID, Email: strings.ToLower(adminEmail), Name: "Administrator",
		Roles: []string{RoleAdmin}, Status: UserActive, CreatedAt: now, UpdatedAt: now}
	key := newAPIKey(org.ID, admin.ID, "bootstrap", now)
	if err := tx.CreateOrg(org); err != nil {
		return nil, err
	}
	if err := tx.CreateUser(admin); err != nil {
		return nil, err
	}
	if err := tx.CreateAPIKey(key); err != nil {
		return nil, err
	}
	return &OrgAdmin{Org: org, Admin: admin, Key: key}, nil
}
