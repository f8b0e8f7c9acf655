package httpapi

import (
	"context"

	"wps/internal/notify"
	"wps/internal/wps"
)

type notificationListIn struct {
	PageQuery
	UserID string `query:"userId" maxLength:"100" doc:"Only this user's messages (users:manage for another user's)"`
	Kind   string `query:"kind" enum:"invite,password.reset,work.waiting,work.returned,work.overdue,work.digest"`
	Status string `query:"status" enum:"PENDING,SENT,FAILED"`
}

func (s *Server) listNotifications(ctx context.Context, in *notificationListIn) (*paged[wps.Notification], error) {
	page := in.page()
	l, total, err := notify.ListNotifications(ctx, s.svc, principal(ctx), wps.NotificationQuery{Page: page, UserID: in.UserID, Kind: in.Kind, Status: in.Status})
	return pagedOf(l, page, total), err
}

type resetIn struct {
	Body struct {
		Email string `json:"email" required:"true" maxLength:"320" doc:"The account's email; the answer is the same whether or not it is known"`
	}
}

func (s *Server) requestPasswordReset(ctx context.Context, in *resetIn) (*empty, error) {
	return nil, s.svc.RequestPasswordReset(ctx, in.Body.Email, client(ctx).addr)
}

type resetAcceptIn struct {
	Body struct {
		Token       string `json:"token" required:"true" maxLength:"128" doc:"The token of the link mailed (/reset/{token})"`
		NewPassword string `json:"newPassword" required:"true" maxLength:"1024" doc:"At least 12 characters; stored only as an argon2id hash"`
	}
}

func (s *Server) acceptPasswordReset(ctx context.Context, in *resetAcceptIn) (*empty, error) {
	return nil, s.svc.AcceptPasswordReset(ctx, in.Body.Token, in.Body.NewPassword)
}

func (s *Server) getNotificationPrefs(ctx context.Context, _ *empty) (*body[wps.NotificationPrefs], error) {
	out, err := notify.GetNotificationPrefs(ctx, s.svc, principal(ctx))
	return &body[wps.NotificationPrefs]{out}, err
}

type prefsIn struct {
	Body wps.NotificationPrefs
}

func (s *Server) putNotificationPrefs(ctx context.Context, in *prefsIn) (*body[wps.NotificationPrefs], error) {
	out, err := notify.SetNotificationPrefs(ctx, s.svc, principal(ctx), in.Body)
	return &body[wps.NotificationPrefs]{out}, err
}
