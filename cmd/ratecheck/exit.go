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

// exitFor is the exit code of an engine's outcome: 0 done, 1 cancelled or
// interrupted, 3 an unreachable or failing target, 2 anything else (a
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
		return exitCheckFailed
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
