// Package ledger runs the integration of the ledger's entries into each
// org's Merkle tree log (the rules live in wps.Service.IntegrateLedger;
// this is the loop), and checks a log from the outside, as an auditor
// does, with no access to the server: an action's inclusion from files
// (VerifyInclusion) and the consistency of the checkpoints a server
// publishes over time (Monitor).
package ledger

import (
	"context"
	"log/slog"
	"time"

	"wps/internal/wps"
)

// Config tunes an Integrator; zero values take defaults.
type Config struct {
	Poll time.Duration // between passes (default 100ms): an entry waits about half of it
	// Batch is the most entries of an org that one transaction integrates
	// (default 1000).
	Batch int
	// CheckpointEvery is how often a growing log gets a new signed
	// checkpoint (default 2s).
	CheckpointEvery time.Duration
	Logger          *slog.Logger
}

// Integrator is the background loop. Every replica runs one; each org's
// log has one integrator at a time (the store's lock), and when one dies
// mid-pass its transaction ends with it and the next pass of any replica
// takes over.
type Integrator struct {
	svc    *wps.Service
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns an Integrator over svc.
func New(svc *wps.Service, cfg Config) *Integrator {
	if cfg.Poll <= 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.CheckpointEvery <= 0 {
		cfg.CheckpointEvery = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Integrator{svc: svc, cfg: cfg}
}

// RunOnce integrates what every org has queued and signs the checkpoints
// that are due. It returns how many entries it integrated.
func (i *Integrator) RunOnce(ctx context.Context) (int, error) {
	orgs, err := i.svc.LedgerBacklog(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, org := range orgs {
		for {
			n, err := i.svc.IntegrateLedger(ctx, org, i.cfg.Batch, i.cfg.CheckpointEvery)
			total += n
			if err != nil {
				return total, err
			}
			if n < i.cfg.Batch {
				break
			}
		}
	}
	return total, nil
}

// Start runs the loop until Stop or ctx ends.
func (i *Integrator) Start(ctx context.Context) {
	ctx, i.cancel = context.WithCancel(ctx)
	i.done = make(chan struct{})
	go func() {
		defer close(i.done)
		for {
			if _, err := i.RunOnce(ctx); err != nil && ctx.Err() == nil {
				i.cfg.Logger.Error("ledger integration", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(i.cfg.Poll):
			}
		}
	}()
}

// Stop ends the loop.
func (i *Integrator) Stop() {
	if i.cancel != nil {
		i.cancel()
		<-i.done
	}
}
