// Command wps runs the Workflow Process Service.
//
//	wps [serve] [flags]          run the server (the default)
//	wps migrate [flags]          apply database migrations and exit
//	wps org create --name NAME   add an org with its own ADMIN and print its key
//	wps version                  print the version
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "wps:", err)
		os.Exit(1)
	}
}
