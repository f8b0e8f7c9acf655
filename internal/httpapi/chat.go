package httpapi

import (
	"context"

	"wps/internal/notify"
	"wps/internal/wps"
)

type chatChannelIn struct {
	Body struct {
		Kind   string   `json:"kind" required:"true" doc:"slack (an incoming webhook: {\"text\": ...}) or teams (an incoming webhook: a message card)"`
		URL    string   `json:"url" required:"true" doc:"The channel's incoming-webhook URL (absolute http(s), not a private address)"`
		Events []string `json:"events,omitempty" doc:"Which messages: work.waiting, work.overdue, work.returned, work.escalated; all when absent"`
	}
}

func (s *Server) createChatChannel(ctx context.Context, in *chatChannelIn) (*created[wps.ChatChannel], error) {
	c, err := notify.CreateChatChannel(ctx, s.svc, principal(ctx), notify.ChatChannelInput{Kind: in.Body.Kind, URL: in.Body.URL, Events: in.Body.Events})
	return &created[wps.ChatChannel]{Location: "/v1/chat-channels/" + c.ID, Body: c}, err
}

func (s *Server) listChatChannels(ctx context.Context, _ *empty) (*list[wps.ChatChannel], error) {
	l, err := notify.ListChatChannels(ctx, s.svc, principal(ctx))
	return listOf(l), err
}

func (s *Server) getChatChannel(ctx context.Context, in *idPath) (*body[wps.ChatChannel], error) {
	c, err := notify.GetChatChannel(ctx, s.svc, principal(ctx), in.ID)
	return &body[wps.ChatChannel]{c}, err
}

func (s *Server) deleteChatChannel(ctx context.Context, in *idPath) (*empty, error) {
	return nil, notify.DeleteChatChannel(ctx, s.svc, principal(ctx), in.ID)
}
