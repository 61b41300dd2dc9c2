package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
)

// Exit codes of every command.
const (
	exitOK          = 0 // verified, or the command did what it was asked
	exitCheckFailed = 1 // a check failed
	exitUsage       = 2 // bad usage, configuration or input
	exitUnreachable = 3 // the target could not be reached, or failed during the run
	// exitInconclusive: the run could not gather the evidence a selected
	// check needs (nothing refused, every request unanswered, the API not
	// there). A CI gate must never read it as a pass.
	exitInconclusive = 4
	// exitInterrupted and exitTerminated: SIGINT or SIGTERM ended the
	// command (128 + the signal's number, as shells report it), after a
	// run had archived everything it received.
	exitInterrupted = 130
	exitTerminated  = 143
)

// verdictExit is the exit code of a verdict: 0 pass, 1 fail, 4 inconclusive.
func verdictExit(verdict string) int {
	switch verdict {
	case analyze.Pass:
		return exitOK
	case analyze.Inconclusive:
		return exitInconclusive
	}
	return exitCheckFailed
}

// exitFor is the exit code of an engine's outcome: 0 done, 130 cancelled
// or interrupted (main turns it into the signal's code: 143 for SIGTERM), 3 an unreachable or failing target, 2 anything else (a
// setup or archive error, this machine's own limit).
func exitFor(err error) int {
	var unreachable *attack.UnreachableError
	var failing *attack.FailingError
	var local *attack.LocalLimitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &local):
		return exitUsage
	case errors.Is(err, attack.ErrCancelled), errors.Is(err, attack.ErrInterrupted):
		return exitInterrupted
	case errors.As(err, &unreachable), errors.As(err, &failing):
		return exitUnreachable
	}
	return exitUsage
}

// failed says what stopped a run of command name and returns its exit code.
func failed(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "ratecheck %s: %s\n", name, describe(err))
	return exitFor(err)
}
