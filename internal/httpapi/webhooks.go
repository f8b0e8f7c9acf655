package httpapi

import (
	"context"

	"wps/internal/wps"
)

type webhookIn struct {
	Body struct {
		URL    string   `json:"url" required:"true" doc:"Absolute http(s) URL"`
		Events []string `json:"events,omitempty" doc:"Event types; all when absent"`
	}
}

type webhookPatchIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body struct {
		URL    *string   `json:"url,omitempty"`
		Events *[]string `json:"events,omitempty"`
	}
}

func (s *Server) createWebhook(ctx context.Context, in *webhookIn) (*created[wps.Webhook], error) {
	in2 := wps.WebhookInput{URL: &in.Body.URL}
	if in.Body.Events != nil {
		in2.Events = &in.Body.Events
	}
	w, err := s.svc.CreateWebhook(ctx, principal(ctx), in2)
	return &created[wps.Webhook]{Location: "/v1/webhooks/" + w.ID, Body: w}, err
}

func (s *Server) listWebhooks(ctx context.Context, _ *empty) (*list[wps.Webhook], error) {
	l, err := s.svc.ListWebhooks(ctx, principal(ctx))
	return listOf(l), err
}

func (s *Server) updateWebhook(ctx context.Context, in *webhookPatchIn) (*body[wps.Webhook], error) {
	w, err := s.svc.UpdateWebhook(ctx, principal(ctx), in.ID, wps.WebhookInput{URL: in.Body.URL, Events: in.Body.Events})
	return &body[wps.Webhook]{w}, err
}

func (s *Server) deleteWebhook(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.DeleteWebhook(ctx, principal(ctx), in.ID)
}

// secretOut shows the org's signing secret(s).
type secretOut struct {
	Secret        string    `json:"secret"`
	Previous      string    `json:"previous,omitempty" doc:"The secret before the last rotation; it signs too until previousUntil"`
	PreviousUntil *wps.Time `json:"previousUntil,omitempty"`
	RotatedAt     wps.Time  `json:"rotatedAt"`
}

func secretBody(sec wps.SigningSecret, now wps.Time) *body[secretOut] {
	out := secretOut{Secret: sec.Secret, RotatedAt: sec.RotatedAt}
	if sec.Previous != "" && now.Before(sec.PreviousUntil.Time) {
		out.Previous, out.PreviousUntil = sec.Previous, &sec.PreviousUntil
	}
	return &body[secretOut]{out}
}

func (s *Server) getSecret(ctx context.Context, _ *empty) (*body[secretOut], error) {
	sec, err := s.svc.GetSigningSecret(ctx, principal(ctx))
	return secretBody(sec, s.svc.Now()), err
}

func (s *Server) rotateSecret(ctx context.Context, _ *empty) (*body[secretOut], error) {
	sec, err := s.svc.RotateSigningSecret(ctx, principal(ctx))
	return secretBody(sec, s.svc.Now()), err
}

type deliveryListIn struct {
	PageQuery
	Status  string `query:"status" enum:"PENDING,SUCCEEDED,GIVEN_UP,CANCELLED"`
	EventID string `query:"eventId" maxLength:"100"`
}

func (s *Server) listDeliveries(ctx context.Context, in *deliveryListIn) (*paged[wps.Delivery], error) {
	page := in.page()
	l, total, err := s.svc.ListDeliveries(ctx, principal(ctx), wps.DeliveryQuery{Page: page, Status: in.Status, EventID: in.EventID})
	return pagedOf(l, page, total), err
}

func (s *Server) retryDelivery(ctx context.Context, in *idPath) (*body[wps.Delivery], error) {
	d, err := s.svc.RetryDelivery(ctx, principal(ctx), in.ID)
	return &body[wps.Delivery]{d}, err
}
