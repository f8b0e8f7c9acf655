package httpapi

import (
	"context"

	"wps/internal/wps"
)

func (s *Server) verifyLedger(ctx context.Context, _ *empty) (*body[wps.LedgerReport], error) {
	r, err := s.svc.VerifyLedger(ctx, principal(ctx))
	return &body[wps.LedgerReport]{r}, err
}

func (s *Server) ledgerKey(ctx context.Context, _ *empty) (*body[wps.LedgerKeyView], error) {
	k, err := s.svc.LedgerKeyOf(ctx, principal(ctx))
	return &body[wps.LedgerKeyView]{k}, err
}

func (s *Server) ledgerCheckpoint(ctx context.Context, _ *empty) (*body[wps.CheckpointView], error) {
	c, err := s.svc.LedgerCheckpoint(ctx, principal(ctx))
	return &body[wps.CheckpointView]{c}, err
}

type consistencyIn struct {
	From int64 `query:"from" required:"true" minimum:"1" doc:"The smaller tree's size (an earlier checkpoint's)"`
	To   int64 `query:"to" required:"true" minimum:"1" doc:"The larger tree's size"`
}

func (s *Server) ledgerConsistency(ctx context.Context, in *consistencyIn) (*body[wps.ConsistencyProof], error) {
	p, err := s.svc.LedgerConsistency(ctx, principal(ctx), in.From, in.To)
	return &body[wps.ConsistencyProof]{p}, err
}

type proofIn struct {
	ID       string `path:"id" maxLength:"100"`
	TreeSize int64  `query:"treeSize" minimum:"0" doc:"Prove against the tree of this size (a checkpoint's you hold); default the latest checkpoint's"`
}

func (s *Server) actionProof(ctx context.Context, in *proofIn) (*body[wps.LeafProof], error) {
	p, err := s.svc.ActionProof(ctx, principal(ctx), in.ID, in.TreeSize)
	return &body[wps.LeafProof]{p}, err
}
