package cmd

import (
	"errors"
	"fmt"
)

// Exit codes (SPEC §1). Every command's --help lists them.
const (
	ExitOK          = 0
	ExitFatal       = 1
	ExitUsage       = 2
	ExitPartial     = 3
	ExitConflicts   = 4
	ExitInterrupted = 130
)

// exitCodesHelp is appended to every command's long help.
const exitCodesHelp = `
Exit status:
  0    success
  1    fatal error
  2    usage error
  3    partial: rows were dead-lettered, or verify found mismatches
  4    replay conflicts left unresolved
  130  interrupted (SIGINT/SIGTERM); state saved, rerun to resume`

// ExitError carries the exit code a command wants. Commands return it (or
// one of the helpers below); Main is the only place that turns errors into
// exit codes.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError marks err as a usage error (exit 2).
func UsageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// PartialError reports a finished run with dead letters or mismatches (exit 3).
func PartialError(err error) error { return &ExitError{Code: ExitPartial, Err: err} }

// ConflictError reports unresolved replay conflicts (exit 4).
func ConflictError(err error) error { return &ExitError{Code: ExitConflicts, Err: err} }

// exitCode maps an error returned by a command to the process exit status.
// interrupted tells whether a signal cancelled the root context.
func exitCode(err error, interrupted bool) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if interrupted {
		// A signal cancelled the root context: whatever error that caused
		// (context.Canceled, or a wrapped I/O error), the run stopped
		// because it was asked to, with its state saved.
		return ExitInterrupted
	}
	return ExitFatal
}
