package wps

import (
	"context"
	"errors"
	"hash/fnv"
	"maps"
)

// Nothing slow runs inside a write transaction (on SQLite, every org's
// writes wait for the one writer). A write that needs something slow, the
// answers of API calls, the bytes of contract documents or a workbook's
// recalculation, runs until it knows what it needs, then gives up
// (needCalls, needRenders, needFills: its transaction rolls back);
// writePrepared fetches, renders or recalculates with no transaction open,
// and the write runs again with the results, which it uses only for the
// same question (the same call and values, the same template body and
// inputs, the same workbook, links and inputs).

// attempt is what a write keeps across its tries: what was fetched and
// rendered for it, and what the documents rendered print that a try would
// otherwise choose afresh (the time, the ids of the action and of the
// documents), so that the next try prints the same.
type attempt struct {
	answers map[string]apiAnswer // API calls' answers, by APIRequest.key
	renders map[string][]byte    // documents' bytes, by renderKey
	now     Time                 // the time the documents print; zero before any was rendered
	ids     map[string]string    // the ids they print, by what each names (run.id)
	// credential is what the request signs with; signer who it proved the
	// caller to be, once checked (needSignature).
	credential SignatureInput
	signer     *verifiedSigner
	// fills are workbooks recalculated outside the transaction, by
	// fillKey; fillInside when the inputs kept changing (needFills).
	fills      map[string]SheetFill
	fillInside bool
}

// Tries of a write, at most, before it answers CodeConflict: the inputs of
// its calls or documents kept changing under concurrent writes.
const (
	maxCallRounds   = 3
	maxRenderRounds = 5
	maxFillRounds   = 8
)

// writePrepared runs fn in a write transaction, and again after fetching
// the API answers (*needCalls) or rendering the documents (*needRenders)
// it asked for. Errors: fn's, CodeInvalid naming the field of a document
// beyond the limits of DocumentConfig, CodeConflict when the inputs kept
// changing.
func (s *Service) writePrepared(ctx context.Context, fn func(tx Tx, at *attempt) error) error {
	return s.writeSigned(ctx, SignatureInput{}, fn)
}

// writeSigned is writePrepared for a write that may sign: when fn asks
// for a signature (*needSignature), the credential is checked with no
// transaction open (verifySignature) and fn runs again. Errors: as
// writePrepared, and verifySignature's.
func (s *Service) writeSigned(ctx context.Context, cred SignatureInput, fn func(tx Tx, at *attempt) error) error {
	at := &attempt{answers: map[string]apiAnswer{}, credential: cred}
	calls, renders, fills := 0, 0, 0
	var gate *gate // taken once, for the new measurement's process
	defer func() {
		if gate != nil {
			gate.leave()
		}
	}()
	for {
		err := s.store.Write(ctx, func(tx Tx) error { return fn(tx, at) })
		var nc *needCalls
		var nr *needRenders
		var ns *needSignature
		var nf *needFills
		switch {
		case errors.As(err, &nf):
			if fills++; fills > maxFillRounds {
				at.fillInside = true
			} else if err := s.fillOutside(ctx, nf, at); err != nil {
				return err
			}
		case errors.As(err, &ns):
			if at.signer != nil {
				return Internal(errors.New("a signed write asked for its signature twice"))
			}
			if at.signer, err = s.verifySignature(ctx, ns.p, at.credential); err != nil {
				return err
			}
		case errors.As(err, &nc):
			if calls++; calls > maxCallRounds {
				return Errorf(CodeConflict, "the values the API calls read kept changing; try again")
			}
			s.fetch(ctx, nc, at.answers)
		case errors.As(err, &nr):
			if renders++; renders > maxRenderRounds {
				return Errorf(CodeConflict, "the values the contract shows kept changing while it rendered; try again")
			}
			at.now, at.ids = nr.now, maps.Clone(nr.ids)
			if nr.process != "" && gate == nil {
				// The new measurement's name is its process's next number:
				// one such write of a process renders at a time, and the
				// next try names the measurement anew.
				if gate, err = s.naming.enter(ctx, nr.orgID+"/"+nr.process); err != nil {
					return err
				}
				continue
			}
			if at.renders, err = s.render(ctx, nr.docs, at.renders); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// gates is a set of stripes that writes take by key, one write per stripe
// at a time, waiting outside any transaction.
type gates [16]gate

type gate chan struct{}

func newGates() *gates {
	var g gates
	for i := range g {
		g[i] = make(gate, 1)
	}
	return &g
}

// enter waits for key's stripe (or ctx's end) and takes it.
func (g *gates) enter(ctx context.Context, key string) (*gate, error) {
	h := fnv.New32a()
	h.Write([]byte(key))
	stripe := &g[h.Sum32()%uint32(len(g))]
	select {
	case *stripe <- struct{}{}:
		return stripe, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// leave gives the stripe back.
func (s *gate) leave() { <-*s }
