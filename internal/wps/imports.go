package wps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Statuses of an import job.
const (
	ImportPending   = "PENDING"   // waiting for a worker
	ImportRunning   = "RUNNING"   // validating, then writing hidden rows
	ImportSucceeded = "SUCCEEDED" // every row is visible
	ImportFailed    = "FAILED"    // nothing is visible; error says why
)

// MaxImportRows bounds one import, synchronous or a job.
const MaxImportRows = 100_000

// MaxImportColumns bounds the header of a workbook or CSV import: an
// entity has at most MaxParamsPerOwner parameters, an export adds three
// columns, and a header may name others that are ignored.
const MaxImportColumns = 1_000

// maxJobErrors bounds the field errors a failed job keeps.
const maxJobErrors = 10_000

// ImportJob is a records import run by a background worker: its rows are
// validated, then written in chunks that stay hidden until the last small
// write makes them all visible at once.
type ImportJob struct {
	ID         string          `json:"id"`
	EntityID   string          `json:"entityId"`
	Status     string          `json:"status" enum:"PENDING,RUNNING,SUCCEEDED,FAILED"`
	Total      int             `json:"total" doc:"Rows in the import"`
	Processed  int             `json:"processed" doc:"Rows written so far (hidden until the job succeeds)"`
	Errors     []FieldError    `json:"errors" doc:"The invalid rows of a failed job (rows[3].pressure), as a synchronous import lists them; at most 10,000"`
	Error      *ImportJobError `json:"error,omitempty" doc:"Why the job failed; only when FAILED"`
	CreatedBy  string          `json:"createdBy" doc:"The user who started the import"`
	CreatedAt  Time            `json:"createdAt"`
	StartedAt  *Time           `json:"startedAt" nullable:"true" doc:"When a worker first took the job; null while PENDING"`
	FinishedAt *Time           `json:"finishedAt" nullable:"true" doc:"When the job SUCCEEDED or FAILED; null before"`

	OrgID        string `json:"-"`
	StorageKey   string `json:"-"` // the uploaded rows in the blob store
	EntityDigest string `json:"-"` // the entity's parameters the rows were checked against
	LeaseOwner   string `json:"-"`
	LeaseUntil   Time   `json:"-"`
	Attempts     int    `json:"-"` // claims by a worker
	Settled      bool   `json:"-"` // no record refers to the job any more
	// Reserved counts the rows whose unique values the job holds in the
	// unique index (under claimID) before it writes them: a write of such a
	// value meanwhile answers 409, as it would once the job's row is there.
	Reserved int `json:"-"`
}

// ImportJobError is why a job failed: the code and detail a synchronous
// import would have answered.
type ImportJobError struct {
	Code   string `json:"code" doc:"invalid, conflict, not_found, or interrupted"`
	Detail string `json:"detail"`
}

// ImportConfig tunes records imports; zero values take defaults.
type ImportConfig struct {
	// SyncMaxRows: an import of more rows runs as a job (default 1000).
	SyncMaxRows int
	// ChunkRows are checked per read transaction of a job, and written per
	// write transaction at most (default 500).
	ChunkRows int
	// ChunkTime ends a job's write transaction early (default 2ms): on
	// SQLite the other writes wait for one chunk at most, whatever the load.
	ChunkTime time.Duration
	// Lease is how long a worker holds a job unrenewed (default 30 s):
	// after a crash, another worker resumes it this long after.
	Lease time.Duration
	// MaxAttempts are the claims of a job before it fails (default 5).
	MaxAttempts int
	// MaxOpen is how many jobs an org may have PENDING or RUNNING
	// (default 10); one more is refused with CodeRateLimited.
	MaxOpen int
	// PerOrg is how many of an org's jobs the workers run at once, over
	// every replica (default 1): the other workers are free for the jobs of
	// other orgs, which do not wait for the org's queue.
	PerOrg int
}

func (c *ImportConfig) defaults() {
	if c.SyncMaxRows <= 0 {
		c.SyncMaxRows = 1000
	}
	if c.ChunkRows <= 0 {
		c.ChunkRows = 500
	}
	if c.ChunkTime <= 0 {
		c.ChunkTime = 2 * time.Millisecond
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.MaxOpen <= 0 {
		c.MaxOpen = 10
	}
	if c.PerOrg <= 0 {
		c.PerOrg = 1
	}
}

// ImportResult is an import's answer: the rows imported, or the job that
// imports them.
type ImportResult struct {
	Imported int
	Job      *ImportJob
}

// Import adds rows (values keyed by name) to an entity, all or nothing:
// at once when they are at most ImportConfig.SyncMaxRows and async is
// false (see importRecords), else as a job whose rows are kept in blobs
// until it ends. Errors: as importRecords; CodeNotFound, CodeForbidden for
// the entity.
func (s *Service) Import(ctx context.Context, p *Principal, blobs BlobStore, entityID string, rows []map[string]json.RawMessage, async bool) (ImportResult, error) {
	if err := p.Require(FnEntityWrite); err != nil {
		return ImportResult{}, err
	}
	if len(rows) > MaxImportRows {
		return ImportResult{}, Invalid("rows", "at most %d rows per import", MaxImportRows)
	}
	if !async && len(rows) <= s.imports.SyncMaxRows {
		n, err := s.importRecords(ctx, p, entityID, rows)
		return ImportResult{Imported: n}, err
	}
	var e Entity
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		if e, err = tx.GetEntity(p.OrgID, entityID); err != nil {
			return err
		}
		return requireRecords(p, e)
	})
	if err != nil {
		return ImportResult{}, err
	}
	if blobs == nil {
		return ImportResult{}, Internal(errors.New("import jobs need a blob store"))
	}
	now := s.Now()
	j := ImportJob{ID: NewID(), OrgID: p.OrgID, EntityID: e.ID, Status: ImportPending, Total: len(rows), Errors: []FieldError{},
		CreatedBy: p.UserID, CreatedAt: now}
	j.StorageKey = p.OrgID + "/imports/" + j.ID
	data, err := json.Marshal(rows)
	if err != nil {
		return ImportResult{}, Internal(err)
	}
	if _, _, err := blobs.Put(ctx, j.StorageKey, bytes.NewReader(data), int64(len(data))); err != nil {
		return ImportResult{}, err
	}
	err = s.store.Write(ctx, func(tx Tx) error {
		open, err := tx.CountOpenImportJobs(p.OrgID)
		if err != nil {
			return err
		}
		if open >= s.imports.MaxOpen {
			return &Error{Code: CodeRateLimited, RetryAfter: 10 * time.Second,
				Message: fmt.Sprintf("the organization has %d imports running (at most %d); try again when one ends", open, s.imports.MaxOpen)}
		}
		return tx.CreateImportJob(j)
	})
	if err != nil {
		_ = blobs.Delete(context.WithoutCancel(ctx), j.StorageKey)
		return ImportResult{}, err
	}
	return ImportResult{Job: &j}, nil
}

// GetImportJob returns a job to those who may import into its entity (a
// job of a deleted entity: to whoever started it). Errors: CodeNotFound,
// CodeForbidden.
func (s *Service) GetImportJob(ctx context.Context, p *Principal, id string) (ImportJob, error) {
	if err := p.Require(FnEntityWrite); err != nil {
		return ImportJob{}, err
	}
	var j ImportJob
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		if j, err = tx.GetImportJob(p.OrgID, id); err != nil {
			return err
		}
		e, err := tx.GetEntity(p.OrgID, j.EntityID)
		if IsCode(err, CodeNotFound) {
			if j.CreatedBy != p.UserID {
				return NotFound("import job")
			}
			return nil
		}
		if err != nil {
			return err
		}
		return requireRecords(p, e)
	})
	if j.Status != ImportFailed { // a failing job's reason shows once its rows are gone
		j.Error, j.Errors = nil, []FieldError{}
	}
	return j, err
}

// ClaimImportJob leases to owner a job that needs a worker: one waiting,
// one whose worker's lease ran out (it crashed), or a finished one whose
// rows are not settled. Orgs take turns: the job is one of an org running
// fewer than ImportConfig.PerOrg jobs, the one that started a job least
// recently, and its oldest. It returns nil when there is none.
func (s *Service) ClaimImportJob(ctx context.Context, owner string) (*ImportJob, error) {
	var j ImportJob
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		now := s.Now()
		// The lease is the claim's own: two claims by one worker (two of
		// its loops, one stalled past the lease) never both hold the job.
		j, err = tx.ClaimImportJob(now, At(now.Add(s.imports.Lease)), owner+"/"+NewID(), s.imports.PerOrg)
		return err
	})
	if IsCode(err, CodeNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// errLeaseLost stops a worker whose job another worker took over.
var errLeaseLost = errors.New("import job: lease lost")

// IsLeaseLost reports that a job's lease went to another worker.
func IsLeaseLost(err error) bool { return errors.Is(err, errLeaseLost) }

// RunImportJob carries a job that ClaimImportJob returned to its end. The
// rows are validated first (read transactions, nothing written): any
// invalid row fails the job with every one listed. Then they are written
// in chunks of ChunkRows, each its own transaction, hidden; the last
// write makes the job SUCCEEDED and so every row visible at once. A
// conflict fails the job; a failed job's rows are then deleted, a
// succeeded job's made plain records, in chunks (settling). A job resumed
// after a crash is checked again and goes on from the rows it wrote. An
// error other than the job's failure leaves it to be claimed again.
func (s *Service) RunImportJob(ctx context.Context, blobs BlobStore, j *ImportJob) error {
	if j.Status == ImportSucceeded || j.Error != nil {
		return s.settleImport(ctx, blobs, j)
	}
	if j.Attempts > s.imports.MaxAttempts {
		return s.failImport(ctx, blobs, j, "interrupted", "the import was interrupted too often; import again", nil)
	}
	rows, err := importRows(ctx, blobs, j.StorageKey)
	if IsCode(err, CodeNotFound) {
		return s.failImport(ctx, blobs, j, "interrupted", "the uploaded rows are gone; import again", nil)
	}
	if err != nil {
		return err
	}
	var e Entity
	err = s.store.Read(ctx, func(tx Tx) (err error) {
		e, err = tx.GetEntity(j.OrgID, j.EntityID)
		return err
	})
	if IsCode(err, CodeNotFound) {
		return s.failImport(ctx, blobs, j, string(CodeNotFound), "the entity was deleted during the import", nil)
	}
	if err != nil {
		return err
	}
	digest := paramsDigest(e.Parameters)
	if j.EntityDigest != "" && j.EntityDigest != digest {
		return s.failImport(ctx, blobs, j, string(CodeConflict), "the entity's parameters changed during the import; import again", nil)
	}
	recs, fields, err := s.checkImportRows(ctx, j, e, rows)
	if err != nil {
		return err
	}
	if len(fields) > 0 {
		msg := fields[0].Field + ": " + fields[0].Message
		if len(fields) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(fields)-1)
		}
		if len(fields) > maxJobErrors {
			fields = fields[:maxJobErrors]
		}
		return s.failImport(ctx, blobs, j, string(CodeInvalid), msg, fields)
	}
	j.EntityDigest = digest
	unique := slices.ContainsFunc(e.Parameters, func(p Parameter) bool { return p.IsUnique })
	for unique && j.Reserved < len(recs) {
		if err := s.reserveChunk(ctx, j, e, recs); err != nil {
			return s.stopOn(ctx, blobs, j, err)
		}
	}
	for j.Processed < len(recs) {
		from := j.Processed
		if err := s.importChunk(ctx, j, e, recs[from:min(from+s.imports.ChunkRows, len(recs))], from); err != nil {
			return s.stopOn(ctx, blobs, j, err)
		}
	}
	if err := s.releaseReserved(ctx, j); err != nil { // every value moved to its row
		return err
	}
	err = s.importWrite(ctx, j, func(tx Tx, next *ImportJob) error {
		e, err := sameEntity(tx, next)
		if err != nil {
			return err
		}
		if err := mayStillImport(tx, next, e); err != nil {
			return err
		}
		now := s.Now()
		next.Status, next.Processed, next.FinishedAt = ImportSucceeded, next.Total, &now
		return nil
	})
	var we *Error
	if asError(err, &we) && (we.Code == CodeConflict || we.Code == CodeNotFound || we.Code == CodeForbidden) {
		return s.failImport(ctx, blobs, j, string(we.Code), we.Message, nil)
	}
	if err != nil {
		return err
	}
	return s.settleImport(ctx, blobs, j)
}

// stopOn ends a job's run on err from one of its writes: a conflict or a
// deleted entity fails the job (as the synchronous import would answer);
// any other error stops the run, for the job to be claimed again.
func (s *Service) stopOn(ctx context.Context, blobs BlobStore, j *ImportJob, err error) error {
	var we *Error
	if asError(err, &we) && (we.Code == CodeConflict || we.Code == CodeNotFound) {
		return s.failImport(ctx, blobs, j, string(we.Code), we.Message, we.Fields)
	}
	return err
}

// importRows reads a job's uploaded rows.
func importRows(ctx context.Context, blobs BlobStore, key string) ([]map[string]json.RawMessage, error) {
	r, err := blobs.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, Internal(err)
	}
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, Internal(err)
	}
	return rows, nil
}

// paramsDigest identifies an entity's parameters: a job's rows are
// checked against one version of them.
func paramsDigest(params []Parameter) string {
	b, _ := json.Marshal(params)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// sameEntity reads the job's entity; CodeConflict (CodeNotFound) when it
// changed its parameters (was deleted) since the job's rows were checked.
func sameEntity(tx Tx, j *ImportJob) (Entity, error) {
	e, err := tx.GetEntity(j.OrgID, j.EntityID)
	if IsCode(err, CodeNotFound) {
		return e, Errorf(CodeNotFound, "the entity was deleted during the import")
	}
	if err != nil {
		return e, err
	}
	if paramsDigest(e.Parameters) != j.EntityDigest {
		return e, Errorf(CodeConflict, "the entity's parameters changed during the import; import again")
	}
	return e, nil
}

// mayStillImport checks, as the job publishes its rows, that the user who
// started it may still import into its entity: deactivated, or without the
// role or a view policy since, the rows are not published (CodeForbidden).
func mayStillImport(tx Tx, j *ImportJob, e Entity) error {
	p, err := principalOf(tx, j.OrgID, j.CreatedBy)
	if IsCode(err, CodeNotFound) || err == nil && p.User.Status != UserActive {
		return Errorf(CodeForbidden, "the user who started the import may no longer import")
	}
	if err != nil {
		return err
	}
	if p.Require(FnEntityWrite) != nil || requireRecords(p, e) != nil {
		return Errorf(CodeForbidden, "the user who started the import may no longer import into this entity")
	}
	return nil
}

// checkImportRows validates every row in read transactions of ChunkRows
// rows, renewing the job's lease as it goes. It returns the records to
// write, or the field errors of every invalid row.
func (s *Service) checkImportRows(ctx context.Context, j *ImportJob, e Entity, rows []map[string]json.RawMessage) ([]Record, []FieldError, error) {
	recs := make([]Record, 0, len(rows))
	var fields []FieldError
	renewed := time.Now()
	for i := 0; i < len(rows); {
		// A read transaction checks ChunkRows rows, or fewer when the lease
		// is due for renewal (a row that recalculates a workbook is slow).
		err := s.store.Read(ctx, func(tx Tx) error {
			for to := min(i+s.imports.ChunkRows, len(rows)); i < to && time.Since(renewed) < s.imports.Lease/4; i++ {
				vals, err := s.checkRecordValues(tx, e, rows[i], nil, fieldIndex("rows", i), s.now())
				var we *Error
				if asError(err, &we) && we.Code == CodeInvalid {
					fields = append(fields, we.Fields...)
					continue
				} else if err != nil {
					return err
				}
				if len(fields) == 0 {
					now := s.Now()
					recs = append(recs, Record{ID: NewID(), OrgID: j.OrgID, EntityID: e.ID, Values: vals, CreatedAt: now, UpdatedAt: now, ImportJobID: j.ID})
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		if time.Since(renewed) >= s.imports.Lease/4 {
			if err := s.importWrite(ctx, j, func(Tx, *ImportJob) error { return nil }); err != nil {
				return nil, nil, err
			}
			renewed = time.Now()
		}
	}
	return recs, fields, nil
}

// holderID is the hidden record under which a job holds the unique values
// of the rows it has not written yet. Its import_job_id is holderJob: no
// job has that id, so it is never shown, nor published with the job's rows.
func holderID(j *ImportJob) string  { return derivedID(j.ID, "reserved") }
func holderJob(j *ImportJob) string { return "reserved:" + j.ID }

// uniqueRows are the unique index rows of record r of e, held under holder.
func uniqueRows(e Entity, r Record, holder string) []IndexRow {
	var out []IndexRow
	for _, p := range e.Parameters {
		if p.IsUnique {
			for _, item := range itemStrings(r.Values[p.ID]) {
				out = append(out, IndexRow{OrgID: e.OrgID, EntityID: e.ID, RecordID: holder, ParamID: p.ID, Value: indexKey(item), Unique: true})
			}
		}
	}
	return out
}

// reserveChunk puts the unique values of the rows from j.Reserved on into
// the unique index, as many rows as it does in ChunkTime, in one
// transaction that records the progress: before it writes a single record,
// a job holds every unique value it will write, so a write of one of them
// meanwhile answers 409 as it would once the row is there, and a value
// taken before fails the job at once, not after the rows before it are
// written.
func (s *Service) reserveChunk(ctx context.Context, j *ImportJob, e Entity, recs []Record) error {
	return s.importWrite(ctx, j, func(tx Tx, next *ImportJob) error {
		start := time.Now()
		if _, err := sameEntity(tx, next); err != nil {
			return err
		}
		if next.Reserved == 0 {
			now := s.Now()
			holder := Record{ID: holderID(next), OrgID: e.OrgID, EntityID: e.ID, Values: map[string]any{}, CreatedAt: now, UpdatedAt: now, ImportJobID: holderJob(next)}
			if err := tx.CreateRecord(holder); err != nil {
				return err
			}
		}
		i := next.Reserved
		for ; i < len(recs) && i < next.Reserved+s.imports.ChunkRows && (i == next.Reserved || time.Since(start) <= s.imports.ChunkTime); i++ {
			for _, row := range uniqueRows(e, recs[i], holderID(next)) {
				if err := tx.InsertRecordIndex(row); IsCode(err, CodeConflict) {
					p, _ := e.Param(row.ParamID)
					return &Error{Code: CodeConflict, Message: fmt.Sprintf("rows[%d]: %s: %q is already used by another record", i, p.Name, row.Value),
						Fields: []FieldError{{Field: fieldIndex("rows", i) + ".values." + p.Name, Message: "must be unique"}}, Err: err}
				} else if err != nil {
					return err
				}
			}
		}
		next.Reserved = i
		return nil
	})
}

// releaseReserved ends the hold of a job's unique values: the holder and
// the values it still holds (none once every row is written; a failed
// job's unwritten rows' otherwise, in one statement, on the failure's path).
func (s *Service) releaseReserved(ctx context.Context, j *ImportJob) error {
	if j.Reserved == 0 {
		return nil
	}
	return s.importWrite(ctx, j, func(tx Tx, next *ImportJob) error {
		next.Reserved = 0
		if err := tx.DeleteRecordIndex(next.OrgID, holderID(next)); err != nil {
			return err
		}
		return tx.DeleteHiddenRecord(next.OrgID, holderID(next))
	})
}

// importChunk writes records (from index from on), hidden, in one
// transaction that also records the job's progress: as many as it writes
// in ChunkTime. A unique value in use fails with CodeConflict naming the
// row, as a synchronous import.
func (s *Service) importChunk(ctx context.Context, j *ImportJob, e Entity, recs []Record, from int) error {
	return s.importWrite(ctx, j, func(tx Tx, next *ImportJob) error {
		start := time.Now()
		if _, err := sameEntity(tx, next); err != nil {
			return err
		}
		n := 0
		for i, r := range recs {
			if i > 0 && time.Since(start) > s.imports.ChunkTime {
				break
			}
			n++
			if from+i < next.Reserved { // its unique values move from the holder to the record
				for _, row := range uniqueRows(e, r, holderID(next)) {
					if err := tx.DeleteRecordIndexValue(row); err != nil {
						return err
					}
				}
			}
			if err := s.saveRecord(tx, e, r, true); err != nil {
				var we *Error
				if asError(err, &we) && we.Code == CodeConflict {
					return &Error{Code: CodeConflict, Message: fmt.Sprintf("rows[%d]: %s", from+i, we.Message), Fields: prefixFields(fieldIndex("rows", from+i), we.Fields)}
				}
				return err
			}
		}
		next.Processed = from + n
		return nil
	})
}

// importWrite runs fn and saves the job as fn leaves it, its lease renewed,
// in one transaction, one at a time per server (importGate), then pauses a
// quarter of the time it took, so that the writes queued meanwhile commit
// before the job's next one. j is updated once committed; errLeaseLost
// when another worker holds the job.
func (s *Service) importWrite(ctx context.Context, j *ImportJob, fn func(tx Tx, next *ImportJob) error) error {
	select {
	case s.importGate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	start := time.Now()
	var next ImportJob
	err := s.store.Write(ctx, func(tx Tx) error {
		next = *j
		if err := fn(tx, &next); err != nil {
			return err
		}
		next.LeaseUntil = At(s.Now().Add(s.imports.Lease))
		err := tx.UpdateImportJob(next)
		if IsCode(err, CodeNotFound) {
			return errLeaseLost
		}
		return err
	})
	took := time.Since(start)
	time.Sleep(max(took/4, time.Millisecond))
	<-s.importGate
	if err == nil {
		*j = next
	}
	return err
}

// failImport records why a job fails, then deletes its rows
// (settleImport), and only then makes it FAILED: a client that sees it
// failed finds its unique values free.
func (s *Service) failImport(ctx context.Context, blobs BlobStore, j *ImportJob, code, detail string, fields []FieldError) error {
	if err := s.releaseReserved(ctx, j); err != nil {
		return err
	}
	err := s.importWrite(ctx, j, func(_ Tx, next *ImportJob) error {
		next.Error = &ImportJobError{Code: code, Detail: detail}
		next.Errors = fields
		if next.Errors == nil {
			next.Errors = []FieldError{}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.settleImport(ctx, blobs, j)
}

// settleImport ends a job's hidden rows in chunks: a succeeded job's
// become plain records (they are visible already), a failing job's are
// deleted, and the last chunk's write makes it FAILED. The uploaded rows go
// first: nothing needs them any more.
func (s *Service) settleImport(ctx context.Context, blobs BlobStore, j *ImportJob) error {
	if err := blobs.Delete(ctx, j.StorageKey); err != nil {
		return err
	}
	for !j.Settled {
		err := s.importWrite(ctx, j, func(tx Tx, next *ImportJob) error {
			publish := next.Status == ImportSucceeded
			n, err := tx.SettleImportRecords(next.OrgID, next.ID, publish, s.imports.ChunkRows)
			next.Settled = n < s.imports.ChunkRows
			if next.Settled && !publish {
				now := s.Now()
				next.Status, next.FinishedAt = ImportFailed, &now
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
