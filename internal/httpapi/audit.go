package httpapi

import (
	"context"
	"time"

	"wps/internal/wps"
)

type auditListIn struct {
	PageQuery
	Type     string    `query:"type" maxLength:"64" doc:"Only events of this type (user.updated, process.created, …)"`
	ActorID  string    `query:"actorId" maxLength:"100" doc:"Only changes made by this user"`
	TargetID string    `query:"targetId" maxLength:"100" doc:"Only changes of this user, process, entity, policy, …"`
	From     time.Time `query:"from" doc:"At or after (RFC 3339)"`
	To       time.Time `query:"to" doc:"Before (RFC 3339)"`
}

func (s *Server) listAuditEvents(ctx context.Context, in *auditListIn) (*paged[wps.AuditEvent], error) {
	q := wps.AuditQuery{Page: in.page(), Type: in.Type, ActorID: in.ActorID, TargetID: in.TargetID}
	if !in.From.IsZero() {
		t := wps.At(in.From)
		q.From = &t
	}
	if !in.To.IsZero() {
		t := wps.At(in.To)
		q.To = &t
	}
	l, total, err := s.svc.ListAuditEvents(ctx, principal(ctx), q)
	return pagedOf(l, q.Page, total), err
}
