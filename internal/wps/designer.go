package wps

import (
	"context"
	"errors"
)

// errPreviewOnly rolls back the transaction of a preview.
var errPreviewOnly = errors.New("preview: nothing kept")

// PreviewProcessUpdate says, without saving, what saving u would do to
// the running measurements of the process's latest version: when a
// measurement uses that version the save makes a new one, and the answer
// is the migration dry run of those measurements to it (Blocked counts
// the ones that could not move, each item saying why). When the save
// would edit the version in place (no measurement uses it), the answer
// has no items. The edit is validated as UpdateProcess validates it, in a
// transaction that is rolled back. Errors: as UpdateProcess.
func (s *Service) PreviewProcessUpdate(ctx context.Context, p *Principal, id string, u ProcessUpdate) (Migration, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Migration{}, err
	}
	out := Migration{ProcessID: id, DryRun: true, Items: []MigrationItem{}}
	err := s.store.Write(ctx, func(tx Tx) error {
		cur, err := tx.GetProcess(p.OrgID, id, 0)
		if err != nil {
			return err
		}
		out.FromVersion, out.ToVersion = cur.Version, cur.Version
		to, err := s.editProcess(tx, p, id, u.apply)
		if err != nil {
			return err
		}
		if to.Version == cur.Version {
			return errPreviewOnly
		}
		out.ToVersion = to.Version
		ids, err := tx.LiveMeasurementsOf(p.OrgID, id, cur.Version)
		if err != nil {
			return err
		}
		for _, mid := range ids {
			item, err := s.migrate(tx, p, cur, to, mid, true)
			if errors.Is(err, errNotLive) {
				continue
			}
			if err != nil {
				return err
			}
			out.Items = append(out.Items, item)
		}
		return errPreviewOnly
	})
	if !errors.Is(err, errPreviewOnly) {
		return out, err
	}
	out.count()
	return out, nil
}
