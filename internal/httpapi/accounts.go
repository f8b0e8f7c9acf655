package httpapi

import (
	"context"
	"net/http"
	"time"

	"wps/internal/calendar"
	"wps/internal/identity"
	"wps/internal/wps"
)

// Shared shapes.

type idPath struct {
	ID string `path:"id" maxLength:"100"`
}

type empty struct{}

// PageQuery is the paging of every list: embedded in a list's input (huma
// reads the parameters of an embedded struct only when its type is
// exported).
type PageQuery struct {
	Page    int `query:"page" minimum:"1" maximum:"10000000" default:"1" doc:"Page number, from 1"`
	PerPage int `query:"perPage" minimum:"1" maximum:"100" default:"20" doc:"Items per page"`
}

func (q PageQuery) page() wps.Page { return wps.Page{Page: q.Page, PerPage: q.PerPage} }

// Meta describes one page of a list; prev and next are null at the ends.
type Meta struct {
	Total       int  `json:"total"`
	LastPage    int  `json:"lastPage"`
	CurrentPage int  `json:"currentPage"`
	PerPage     int  `json:"perPage"`
	Prev        *int `json:"prev" nullable:"true"`
	Next        *int `json:"next" nullable:"true"`
}

func pageMeta(p wps.Page, total int) Meta {
	last := max(1, (total+p.PerPage-1)/p.PerPage)
	m := Meta{Total: total, LastPage: last, CurrentPage: p.Page, PerPage: p.PerPage}
	if p.Page > 1 {
		prev := min(p.Page-1, last)
		m.Prev = &prev
	}
	if p.Page < last {
		next := p.Page + 1
		m.Next = &next
	}
	return m
}

type list[T any] struct {
	Body struct {
		Data []T `json:"data"`
	}
}

func listOf[T any](items []T) *list[T] {
	out := &list[T]{}
	out.Body.Data = items
	return out
}

type paged[T any] struct {
	Body struct {
		Data []T  `json:"data"`
		Meta Meta `json:"meta"`
	}
}

func pagedOf[T any](items []T, p wps.Page, total int) *paged[T] {
	out := &paged[T]{}
	out.Body.Data, out.Body.Meta = items, pageMeta(p, total)
	return out
}

type created[T any] struct {
	Location string `header:"Location"`
	Body     T
}

type body[T any] struct{ Body T }

// Health.

type health struct {
	Status string `json:"status"`
}

func (s *Server) healthz(context.Context, *empty) (*body[health], error) {
	return &body[health]{health{"ok"}}, nil
}

func (s *Server) readyz(ctx context.Context, _ *empty) (*body[health], error) {
	if err := s.svc.Store().Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "not ready", "err", err)
		return nil, &Problem{Type: "urn:wps:problem:unavailable", Title: "Service Unavailable", Status: 503,
			Detail: "the database does not answer", Code: "unavailable"}
	}
	return &body[health]{health{"ready"}}, nil
}

// Organization.

func (s *Server) getOrg(ctx context.Context, _ *empty) (*body[wps.Org], error) {
	o, err := s.svc.GetOrg(ctx, principal(ctx))
	return &body[wps.Org]{o}, err
}

type orgUpdateIn struct {
	Body struct {
		LogoKey    *string   `json:"logoKey,omitempty" maxLength:"500"`
		PinnedURL  *string   `json:"pinnedUrl,omitempty" maxLength:"2000"`
		ThemeColor *string   `json:"themeColor,omitempty" doc:"#RRGGBB"`
		Operations *[]string `json:"operations,omitempty"`
	}
}

func (s *Server) updateOrg(ctx context.Context, in *orgUpdateIn) (*body[wps.Org], error) {
	b := in.Body
	o, err := s.svc.UpdateOrg(ctx, principal(ctx), wps.OrgUpdate{LogoKey: b.LogoKey, PinnedURL: b.PinnedURL, ThemeColor: b.ThemeColor, Operations: b.Operations})
	return &body[wps.Org]{o}, err
}

// The business calendar.

type calendarIn struct {
	Body struct {
		TimeZone     string              `json:"timeZone" maxLength:"100" doc:"An IANA time zone name (America/Sao_Paulo)"`
		WorkingHours map[string][]string `json:"workingHours,omitempty" doc:"By day (sun, mon, tue, wed, thu, fri, sat): intervals \"HH:MM-HH:MM\" (24:00 ends a day; an end before the start runs past midnight); a day left out has no working time"`
		Holidays     []string            `json:"holidays,omitempty" maxItems:"1000" doc:"Dates YYYY-MM-DD without working time"`
	}
}

func (s *Server) getCalendar(ctx context.Context, _ *empty) (*body[calendar.Calendar], error) {
	c, err := s.svc.GetCalendar(ctx, principal(ctx))
	return &body[calendar.Calendar]{c}, err
}

func (s *Server) putCalendar(ctx context.Context, in *calendarIn) (*body[calendar.Calendar], error) {
	c, err := s.svc.PutCalendar(ctx, principal(ctx), calendar.Calendar{TimeZone: in.Body.TimeZone, WorkingHours: in.Body.WorkingHours, Holidays: in.Body.Holidays})
	return &body[calendar.Calendar]{c}, err
}

// Users and API keys.

type meIn struct {
	Body struct {
		Name     *string `json:"name,omitempty" maxLength:"200" doc:"The user's name"`
		TimeZone *string `json:"timeZone,omitempty" maxLength:"100" doc:"An IANA time zone name (America/Sao_Paulo); empty: not set (UTC)"`
		Locale   *string `json:"locale,omitempty" maxLength:"10" doc:"The language of the console and of mail: en, pt-BR or es; empty: not set (the browser's language, else English)"`
	}
}

func (s *Server) updateMe(ctx context.Context, in *meIn) (*body[wps.User], error) {
	u, err := s.svc.UpdateMe(ctx, principal(ctx), wps.MeUpdate{Name: in.Body.Name, TimeZone: in.Body.TimeZone, Locale: in.Body.Locale})
	return &body[wps.User]{u}, err
}

func (s *Server) getMe(ctx context.Context, _ *empty) (*body[wps.User], error) {
	u, err := s.svc.Me(ctx, principal(ctx))
	return &body[wps.User]{u}, err
}

func (s *Server) listUsers(ctx context.Context, in *PageQuery) (*paged[wps.User], error) {
	users, total, err := s.svc.ListUsers(ctx, principal(ctx), in.page())
	return pagedOf(users, in.page(), total), err
}

func (s *Server) getUser(ctx context.Context, in *idPath) (*body[wps.User], error) {
	u, err := s.svc.GetUser(ctx, principal(ctx), in.ID)
	return &body[wps.User]{u}, err
}

type userUpdateIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body struct {
		Name   *string `json:"name,omitempty" maxLength:"200"`
		Status *string `json:"status,omitempty" enum:"ACTIVE,DEACTIVATED" doc:"DEACTIVATED revokes every API key and ends every session of the user"`
	}
}

func (s *Server) updateUser(ctx context.Context, in *userUpdateIn) (*body[wps.User], error) {
	u, err := s.svc.UpdateUser(ctx, principal(ctx), in.ID, wps.UserUpdate{Name: in.Body.Name, Status: in.Body.Status})
	return &body[wps.User]{u}, err
}

func (s *Server) listUserAPIKeys(ctx context.Context, in *idPath) (*list[wps.APIKey], error) {
	keys, err := s.svc.ListUserAPIKeys(ctx, principal(ctx), in.ID)
	return listOf(keys), err
}

type userKeyPath struct {
	ID    string `path:"id" maxLength:"100"`
	KeyID string `path:"keyId" maxLength:"100"`
}

func (s *Server) deleteUserAPIKey(ctx context.Context, in *userKeyPath) (*empty, error) {
	return nil, s.svc.RevokeUserAPIKey(ctx, principal(ctx), in.ID, in.KeyID)
}

type passwordIn struct {
	Body struct {
		CurrentPassword string `json:"currentPassword,omitempty" maxLength:"1024" doc:"Required once a password is set"`
		NewPassword     string `json:"newPassword" required:"true" maxLength:"1024" doc:"At least 12 characters"`
	}
}

func (s *Server) changePassword(ctx context.Context, in *passwordIn) (*empty, error) {
	return nil, s.svc.ChangePassword(ctx, principal(ctx), in.Body.CurrentPassword, in.Body.NewPassword)
}

// Sessions.

// sessionCookie names the cookie that carries a console session
// (identity.SessionCookie makes it).
const sessionCookie = identity.SessionCookieName

// SessionToken is the session token a request's cookie carries, or "".
func SessionToken(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

type signInIn struct {
	Body struct {
		Email    string `json:"email" required:"true" maxLength:"320"`
		Password string `json:"password" required:"true" maxLength:"1024"`
		OrgID    string `json:"orgId,omitempty" maxLength:"100" doc:"The organization, when the email belongs to several (default: the most recently signed in)"`
	}
}

type signedIn struct {
	User      wps.User `json:"user"`
	ExpiresAt wps.Time `json:"expiresAt" doc:"When the session ends at the latest (it also ends after 12 h unused)"`
	CSRFToken string   `json:"csrfToken" doc:"Send it as X-CSRF-Token on every request of this session but GET and HEAD"`
}

type signInOut struct {
	SetCookie http.Cookie `header:"Set-Cookie"`
	Body      signedIn
}

func (s *Server) signIn(ctx context.Context, in *signInIn) (*signInOut, error) {
	c := client(ctx)
	out, err := s.svc.SignIn(ctx, wps.SignInInput{Email: in.Body.Email, Password: in.Body.Password, OrgID: in.Body.OrgID, Address: c.addr})
	if err != nil {
		return nil, err
	}
	cookie := identity.SessionCookie(out.Token, out.ExpiresAt.Time, c.https || s.secureCookies)
	return &signInOut{SetCookie: cookie, Body: signedIn{User: out.User, ExpiresAt: out.ExpiresAt, CSRFToken: out.CSRFToken}}, nil
}

type signOutOut struct {
	SetCookie http.Cookie `header:"Set-Cookie"`
}

func (s *Server) signOut(ctx context.Context, _ *empty) (*signOutOut, error) {
	err := s.svc.SignOut(ctx, principal(ctx))
	return &signOutOut{SetCookie: identity.SessionCookie("", time.Time{}, client(ctx).https || s.secureCookies)}, err
}

type apiKeyIn struct {
	Body struct {
		Name string `json:"name" required:"true" maxLength:"100"`
	}
}

func (s *Server) createAPIKey(ctx context.Context, in *apiKeyIn) (*created[wps.APIKey], error) {
	k, err := s.svc.CreateAPIKey(ctx, principal(ctx), in.Body.Name)
	return &created[wps.APIKey]{Location: "/v1/users/me/api-keys/" + k.ID, Body: k}, err
}

func (s *Server) listAPIKeys(ctx context.Context, _ *empty) (*list[wps.APIKey], error) {
	keys, err := s.svc.ListAPIKeys(ctx, principal(ctx))
	return listOf(keys), err
}

func (s *Server) deleteAPIKey(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.RevokeAPIKey(ctx, principal(ctx), in.ID)
}

// Roles.

type roleIn struct {
	Body struct {
		Role   string `json:"role" required:"true"`
		UserID string `json:"userId" required:"true"`
	}
}

type userRoles struct {
	UserID string   `json:"userId"`
	Roles  []string `json:"roles"`
}

func (s *Server) assignRole(ctx context.Context, in *roleIn) (*body[userRoles], error) {
	roles, err := s.svc.AssignRole(ctx, principal(ctx), in.Body.UserID, in.Body.Role)
	return &body[userRoles]{userRoles{in.Body.UserID, roles}}, err
}

func (s *Server) revokeRole(ctx context.Context, in *roleIn) (*body[userRoles], error) {
	roles, err := s.svc.RevokeRole(ctx, principal(ctx), in.Body.UserID, in.Body.Role)
	return &body[userRoles]{userRoles{in.Body.UserID, roles}}, err
}

// Invites.

type inviteIn struct {
	Body struct {
		Email string   `json:"email" required:"true"`
		Name  string   `json:"name,omitempty"`
		Roles []string `json:"roles,omitempty"`
	}
}

func (s *Server) createInvite(ctx context.Context, in *inviteIn) (*created[wps.Invite], error) {
	inv, err := s.svc.Invite(ctx, principal(ctx), wps.InviteInput{Email: in.Body.Email, Name: in.Body.Name, Roles: in.Body.Roles})
	return &created[wps.Invite]{Location: "/v1/invites/" + inv.ID, Body: inv}, err
}

func (s *Server) listInvites(ctx context.Context, _ *empty) (*list[wps.Invite], error) {
	invites, err := s.svc.ListInvites(ctx, principal(ctx))
	return listOf(invites), err
}

func (s *Server) deleteInvite(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.RevokeInvite(ctx, principal(ctx), in.ID)
}

type acceptIn struct {
	Body struct {
		Token    string `json:"token" required:"true"`
		Name     string `json:"name,omitempty"`
		Password string `json:"password,omitempty" maxLength:"1024" doc:"To sign in to the console: at least 12 characters; stored only as an argon2id hash"`
	}
}

type accepted struct {
	User   wps.User   `json:"user"`
	APIKey wps.APIKey `json:"apiKey"`
}

func (s *Server) acceptInvite(ctx context.Context, in *acceptIn) (*created[accepted], error) {
	a, err := s.svc.AcceptInvite(ctx, in.Body.Token, in.Body.Name, in.Body.Password)
	return &created[accepted]{Location: "/v1/users/me", Body: accepted{a.User, a.APIKey}}, err
}

// Policies.

type policyBody struct {
	Name      string   `json:"name" required:"true"`
	Roles     []string `json:"roles,omitempty"`
	Functions []string `json:"functions,omitempty"`
}

type policyIn struct{ Body policyBody }

type policyUpdateIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body struct {
		Name          string   `json:"name" required:"true"`
		OldPolicyName *string  `json:"oldPolicyName,omitempty"`
		Roles         []string `json:"roles,omitempty"`
		Functions     []string `json:"functions,omitempty"`
	}
}

func (s *Server) createPolicy(ctx context.Context, in *policyIn) (*created[wps.Policy], error) {
	b := in.Body
	p, err := s.svc.CreatePolicy(ctx, principal(ctx), wps.PolicyInput{Name: b.Name, Roles: b.Roles, Functions: b.Functions})
	return &created[wps.Policy]{Location: "/v1/users/policies/" + p.ID, Body: p}, err
}

func (s *Server) listPolicies(ctx context.Context, _ *empty) (*list[wps.Policy], error) {
	list, err := s.svc.ListPolicies(ctx, principal(ctx))
	return listOf(list), err
}

func (s *Server) updatePolicy(ctx context.Context, in *policyUpdateIn) (*body[wps.Policy], error) {
	b := in.Body
	p, err := s.svc.UpdatePolicy(ctx, principal(ctx), in.ID, wps.PolicyInput{Name: b.Name, OldName: b.OldPolicyName, Roles: b.Roles, Functions: b.Functions})
	return &body[wps.Policy]{p}, err
}

func (s *Server) deletePolicy(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.DeletePolicy(ctx, principal(ctx), in.ID)
}
