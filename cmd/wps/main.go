// Command wps runs the Workflow Process Service.
//
//	wps [serve] [flags]          run the server (the default)
//	wps migrate [flags]          apply database migrations and exit
//	wps help                     list every command; wps COMMAND --help its flags
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) { // COMMAND --help printed its flags
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wps:", err)
		os.Exit(1)
	}
}
