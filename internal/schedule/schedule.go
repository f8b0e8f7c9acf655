// Package schedule runs the time-driven work: step.overdue events for steps
// past their deadline, step.escalated for their escalations, and measurements for each occurrence of recurring
// processes. The rules live in wps.Service; this is the loop. Several
// replicas may run it on one database: each event and occurrence happens once.
package schedule

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"wps/internal/notify"
	"wps/internal/wps"
)

// Config tunes a Scheduler; zero values take defaults.
type Config struct {
	Poll   time.Duration // between runs (default 1s)
	Logger *slog.Logger
	// OnRun, when set, is told of every run of the loop (metrics): how long
	// it took and whether it failed.
	OnRun func(took time.Duration, err error)
}

// Scheduler is the background loop.
type Scheduler struct {
	svc    *wps.Service
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}
	swept  time.Time
}

// New returns a Scheduler over svc.
func New(svc *wps.Service, cfg Config) *Scheduler {
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{svc: svc, cfg: cfg}
}

// RunOnce emits due overdue and escalation events, creates due occurrences,
// writes the daily digests due (with mail on) and, at most
// once a minute, sweeps what has expired (sessions, idempotency records).
func (s *Scheduler) RunOnce(ctx context.Context) error {
	_, err := s.svc.NotifyOverdue(ctx)
	_, eerr := s.svc.NotifyEscalations(ctx)
	_, rerr := s.svc.RunRecurrences(ctx)
	_, derr := notify.SendDigests(ctx, s.svc)
	var serr error
	if now := s.svc.Now().Time; now.Sub(s.swept) >= time.Minute || now.Before(s.swept) {
		_, serr = s.svc.Sweep(ctx)
		s.swept = now
	}
	return errors.Join(err, eerr, rerr, derr, serr)
}

// Start runs the loop until Stop or ctx ends.
func (s *Scheduler) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		for {
			start := time.Now()
			err := s.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				s.cfg.Logger.Error("schedule run", "err", err)
			}
			if s.cfg.OnRun != nil && ctx.Err() == nil {
				s.cfg.OnRun(time.Since(start), err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.cfg.Poll):
			}
		}
	}()
}

// Stop ends the loop.
func (s *Scheduler) Stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
}
