package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"wps/internal/evidence"
	"wps/internal/ledger"
)

// ledgerCommand implements "wps ledger verify" (an action's inclusion in
// a signed checkpoint, from files, with no server) and "wps ledger
// monitor" (a server's checkpoints over time, each consistent with the
// last): what an auditor runs (docs/ledger.md).
func ledgerCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "verify":
		return ledgerVerify(args, stdout, stderr)
	case "monitor":
		return ledgerMonitor(ctx, args, getenv, stdout, stderr)
	}
	return errors.New("usage: wps ledger verify --key FILE --checkpoint FILE --proof FILE --action FILE, wps ledger verify --bundle FILE, or wps ledger monitor --url URL --key FILE")
}

func ledgerVerify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ledger verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "wps ledger verify checks, with no server, that an action is in a signed checkpoint of its org's ledger.")
		fs.PrintDefaults()
	}
	key := fs.String("key", "", "the verifier key (GET /v1/ledger/key, or its \"key\")")
	checkpoint := fs.String("checkpoint", "", "the signed checkpoint you trust (GET /v1/ledger/checkpoint, or the note)")
	proof := fs.String("proof", "", "the proof for the checkpoint's tree size (GET /v1/actions/{id}/proof?treeSize=N)")
	action := fs.String("action", "", "the action (GET /v1/actions/{id})")
	bundle := fs.String("bundle", "", "a measurement's evidence bundle (GET /v1/measurements/{id}/evidence): checked alone")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bundle != "" {
		return verifyBundle(*bundle, stdout)
	}
	files := map[string]*string{"--key": key, "--checkpoint": checkpoint, "--proof": proof, "--action": action}
	data := map[string][]byte{}
	for _, name := range []string{"--key", "--checkpoint", "--proof", "--action"} {
		if *files[name] == "" {
			return fmt.Errorf("%s FILE is required", name)
		}
		b, err := os.ReadFile(*files[name])
		if err != nil {
			return err
		}
		data[name] = b
	}
	in, err := ledger.VerifyInclusion(data["--key"], data["--checkpoint"], data["--proof"], data["--action"])
	if err != nil {
		return fmt.Errorf("NOT VERIFIED: %w", err)
	}
	fmt.Fprintf(stdout, "verified: action %s is leaf %d of %s, in the signed checkpoint of size %d (root %s)\n",
		in.ActionID, in.LeafIndex, in.Origin, in.TreeSize, in.Root)
	return nil
}

// verifyBundle checks an evidence bundle offline (internal/evidence).
func verifyBundle(file string, stdout io.Writer) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	rep, err := evidence.Verify(b)
	if err != nil {
		return fmt.Errorf("NOT VERIFIED: %w", err)
	}
	fmt.Fprintf(stdout, "verified %d leaves of measurement %s in the signed checkpoint of %s of size %d\n", rep.Leaves, rep.MeasurementID, rep.Origin, rep.TreeSize)
	return nil
}

func ledgerMonitor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ledger monitor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "wps ledger monitor fetches an org's checkpoints over time and checks each contains the last (the API key comes from WPS_API_KEY).")
		fs.PrintDefaults()
	}
	base := fs.String("url", "", "the server, e.g. https://wps.example.com")
	key := fs.String("key", "", "the verifier key file (GET /v1/ledger/key)")
	state := fs.String("state", "", "a file that keeps the last checkpoint seen across runs")
	every := fs.Duration("every", time.Minute, "time between checks")
	once := fs.Bool("once", false, "check once and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" || *key == "" {
		return errors.New("--url and --key are required")
	}
	apiKey := getenv("WPS_API_KEY")
	if apiKey == "" {
		return errors.New("set WPS_API_KEY to an API key with ledger:read")
	}
	b, err := os.ReadFile(*key)
	if err != nil {
		return err
	}
	v, err := ledger.ParseKey(b)
	if err != nil {
		return err
	}
	m := &ledger.Monitor{URL: *base, APIKey: apiKey, Verifier: v, StateFile: *state, Out: stdout}
	if err := m.Load(); err != nil {
		return err
	}
	for {
		if _, err := m.Check(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ALARM: %w", err)
		}
		if *once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*every):
		}
	}
}
