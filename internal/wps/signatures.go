package wps

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Electronic signatures (semantics section 19): at a step with a
// signatureMeaning, every action and every reprove of one is signed by its
// author, who proves who they are again for it: their password, or a
// sign-in through the org's single sign-on in the last SSOSignatureWindow.

// Signature methods.
const (
	SignedByPassword = "password"
	SignedBySSO      = "sso"
)

// SSOSignatureWindow is how recent a sign-in through SSO must be to sign
// with it instead of a password.
const SSOSignatureWindow = 5 * time.Minute

// MaxMeaningLength bounds a step's signatureMeaning, in characters.
const MaxMeaningLength = 100

// Signature is what a signed action records of its signing: kept with the
// action and covered by its ledger leaf.
type ActionSignature struct {
	Meaning     string `json:"meaning" doc:"The step's signatureMeaning when the action was signed (e.g. Approved)"`
	SignerName  string `json:"signerName" doc:"The signer's name when they signed"`
	SignerEmail string `json:"signerEmail" doc:"The signer's email when they signed"`
	SignedAt    Time   `json:"signedAt" doc:"When the action was signed: its createdAt"`
	Method      string `json:"method" enum:"password,sso" doc:"How the signer proved who they are: their password re-entered, or a sign-in through single sign-on in the last 5 minutes"`
}

// SignatureInput is the credential a request to sign carries: the signer's
// password, or SSO (their sign-in through the org's single sign-on is
// recent enough). The password is checked and forgotten: never stored,
// never logged.
type SignatureInput struct {
	Password string
	SSO      bool
}

// verifiedSigner is who a credential proved the caller to be, held by the
// write's attempt between its tries.
type verifiedSigner struct {
	method      string
	name, email string
}

// needSignature makes a write that signs give up before it writes: its
// credential is checked with no transaction open (a password hash is slow,
// see writePrepared), and the write runs again.
type needSignature struct{ p *Principal }

func (*needSignature) Error() string { return "the action must be signed first" }

// checkMeaning trims a step's signatureMeaning and checks it: at most
// MaxMeaningLength characters, no control characters.
func checkMeaning(v *Validator, field string, meaning *string) {
	*meaning = strings.TrimSpace(*meaning)
	m := *meaning
	v.Check(utf8.RuneCountInString(m) <= MaxMeaningLength, field, "must be at most %d characters", MaxMeaningLength)
	v.Check(!strings.ContainsFunc(m, unicode.IsControl), field, "must not contain control characters or line breaks")
}

// sign is the signature of the run's next action at st, or nil when st
// has no signatureMeaning. Without a verified credential it gives up with
// *needSignature, so that writePrepared checks the request's.
func (r *run) sign(st Step) (*ActionSignature, error) {
	if st.SignatureMeaning == "" {
		return nil, nil
	}
	if r.at == nil || r.at.signer == nil {
		return nil, &needSignature{p: r.p}
	}
	s := r.at.signer
	return &ActionSignature{Meaning: st.SignatureMeaning, SignerName: s.name, SignerEmail: s.email, SignedAt: r.now, Method: s.method}, nil
}

// errSignature is the answer to a missing or wrong credential.
func errSignature(msg string) error { return Invalid("signature.password", "%s", msg) }

// verifySignature checks the credential of a request that signs: the
// caller's password, or (SSO) their sign-in through single sign-on in the
// last SSOSignatureWindow. A missing or wrong one counts as a failed
// sign-in of the account (section 8's throttle). An API key never signs by
// itself: its user gives their password, or signs with SSO. Errors:
// CodeInvalid naming signature.password, CodeRateLimited with RetryAfter
// when the account's failures are throttled.
func (s *Service) verifySignature(ctx context.Context, p *Principal, in SignatureInput) (*verifiedSigner, error) {
	var u User
	var ssoAt Time
	hasSSO := false
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		if u, err = tx.GetUser(p.OrgID, p.UserID); err != nil {
			return err
		}
		if u.Status != UserActive {
			return Errorf(CodeUnauthorized, "the user is deactivated")
		}
		if in.SSO {
			ssoAt, err = tx.SSOSignInAt(p.OrgID, p.UserID)
			if hasSSO = err == nil; IsCode(err, CodeNotFound) {
				err = nil
			}
			return err
		}
		if in.Password != "" && u.PasswordHash != "" {
			if perr := passwordAllowed(tx, u); perr != nil {
				return errSignature("this organization signs in with single sign-on: sign in through it again and sign with sso: true")
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	account := "email:" + u.Email
	if w := s.byAccount.take(account, s.now()); w > 0 {
		return nil, throttled(w)
	}
	signer := &verifiedSigner{name: displayName(u), email: u.Email}
	switch {
	case in.SSO:
		if !hasSSO || s.Now().Sub(ssoAt.Time) > SSOSignatureWindow {
			return nil, errSignature("signing with sso needs a sign-in through single sign-on in the last 5 minutes: sign in again, or give your password")
		}
		signer.method = SignedBySSO
	case in.Password == "":
		return nil, errSignature("this step's actions are signed: give your password in signature.password (or signature.sso after signing in through single sign-on)")
	default:
		pw := in.Password
		if len(pw) > MaxPasswordLength {
			pw = pw[:MaxPasswordLength]
		}
		ok, err := s.hasher.verify(ctx, pw, u.PasswordHash)
		if err != nil {
			s.byAccount.refund(account)
			return nil, err
		}
		if !ok {
			return nil, errSignature("is not your password")
		}
		signer.method = SignedByPassword
	}
	s.byAccount.refund(account)
	return signer, nil
}
