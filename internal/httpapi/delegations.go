package httpapi

import (
	"context"

	"wps/internal/wps"
)

type delegationBody struct {
	ToUserID    string   `json:"toUserId" required:"true" doc:"The delegate: an active user of the organization, not the delegator"`
	EndsAt      string   `json:"endsAt" required:"true" doc:"When it ends (RFC 3339): in the future, after startsAt"`
	StartsAt    string   `json:"startsAt,omitempty" doc:"When it starts (RFC 3339); now when absent or past"`
	PolicyNames []string `json:"policyNames,omitempty" doc:"The delegator's own policies whose seats it gives; all when absent"`
	Reason      string   `json:"reason" required:"true" doc:"Why (who is away, for what); not blank"`
}

func (b delegationBody) input() wps.DelegationInput {
	return wps.DelegationInput{ToUserID: b.ToUserID, StartsAt: b.StartsAt, EndsAt: b.EndsAt, PolicyNames: b.PolicyNames, Reason: b.Reason}
}

type delegationIn struct {
	Body delegationBody
}

type userDelegationIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body delegationBody
}

func (s *Server) createDelegation(ctx context.Context, in *delegationIn) (*created[wps.Delegation], error) {
	d, err := s.svc.CreateDelegation(ctx, principal(ctx), in.Body.input())
	return &created[wps.Delegation]{Location: "/v1/delegations/" + d.ID, Body: d}, err
}

func (s *Server) createUserDelegation(ctx context.Context, in *userDelegationIn) (*created[wps.Delegation], error) {
	d, err := s.svc.CreateDelegationFor(ctx, principal(ctx), in.ID, in.Body.input())
	return &created[wps.Delegation]{Location: "/v1/delegations/" + d.ID, Body: d}, err
}

func (s *Server) listDelegations(ctx context.Context, _ *empty) (*body[wps.Delegations], error) {
	l, err := s.svc.ListDelegations(ctx, principal(ctx))
	return &body[wps.Delegations]{l}, err
}

func (s *Server) deleteDelegation(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.RevokeDelegation(ctx, principal(ctx), in.ID)
}
