package cmd

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes (SPEC §1). Every command's --help lists those it can return
// (exitStatuses).
const (
	ExitOK          = 0
	ExitFatal       = 1
	ExitUsage       = 2
	ExitPartial     = 3
	ExitConflicts   = 4
	ExitInterrupted = 130
)

// exitStatus is one line of an exit-status table: a code, and what it
// means for the command that returns it.
type exitStatus struct {
	code    int
	meaning string
}

// exitStatuses returns the exit codes the command at path (cobra's
// CommandPath, e.g. "bifrost-migrate fixtures load") can return, with
// what each means there, in the order --help lists them; false for a
// command it does not know. The root lists every code. The table lives
// here, next to the codes and exitCode, so that one place says which
// command returns what; TestHelpListsEachCommandsExitCodes checks that
// every command is in it.
func exitStatuses(path string) ([]exitStatus, bool) {
	ok := exitStatus{ExitOK, "success"}
	fatal := exitStatus{ExitFatal, "fatal error"}
	usage := exitStatus{ExitUsage, "usage error"}
	switch path {
	case "bifrost-migrate":
		return []exitStatus{ok, fatal, usage,
			{ExitPartial, "partial: rows were dead-lettered, or verify found mismatches"},
			{ExitConflicts, "replay conflicts left unresolved"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM); state saved, rerun to resume"},
		}, true
	case "bifrost-migrate init":
		return []exitStatus{ok, fatal,
			{ExitUsage, "usage error (invalid definitions: nothing was sent)"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM); run init again"},
		}, true
	case "bifrost-migrate run":
		return []exitStatus{ok,
			{ExitFatal, "fatal error, or --max-errors reached; rerun to resume"},
			{ExitUsage, "usage error, or options that differ from the saved run's"},
			{ExitPartial, "partial: rows were dead-lettered (with --dry-run: would be)"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM); state saved, rerun to resume"},
		}, true
	case "bifrost-migrate verify":
		return []exitStatus{ok, fatal, usage,
			{ExitPartial, "partial: verify found mismatches"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM); run verify again"},
		}, true
	case "bifrost-migrate replay":
		return []exitStatus{ok, fatal, usage,
			{ExitPartial, "partial: rows were dead-lettered (with --dry-run: would be)"},
			{ExitConflicts, "replay conflicts left unresolved (with --dry-run: would be)"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM); run the same replay again"},
		}, true
	case "bifrost-migrate fixtures":
		return []exitStatus{ok, usage}, true
	case "bifrost-migrate fixtures load":
		return []exitStatus{ok, fatal,
			{ExitUsage, "usage error, or a storage account other than the emulator's without --account"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM); load again (loading twice changes nothing)"},
		}, true
	}
	return nil, false
}

// exitStatusHelp renders an exit-status table for a command's long help.
func exitStatusHelp(ss []exitStatus) string {
	var b strings.Builder
	b.WriteString("\nExit status:")
	for _, s := range ss {
		fmt.Fprintf(&b, "\n  %-4d %s", s.code, s.meaning)
	}
	return b.String()
}

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
