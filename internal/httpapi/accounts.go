package httpapi

import (
	"context"

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

// Users and API keys.

func (s *Server) getMe(ctx context.Context, _ *empty) (*body[wps.User], error) {
	u, err := s.svc.Me(ctx, principal(ctx))
	return &body[wps.User]{u}, err
}

func (s *Server) listUsers(ctx context.Context, in *PageQuery) (*paged[wps.User], error) {
	users, total, err := s.svc.ListUsers(ctx, principal(ctx), in.page())
	return pagedOf(users, in.page(), total), err
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
		Token string `json:"token" required:"true"`
		Name  string `json:"name,omitempty"`
	}
}

type accepted struct {
	User   wps.User   `json:"user"`
	APIKey wps.APIKey `json:"apiKey"`
}

func (s *Server) acceptInvite(ctx context.Context, in *acceptIn) (*created[accepted], error) {
	a, err := s.svc.AcceptInvite(ctx, in.Body.Token, in.Body.Name)
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
