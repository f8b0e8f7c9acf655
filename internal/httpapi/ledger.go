package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"wps/internal/evidence"
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

// withZip answers a zip file.
func withZip(o huma.Operation) huma.Operation {
	o.Responses = map[string]*huma.Response{"200": {Description: "The evidence bundle (docs/ledger.md): wps ledger verify --bundle FILE checks it offline",
		Content: map[string]*huma.MediaType{"application/zip": {Schema: &huma.Schema{Type: "string", Format: "binary"}}}}}
	return o
}

func (s *Server) measurementEvidence(ctx context.Context, in *idPath) (*huma.StreamResponse, error) {
	ev, err := evidence.Gather(ctx, s.svc, principal(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := evidence.Write(&b, ev); err != nil {
		return nil, wps.Internal(err)
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		hctx.SetHeader("Content-Type", "application/zip")
		hctx.SetHeader("Content-Length", strconv.Itoa(b.Len()))
		hctx.SetHeader("Content-Disposition", `attachment; filename="evidence-`+in.ID+`.zip"`)
		hctx.SetStatus(http.StatusOK)
		if _, err := hctx.BodyWriter().Write(b.Bytes()); err != nil {
			s.log.ErrorContext(ctx, "download interrupted", "err", err, "request_id", requestID(ctx))
		}
	}}, nil
}
