// Package imports runs records import jobs (the rules live in
// wps.Service.RunImportJob; this is the loop). Every replica with
// WPS_BACKGROUND runs one; each job has one worker at a time (its lease), and
// a job whose worker died is taken over once the lease runs out. Orgs take
// turns (wps.Service.ClaimImportJob): an org runs ImportConfig.PerOrg jobs
// at once, so the other loops are free for the jobs of other orgs.
package imports

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"wps/internal/wps"
)

// Config tunes a Worker; zero values take defaults.
type Config struct {
	Poll time.Duration // between looks for a job when there was none (default 500ms)
	// Jobs is how many jobs run at once (default 2): their writes take
	// turns (the service lets one import write at a time, each job's
	// chunks in turn), and checking rows takes a core. With one org's jobs
	// limited to ImportConfig.PerOrg (1), the second loop serves another
	// org's job while a long one runs.
	Jobs   int
	Logger *slog.Logger
}

// Worker claims import jobs and runs them.
type Worker struct {
	svc    *wps.Service
	blobs  wps.BlobStore
	cfg    Config
	owner  string
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Worker over svc; blobs holds the jobs' uploaded rows.
func New(svc *wps.Service, blobs wps.BlobStore, cfg Config) *Worker {
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.Jobs <= 0 {
		cfg.Jobs = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Worker{svc: svc, blobs: blobs, cfg: cfg, owner: wps.NewID()}
}

// RunOnce claims one job and runs it to its end (or until the job is lost
// to another worker, or ctx ends). It reports whether there was a job.
func (w *Worker) RunOnce(ctx context.Context) (bool, error) {
	j, err := w.svc.ClaimImportJob(ctx, w.owner)
	if err != nil || j == nil {
		return false, err
	}
	err = w.svc.RunImportJob(ctx, w.blobs, j)
	if wps.IsLeaseLost(err) {
		w.cfg.Logger.Info("import job taken over by another worker", "job", j.ID)
		err = nil
	}
	return true, err
}

// Start runs Config.Jobs loops until Stop or ctx ends.
func (w *Worker) Start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	for range w.cfg.Jobs {
		w.wg.Go(func() {
			for {
				ran, err := w.RunOnce(ctx)
				if err != nil && ctx.Err() == nil {
					w.cfg.Logger.Error("import job", "err", err)
				}
				if ran && err == nil {
					continue
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(w.cfg.Poll):
				}
			}
		})
	}
}

// Stop ends the loops; a job in the middle is left to be resumed.
func (w *Worker) Stop() {
	if w.cancel != nil {
		w.cancel()
		w.wg.Wait()
	}
}
