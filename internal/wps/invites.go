package wps

import (
	"context"
	"strings"
)

// InvitePrefix starts every invite token.
const InvitePrefix = "wpsinv_"

// InviteInput is the body of POST /v1/invites.
type InviteInput struct {
	Email string
	Name  string
	Roles []string
}

// Invite asks email to join the caller's org, and mails the link when mail
// is on (the token is in the answer either way). Re-inviting a pending email
// replaces its token (the old one answers 410). Errors: CodeInvalid,
// CodeConflict when the email already belongs to a member.
func (s *Service) Invite(ctx context.Context, p *Principal, in InviteInput) (Invite, error) {
	if err := p.Require(FnUsersInvite); err != nil {
		return Invite{}, err
	}
	in.Email = strings.ToLower(strings.TrimSpace(in.Email))
	var v Validator
	v.Check(validEmail(in.Email), "email", "must be an email address")
	v.Check(len(in.Name) <= 200, "name", "must be at most 200 characters")
	validRoles(&v, "roles", in.Roles)
	if err := v.Err(); err != nil {
		return Invite{}, err
	}
	now := s.Now()
	token := newSecret(InvitePrefix)
	inv := Invite{
		ID: NewID(), OrgID: p.OrgID, Email: in.Email, Name: in.Name, Roles: normalize(in.Roles),
		Status: InvitePending, ExpiresAt: At(now.Add(s.inviteTTL)), CreatedAt: now,
		Token: token, TokenHash: HashSecret(token),
	}
	err := s.store.Write(ctx, func(tx Tx) error {
		if _, err := tx.FindUserByEmail(p.OrgID, in.Email); err == nil {
			return Errorf(CodeConflict, "%s is already a member", in.Email)
		} else if !IsCode(err, CodeNotFound) {
			return err
		}
		old, err := tx.FindPendingInvite(p.OrgID, in.Email)
		switch {
		case err == nil:
			if err := tx.SetInviteStatus(p.OrgID, old.ID, InviteRevoked); err != nil {
				return err
			}
		case !IsCode(err, CodeNotFound):
			return err
		}
		if err := tx.CreateInvite(inv); err != nil {
			return err
		}
		if err := s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditUserInvited, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetInvite, ID: inv.ID, Name: inv.Email},
			Changes: diffFields(nil, map[string]any{"email": inv.Email, "name": inv.Name, "roles": inv.Roles, "expiresAt": inv.ExpiresAt})}); err != nil {
			return err
		}
		if !s.mail.Enabled {
			return nil
		}
		org, err := tx.GetOrg(p.OrgID)
		if err != nil {
			return err
		}
		inviter := p.User.Name
		if inviter == "" {
			inviter = p.User.Email
		}
		facts := MailFacts{Locale: p.User.Locale, TimeZone: p.User.TimeZone, Org: OneLine(org.Name, 100), Inviter: OneLine(inviter, 100), Link: s.link("/invite/" + token)}
		return s.queueMail(tx, p.OrgID, KindInvite, "", inv.Email, facts, At(now.Add(notificationWindow)))
	})
	return inv, err
}

// ListInvites lists the org's invites, newest first; tokens are never shown.
func (s *Service) ListInvites(ctx context.Context, p *Principal) ([]Invite, error) {
	if err := p.Require(FnUsersInvite); err != nil {
		return nil, err
	}
	var list []Invite
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		list, err = tx.ListInvites(p.OrgID)
		return err
	})
	now := s.Now()
	for i := range list {
		list[i].Status = inviteStatus(list[i], now)
	}
	return list, err
}

// RevokeInvite withdraws a pending invite. Errors: CodeNotFound; CodeConflict
// when it was accepted already.
func (s *Service) RevokeInvite(ctx context.Context, p *Principal, id string) error {
	if err := p.Require(FnUsersInvite); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		inv, err := tx.GetInvite(p.OrgID, id)
		if err != nil {
			return err
		}
		switch inviteStatus(inv, s.Now()) {
		case InviteAccepted:
			return Errorf(CodeConflict, "the invite was accepted already")
		case InviteRevoked:
			return nil
		}
		if err := tx.SetInviteStatus(p.OrgID, id, InviteRevoked); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditInviteRevoked, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetInvite, ID: inv.ID, Name: inv.Email},
			Changes: map[string]AuditChange{"status": {Before: InvitePending, After: InviteRevoked}}})
	})
}

// Accepted is what accepting an invite returns: the new user and their key.
type Accepted struct {
	User   User
	APIKey APIKey
}

// AcceptInvite turns a pending invite into a member with the invited roles
// and a first API key, and the password (optional) they sign in with.
// Errors: CodeNotFound for an unknown token, CodeGone for one accepted,
// revoked, replaced or expired, CodeConflict when the email became a member
// meanwhile, CodeInvalid for a name or password of the wrong length.
func (s *Service) AcceptInvite(ctx context.Context, token, name, password string) (Accepted, error) {
	var out Accepted
	var v Validator
	v.Check(len(name) <= 200, "name", "must be at most 200 characters")
	if password != "" {
		checkPassword(&v, "password", password)
	}
	if err := v.Err(); err != nil {
		return out, err
	}
	if !strings.HasPrefix(token, InvitePrefix) || len(token) > 128 {
		return out, NotFound("invite")
	}
	hash := ""
	if password != "" { // hashing costs: only for a token that can be accepted
		err := s.store.Read(ctx, func(tx Tx) error {
			inv, err := tx.GetInviteByTokenHash(HashSecret(token))
			if err == nil && inviteStatus(inv, s.Now()) != InvitePending {
				err = Errorf(CodeGone, "the invite is %s", strings.ToLower(inviteStatus(inv, s.Now())))
			}
			return err
		})
		if err == nil {
			hash, err = s.hasher.hash(ctx, password)
		}
		if err != nil {
			return out, err
		}
	}
	if !strings.HasPrefix(token, InvitePrefix) || len(token) > 128 {
		return out, NotFound("invite")
	}
	err := s.store.Write(ctx, func(tx Tx) error {
		inv, err := tx.GetInviteByTokenHash(HashSecret(token))
		if err != nil {
			return err
		}
		now := s.Now()
		if st := inviteStatus(inv, now); st != InvitePending {
			return Errorf(CodeGone, "the invite is %s", strings.ToLower(st))
		}
		if name == "" {
			name = inv.Name
		}
		u := User{ID: NewID(), OrgID: inv.OrgID, Email: inv.Email, Name: name, Roles: inv.Roles, Status: UserActive,
			PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		k := newAPIKey(inv.OrgID, u.ID, "first key", now)
		if err := tx.CreateAPIKey(k); err != nil {
			return err
		}
		if err := s.recordAudit(tx, AuditEvent{OrgID: u.OrgID, Type: AuditUserJoined, Actor: userActor(u),
			Target:  AuditTarget{Kind: TargetUser, ID: u.ID, Name: u.Email},
			Changes: diffFields(nil, map[string]any{"email": u.Email, "name": u.Name, "roles": u.Roles, "invite": inv.ID, "password": u.PasswordHash != ""})}); err != nil {
			return err
		}
		if err := s.auditKey(tx, userActor(u), AuditAPIKeyCreated, k, u); err != nil {
			return err
		}
		out = Accepted{User: u, APIKey: k}
		return tx.SetInviteStatus(inv.OrgID, inv.ID, InviteAccepted)
	})
	return out, err
}

// inviteStatus is the stored status, with a pending invite past its expiry
// reported as EXPIRED.
func inviteStatus(inv Invite, now Time) string {
	if inv.Status == InvitePending && !now.Before(inv.ExpiresAt.Time) {
		return InviteExpired
	}
	return inv.Status
}
