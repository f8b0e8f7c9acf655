package identity_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// provider is a real OpenID provider on loopback: zitadel's op package with
// the in-memory storage of its example server, its sign-in page included.
// The test changes what it does through the fields of opStore: the people
// it knows, their groups, its keys, and (for the refusals) the nonce and
// lifetime of the ID tokens it issues, or their claims (rewrite).
type provider struct {
	*opStore
	Issuer, ClientID, Secret string
	srv                      *httptest.Server
}

type opStore struct {
	*storage.Storage
	mu       sync.Mutex
	users    map[string]*storage.User // by username (the email here)
	groups   map[string][]string      // by user id
	signWith *rsaKey
	publish  []*rsaKey
	unsigned bool                        // the token endpoint's ID token is sent unsigned (alg none)
	rewrite  func(claims map[string]any) // when set, the ID token's claims are changed and signed again with the provider's key
	audience []string                    // when set, the ID token's aud
	nonce    *string                     // when set, the ID token's nonce
	lifetime time.Duration               // when set, the ID token's lifetime
}

type rsaKey struct {
	id  string
	key *rsa.PrivateKey
}

func newKey(t testing.TB, id string) *rsaKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &rsaKey{id: id, key: k}
}

func (k *rsaKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *rsaKey) Key() any                                    { return k.key }
func (k *rsaKey) ID() string                                  { return k.id }

type pubKey struct{ *rsaKey }

func (k pubKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k pubKey) Use() string                        { return "sig" }
func (k pubKey) Key() any                           { return &k.key.PublicKey }

// newProvider starts a provider that knows one client whose redirect URI
// is redirect.
func newProvider(t testing.TB, redirect string) *provider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	p := &provider{Issuer: issuer, ClientID: "wps-test", Secret: "s3cret-of-the-client", srv: srv}
	k := newKey(t, "key-1")
	st := &opStore{users: map[string]*storage.User{}, groups: map[string][]string{}, signWith: k, publish: []*rsaKey{k}}
	st.Storage = storage.NewStorageWithClients(users{st}, map[string]*storage.Client{
		p.ClientID: storage.WebClient(p.ClientID, p.Secret, redirect),
	})
	p.opStore = st
	srv.Config.Handler = st.tamper(exampleop.SetupServer(issuer, st, slog.New(slog.DiscardHandler), false))
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// AddUser makes a person who signs in with password "pw".
func (s *opStore) AddUser(email string, verified bool, groups ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := "u" + strings.ReplaceAll(email, "@", "-")
	s.users[email] = &storage.User{ID: id, Username: email, Password: "pw", FirstName: "Pat", LastName: "Doe", Email: email,
		EmailVerified: verified, PreferredLanguage: language.English}
	s.groups[id] = groups
}

func (s *opStore) set(f func(s *opStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// users is the provider's user store over opStore.
type users struct{ s *opStore }

func (u users) GetUserByID(id string) *storage.User {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	for _, x := range u.s.users {
		if x.ID == id {
			return x
		}
	}
	return nil
}

func (u users) GetUserByUsername(name string) *storage.User {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	return u.s.users[name]
}

func (u users) ExampleClientID() string { return "service" }

func (s *opStore) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signWith, nil
}

func (s *opStore) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *opStore) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []op.Key
	for _, k := range s.publish {
		out = append(out, pubKey{k})
	}
	return out, nil
}

// client puts the userinfo claims (email, name) in the ID token, as the
// providers wps meets do, and applies the test's lifetime.
type client struct {
	op.Client
	lifetime time.Duration
}

func (c client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c client) IDTokenLifetime() time.Duration {
	if c.lifetime != 0 {
		return c.lifetime
	}
	return c.Client.IDTokenLifetime()
}

func (s *opStore) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return client{Client: c, lifetime: s.lifetime}, nil
}

// request is an authorization request as the test has the provider tamper with it.
type request struct {
	op.AuthRequest
	nonce *string
}

func (r request) GetNonce() string {
	if r.nonce != nil {
		return *r.nonce
	}
	return r.AuthRequest.GetNonce()
}

func (s *opStore) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return request{AuthRequest: r, nonce: s.nonce}, nil
}

// SetUserinfoFromRequest fills the claims as the example does, and adds
// the person's groups (claim "groups").
func (s *opStore) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, token op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, token, scopes); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.groups[token.GetSubject()]; ok && g != nil {
		info.AppendClaims("groups", g)
	}
	return nil
}

// tamper changes the token endpoint's ID token: unsigned when s.unsigned
// (its header says alg none and its signature is gone, the claims
// unchanged), or its claims rewritten and signed again by the provider's
// key when s.rewrite is set (a token the provider made for another client).
func (s *opStore) tamper(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		unsigned, rewrite, key := s.unsigned, s.rewrite, s.signWith
		s.mu.Unlock()
		if !unsigned && rewrite == nil || r.URL.Path != "/oauth/token" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err == nil {
			if tok, ok := body["id_token"].(string); ok {
				parts := strings.Split(tok, ".")
				if unsigned {
					body["id_token"] = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
				} else {
					body["id_token"] = resign(parts[1], rewrite, key)
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(body)
	})
}

func resign(payload string, rewrite func(map[string]any), k *rsaKey) string {
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	var claims map[string]any
	_ = json.Unmarshal(raw, &claims)
	rewrite(claims)
	raw, _ = json.Marshal(claims)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.key, KeyID: k.id}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		panic(err)
	}
	jws, err := signer.Sign(raw)
	if err != nil {
		panic(err)
	}
	out, _ := jws.CompactSerialize()
	return out
}
