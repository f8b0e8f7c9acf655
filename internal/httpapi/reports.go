package httpapi

import (
	"context"

	"wps/internal/reports"
	"wps/internal/wps"
)

type reportIn struct {
	ID   string `path:"id" maxLength:"100"`
	From string `query:"from" maxLength:"10" doc:"First UTC day, YYYY-MM-DD (default: 29 days before to)"`
	To   string `query:"to" maxLength:"10" doc:"Last UTC day, included, YYYY-MM-DD (default: today); a range covers at most WPS_REPORT_MAX_DAYS days (366)"`
}

func (s *Server) getProcessReport(ctx context.Context, in *reportIn) (*body[reports.ProcessReport], error) {
	var out reports.ProcessReport
	rg, err := s.reports.ParseRange(in.From, in.To)
	if err != nil {
		return nil, err
	}
	err = s.svc.ReadReport(ctx, principal(ctx), in.ID, func(tx wps.Tx, procs []wps.Process) (err error) {
		out, err = s.reports.Process(tx, procs[0], rg)
		return err
	})
	return &body[reports.ProcessReport]{out}, err
}
