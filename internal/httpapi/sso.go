package httpapi

import (
	"context"

	"wps/internal/identity"
	"wps/internal/wps"
)

type ssoIn struct {
	Body struct {
		Issuer          string              `json:"issuer" required:"true" maxLength:"2000" doc:"The OpenID provider's issuer URL (its discovery document is fetched)"`
		ClientID        string              `json:"clientId" required:"true" maxLength:"500" doc:"The client id wps has at the provider"`
		ClientSecret    *string             `json:"clientSecret,omitempty" maxLength:"1000" doc:"The client secret (write-only; required the first time, kept when left out)"`
		EmailDomains    []string            `json:"emailDomains,omitempty" maxItems:"50" doc:"Domains whose people sign in here from /sso/start?email="`
		GroupsClaim     string              `json:"groupsClaim,omitempty" maxLength:"100" doc:"The ID token claim listing the person's groups; when set, each sign-in sets their roles from groupRoles"`
		GroupRoles      map[string][]string `json:"groupRoles,omitempty" doc:"For each group, the roles its members hold"`
		AutoCreateUsers bool                `json:"autoCreateUsers,omitempty" doc:"Create a user at their first sign-in (default false)"`
		PasswordSignIn  string              `json:"passwordSignIn,omitempty" enum:"allowed,admins-only,disabled" doc:"Who may still sign in with a password (default allowed)"`
	}
}

func (s *Server) getSSO(ctx context.Context, _ *empty) (*body[wps.SSOSettings], error) {
	out, err := identity.GetSSO(ctx, s.svc, principal(ctx))
	return &body[wps.SSOSettings]{Body: out}, err
}

func (s *Server) putSSO(ctx context.Context, in *ssoIn) (*body[wps.SSOSettings], error) {
	b := in.Body
	out, err := identity.PutSSO(ctx, s.svc, principal(ctx), identity.SSOInput{Issuer: b.Issuer, ClientID: b.ClientID, ClientSecret: b.ClientSecret,
		EmailDomains: b.EmailDomains, GroupsClaim: b.GroupsClaim, GroupRoles: b.GroupRoles, AutoCreateUsers: b.AutoCreateUsers, PasswordSignIn: b.PasswordSignIn})
	return &body[wps.SSOSettings]{Body: out}, err
}

func (s *Server) deleteSSO(ctx context.Context, _ *empty) (*empty, error) {
	return nil, identity.DeleteSSO(ctx, s.svc, principal(ctx))
}
