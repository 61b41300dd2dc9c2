package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// saveGrace is how long a command that records something (a run folder,
// the target's listener to close) has, once signalled, to write what it
// recorded and return; past it the process exits anyway. The engine stops
// in milliseconds: this is a bound, not a wait. Tests shorten it.
var saveGrace = 10 * time.Second

// savers are the commands given saveGrace after a signal; every other
// command has nothing to write and ends at once (its reads, of a pipe
// that never ends or a FIFO no one opens, need not return).
var savers = map[string]bool{"attack": true, "verify": true, "fleet": true, "serve": true}

// signalExit is the exit code of a command ended by sig, as shells report
// a process the signal ended: 128 + its number (SIGINT 130, SIGTERM 143).
func signalExit(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitInterrupted
}

// runSignalled runs args as main does: SIGINT or SIGTERM ends the
// command's context, the command has its grace (see savers) to return,
// and the exit code is then the signal's (130, 143) whatever the command
// returned. After the first signal the default action is back, so a
// second one ends the process outright.
func runSignalled(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Reset(os.Interrupt, syscall.SIGTERM)
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, stderr) }()
	select {
	case code := <-done:
		return code
	case sig := <-sigs:
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		cancel()
		grace := time.Duration(0)
		if len(args) > 0 && savers[args[0]] {
			grace = saveGrace
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			if grace > 0 {
				fmt.Fprintf(stderr, "ratecheck %s: still running %v after the signal (%v); exiting without waiting further\n", args[0], grace, sig)
			}
		}
		return signalExit(sig)
	}
}
