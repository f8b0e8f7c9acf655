package wps

import "context"

// ReadReport lets fn compute reports (internal/reports) in one read
// transaction, over the process processID (its latest version) or, when
// processID is empty, the org's live processes (the first 500). Reports
// show counts and times of measurements, never values; they need both
// process:read and measurement:read. Errors: CodeForbidden, CodeNotFound.
func (s *Service) ReadReport(ctx context.Context, p *Principal, processID string, fn func(tx Tx, procs []Process) error) error {
	if err := p.Require(FnProcessRead); err != nil {
		return err
	}
	if err := p.Require(FnMeasurementRead); err != nil {
		return err
	}
	return s.store.Read(ctx, func(tx Tx) error {
		if processID != "" {
			proc, err := tx.GetProcess(p.OrgID, processID, 0)
			if err != nil {
				return err
			}
			return fn(tx, []Process{proc})
		}
		list, _, err := tx.ListProcesses(p.OrgID, Page{Page: 1, PerPage: 500}, "", false)
		if err != nil {
			return err
		}
		return fn(tx, list)
	})
}
