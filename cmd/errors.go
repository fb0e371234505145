package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
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
			{ExitConflicts, "replay or reverse conflicts left unresolved"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM/SIGHUP); state saved, rerun to resume"},
		}, true
	case "bifrost-migrate init":
		return []exitStatus{ok, fatal,
			{ExitUsage, "usage error, or invalid container definitions (nothing was sent)"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM/SIGHUP); run init again"},
		}, true
	case "bifrost-migrate run":
		return []exitStatus{ok,
			{ExitFatal, "fatal error (the state directory in use by another process included), or --max-errors reached; rerun to resume"},
			{ExitUsage, "usage error, or options that differ from the saved run's"},
			{ExitPartial, "partial: rows were dead-lettered (with --dry-run: would be)"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM/SIGHUP); state saved, rerun to resume"},
		}, true
	case "bifrost-migrate verify":
		return []exitStatus{{ExitOK, "success: nothing judged failed (with --sample or --tables, only those rows were judged)"}, fatal, usage,
			{ExitPartial, "partial: verify found mismatches"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM/SIGHUP); run verify again"},
		}, true
	case "bifrost-migrate replay":
		return []exitStatus{ok,
			{ExitFatal, "fatal error (the state directory in use by another process included)"},
			usage,
			{ExitPartial, "partial: rows were dead-lettered (with --dry-run: would be)"},
			{ExitConflicts, "replay conflicts left unresolved (with --dry-run: would be)"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM/SIGHUP); run the same replay again"},
		}, true
	case "bifrost-migrate reverse":
		return []exitStatus{ok,
			{ExitFatal, "fatal error (the state directory in use by another process included)"},
			usage,
			{ExitPartial, "partial: docs were dead-lettered (with --dry-run: would be)"},
			{ExitConflicts, "reverse conflicts left unresolved (with --dry-run: would be)"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM/SIGHUP); run the same reverse again (docs written back are skipped)"},
		}, true
	case "bifrost-migrate status":
		return []exitStatus{{ExitOK, "success: the state directory was read (whatever it says)"},
			{ExitFatal, "a file of the state directory cannot be read, or with --check an endpoint failed its check"},
			usage,
		}, true
	case "bifrost-migrate fixtures", "bifrost-migrate version", "bifrost-migrate completion",
		"bifrost-migrate completion bash", "bifrost-migrate completion zsh",
		"bifrost-migrate completion fish", "bifrost-migrate completion powershell":
		return []exitStatus{ok, usage}, true
	case "bifrost-migrate man":
		return []exitStatus{ok, {ExitFatal, "a page could not be written"}, usage}, true
	case "bifrost-migrate fixtures load":
		return []exitStatus{ok, fatal,
			{ExitUsage, "usage error, or a storage account other than the emulator's without --account"},
			{ExitInterrupted, "interrupted (SIGINT/SIGTERM/SIGHUP); load again (loading twice changes nothing)"},
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
// one of the helpers below: UsageError, InputError, PartialError,
// ConflictError); exitCode is the only place that turns errors into exit
// codes, and errorMessage the only one that turns them into the
// operator's sentence, scrubbed of secrets.
type ExitError struct {
	Code int
	Err  error
	// input marks exit 2 for bad input in a file (InputError): the flags
	// were right, so the error comes without the hint about --help.
	input bool
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

// InputError marks err as bad input in a file the user gave (exit 2, like
// a usage error): it is printed without the hint about --help, which is
// about flags.
func InputError(err error) error { return &ExitError{Code: ExitUsage, Err: err, input: true} }

// isInputError reports whether err is, or wraps, an InputError.
func isInputError(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.input
}

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
	var busy *migrate.StateDirBusyError
	if errors.As(err, &busy) {
		// Refused before it started, whatever signal came meanwhile:
		// there is nothing to resume.
		return ExitFatal
	}
	if interrupted {
		// A signal cancelled the root context: whatever error that caused
		// (context.Canceled, or a wrapped I/O error), the run stopped
		// because it was asked to, with its state saved.
		return ExitInterrupted
	}
	return ExitFatal
}

// errorMessage is the sentence that reports err, which ends the command
// with exit status code, scrubbed of every secret of the settings: for an
// error from a service, the sentence explain gives, which says what to
// do; else the error's own text. raw is the error's own text, scrubbed
// too, which --verbose prints before the sentence when they differ.
func errorMessage(f *Factory, err error, code int) (msg, raw string) {
	raw = f.Redact(err.Error())
	var cred *azure.CredentialError
	if errors.As(err, &cred) {
		// The sentence names the services and what to do; the raw text
		// is what each credential of the chain answered.
		raw = f.Redact(azure.ScrubError(cred.Err).Error())
	}
	switch {
	case code == ExitInterrupted:
		return f.Redact(interruptSentence(err)), raw
	case explain(err) != "":
		return f.Redact(explain(err)), raw
	}
	return raw, raw
}

// errorText is what Execute prints on stderr for err, which ends the
// command with exit status code: lines scrubbed of every secret of the
// settings, the last one the error's sentence (errorMessage); with
// --verbose the error's own text, the service's answer included, comes
// on the line before it. A usage error ends with the hint about --help,
// unless it is bad input in a file (InputError).
func errorText(f *Factory, err error, code int) string {
	var b strings.Builder
	msg, raw := errorMessage(f, err, code)
	if f.Global.Verbose && raw != msg && code != ExitInterrupted {
		fmt.Fprintf(&b, "bifrost-migrate: (--verbose) %s\n", strings.TrimRight(raw, "\n"))
	}
	fmt.Fprintf(&b, "bifrost-migrate: %s\n", msg)
	if code == ExitUsage && !isInputError(err) {
		fmt.Fprintf(&b, "Run '%s --help' for usage.\n", firstNonEmpty(f.command, "bifrost-migrate"))
	}
	return b.String()
}

// interruptSentence is the message of a command SIGINT, SIGTERM or
// SIGHUP stopped (exit 130), by its error's type: "interrupted: " and
// the command's own message when it made one (interrupted: what was
// saved, what to run), what to do when the error is the cancellation
// itself, else the error that came meanwhile. A request cut short is
// never named: "context canceled" and the request's Go form tell an
// operator nothing.
func interruptSentence(err error) string {
	var ie *interruptError
	switch {
	case errors.As(err, &ie):
		return "interrupted: " + err.Error()
	case errors.Is(err, context.Canceled):
		return "interrupted: stopped before it finished; run the same command again"
	}
	return "interrupted: " + err.Error()
}

// interrupted is the error a command stopped by SIGINT, SIGTERM or SIGHUP
// ends with: its sentence msg (what was saved, what to run), wrapping
// err, the error the work stopped with.
func interrupted(msg string, err error) error { return &interruptError{msg, err} }

// interruptError is an interrupted command's own message and the error
// its work stopped with.
type interruptError struct {
	msg string
	err error
}

// Error is the message, and the error the work stopped with unless that
// is the cancellation itself (a request cut short).
func (e *interruptError) Error() string {
	if e.err == nil || errors.Is(e.err, context.Canceled) {
		return e.msg
	}
	return e.msg + " (" + e.err.Error() + ")"
}

func (e *interruptError) Unwrap() error { return e.err }

// notProvisionedError says that resources `bifrost-migrate init` creates
// (the database, its containers, the blob container) do not exist, so the
// command cannot start. Missing is never empty.
type notProvisionedError struct {
	Missing []azure.Resource
}

func (e *notProvisionedError) Error() string {
	// Group the names by service and endpoint, in the order given.
	type group struct {
		where string
		names []string
	}
	var groups []*group
	for _, r := range e.Missing {
		where := endpointPhrase(r)
		var g *group
		for _, h := range groups {
			if h.where == where {
				g = h
			}
		}
		if g == nil {
			g = &group{where: where}
			groups = append(groups, g)
		}
		g.names = append(g.names, r.String())
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		verb := "does"
		if len(g.names) > 1 {
			verb = "do"
		}
		parts[i] = fmt.Sprintf("%s %s not exist in %s", joinAnd(g.names), verb, g.where)
	}
	return strings.Join(parts, ", and ") + "; run `bifrost-migrate init` first"
}

// endpointPhrase is where r lives: "Cosmos DB https://…" for Cosmos DB,
// the bare endpoint for Storage (its URL already says table or blob).
func endpointPhrase(r azure.Resource) string {
	if r.Service == azure.ServiceCosmos {
		return "Cosmos DB " + r.Endpoint
	}
	return r.Endpoint
}

// connectionSetting names the setting that chooses a service's account.
func connectionSetting(s azure.Service) string {
	switch s {
	case azure.ServiceTables:
		return "the tables connection"
	case azure.ServiceBlobs:
		return "the blob connection (by default the tables connection)"
	}
	return "the Cosmos DB connection"
}

// accessAdvice says which role or key a service wants when it refused
// access (401/403).
func accessAdvice(s azure.Service) string {
	switch s {
	case azure.ServiceTables:
		return `give the identity the role "Storage Table Data Reader" ("Storage Table Data Contributor" to write), or use a valid account key or SAS in the tables connection`
	case azure.ServiceBlobs:
		return `give the identity the role "Storage Blob Data Contributor", or use a valid account key or SAS in the blob connection (by default the tables connection)`
	}
	return `give the identity a Cosmos DB data-plane role such as "Cosmos DB Built-in Data Contributor", or use the account's current key in the Cosmos DB connection`
}

// answerText is the service's answer f carries, with its error code
// from err when it says one: "404 Not Found" or "404 Not Found,
// TableNotFound".
func answerText(f *store.Fault, err error) string {
	s := fmt.Sprintf("%d %s", f.Status, http.StatusText(f.Status))
	if code := azure.ErrorCode(err); code != "" {
		s += ", " + code
	}
	return s
}

// explain returns the sentence an operator reads for err when err comes
// from a service the tool recognises, or says that the state directory is
// in use by another process (migrate.StateDirBusyError, exit 1): what is
// wrong, where, and what to do. It returns "" for any other error, whose
// own text is then printed. The sentence is chosen by the error's type
// and its fault (azure.FaultOf: its kind, whether an answer came, the
// resource missing), never by its text.
// The sentences never hold the service's raw answer (Execute adds it
// under --verbose) nor a secret.
func explain(err error) string {
	var busy *migrate.StateDirBusyError
	if errors.As(err, &busy) {
		return busy.Error() + "; wait for it to finish or stop it first"
	}
	var np *notProvisionedError
	if errors.As(err, &np) {
		return np.Error()
	}
	var eps endpointErrors
	if errors.As(err, &eps) {
		return eps.Error()
	}
	if errors.Is(err, context.Canceled) {
		return ""
	}
	var res *azure.ResourceError
	hasRes := errors.As(err, &res)
	var cred *azure.CredentialError
	if errors.As(err, &cred) {
		where := "the accounts reached with an endpoint"
		if hasRes {
			where = string(res.Service) + " at " + hostPort(res.Endpoint)
		}
		return noTokenSentence([]string{where}, cred)
	}
	if errors.Is(err, azure.ErrNoChangeFeed) || azure.Unreadable(err) {
		return unreadable(err, res)
	}
	f := azure.FaultOf(err)
	if errors.Is(err, store.ErrRetriesExhausted) || hasRes && res.Service == azure.ServiceCosmos && f.Kind == store.Throttled {
		return exhausted(err, f, res)
	}
	switch {
	case !hasRes && f.Status > 0:
		return fmt.Sprintf("the service answered %s (run with --verbose for its whole answer)", answerText(f, err))
	case !hasRes:
		return ""
	}
	r := res.Resource
	switch {
	case f.Status == 0:
		if words := azure.TransportOf(err).Words; words != "" {
			return fmt.Sprintf("cannot reach %s at %s (%s): check %s and that this machine can reach the endpoint",
				r.Service, r.Endpoint, words, connectionSetting(r.Service))
		}
		return ""
	case res.Missing() && r.Kind == azure.KindTable:
		return fmt.Sprintf("source table %s does not exist in %s; check the tables connection, or choose tables with --tables", r.Name, r.Endpoint)
	case res.Missing():
		return (&notProvisionedError{Missing: []azure.Resource{r}}).Error()
	case f.Kind == store.Auth:
		return fmt.Sprintf("%s %s refused access to %s (%s): %s", r.Service, r.Endpoint, r, answerText(f, err), accessAdvice(r.Service))
	}
	return fmt.Sprintf("%s %s answered %s for %s (run with --verbose for its whole answer)", r.Service, r.Endpoint, answerText(f, err), r)
}

// exhausted is the sentence for err, a request retried until
// --retry-timeout (or a Cosmos DB request still throttled) whose last
// attempt failed with f; res, when not nil, is the resource it was about.
func exhausted(err error, f *store.Fault, res *azure.ResourceError) string {
	where, what, service := "the service", "", azure.Service("")
	if res != nil {
		where, what, service = string(res.Service)+" "+res.Endpoint, " for "+res.Resource.String(), res.Service
	}
	switch {
	case f.Kind == store.Throttled && service == azure.ServiceCosmos:
		return where + " kept answering 429 Too Many Requests" + what + " after every retry: the account's request units are exhausted; " +
			"cap what this command uses with --max-ru, or let it wait longer with --retry-timeout"
	case f.Kind == store.Throttled:
		return where + " kept answering 429 Too Many Requests" + what + " after every retry: the account is throttling; " +
			"let the command wait longer with --retry-timeout, or run it when the account is less busy"
	}
	last := "no answer"
	if f.Status > 0 {
		last = answerText(f, err)
	} else if words := azure.TransportOf(err).Words; words != "" {
		last = words
	}
	return fmt.Sprintf("%s kept failing%s after every retry (last: %s): the service is unavailable or overloaded; try again later, or let the command wait longer with --retry-timeout", where, what, last)
}

// noTokenSentence is the one line that says Microsoft Entra ID sign-in
// gave no token (cred) for the services at where ("Cosmos DB at
// host:443"): what was tried and what to do. The Azure SDK's account of
// each credential's answer is left to --verbose (errorMessage).
func noTokenSentence(where []string, cred *azure.CredentialError) string {
	if cred.Setup || len(cred.Tried) == 0 {
		return fmt.Sprintf("cannot sign in to Microsoft Entra ID for %s: the Azure SDK refused its settings "+
			"(AZURE_TOKEN_CREDENTIALS must be dev, prod or one credential's name; run with --verbose for its message)", joinAnd(where))
	}
	const verbose = " (run with --verbose for each credential's answer)"
	if cred.Failed != "" {
		return fmt.Sprintf("no Microsoft Entra ID token for %s: of %s, tried in that order, one was found and %s; "+
			"check its settings (a managed identity assigned to where this runs, AZURE_CLIENT_ID naming a user-assigned one; "+
			"or AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET), sign in with `az login`, "+
			"or use a connection string with a key"+verbose, joinAnd(where), joinAnd(cred.Tried), cred.Failed)
	}
	return fmt.Sprintf("no Microsoft Entra ID token for %s: tried %s, and none is set up here; "+
		"sign in with `az login`, run where a managed identity is assigned (AZURE_CLIENT_ID names a user-assigned one), "+
		"or set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET; or use a connection string with a key"+verbose,
		joinAnd(where), joinAnd(cred.Tried))
}

// unreadable is the sentence for an answer the tool cannot use: an
// account without a change feed (azure.ErrNoChangeFeed), or any answer
// in a form that is not the service's (azure.Unreadable); res, when not
// nil, is the resource it was about.
func unreadable(err error, res *azure.ResourceError) string {
	where, about, service := "a service", "", azure.ServiceCosmos
	if res != nil {
		where, about, service = string(res.Service)+" "+res.Endpoint, " about "+res.Resource.String(), res.Service
	}
	if errors.Is(err, azure.ErrNoChangeFeed) {
		return where + " does not serve the change feed as Azure Cosmos DB does (the local stand-in has none), and reverse and verify --since read it: point " +
			connectionSetting(azure.ServiceCosmos) + " at Azure Cosmos DB or its emulator"
	}
	return fmt.Sprintf("%s answered%s in a form that is not the service's: check that %s points at the service (run with --verbose for the details)",
		where, about, connectionSetting(service))
}

// transient reports whether err is a failure that may well not happen
// again: its fault is retryable (store.FaultKind.Retryable: throttled,
// transient, unreachable), whether the adapter's retries outlasted
// --retry-timeout or not. Running the command again may then finish the
// work; after any other error (a missing table or container, access
// refused, a doc refused, bad input, a cancelled context) it cannot until
// the cause is fixed.
func transient(err error) bool { return store.KindOf(err).Retryable() }

// ending is how a command that writes a summary ended, for the summary's
// last line.
type ending int

const (
	endedDone        ending = iota // it finished (maybe with dead letters or conflicts)
	endedInterrupted               // SIGINT/SIGTERM/SIGHUP
	endedTransient                 // a failure that running again may not meet
	endedFailed                    // an error that must be fixed first
)

// endingOf classifies the error a command's work returned; interrupted
// tells whether a signal cancelled the root context.
func endingOf(err error, interrupted bool) ending {
	switch {
	case err == nil:
		return endedDone
	case interrupted:
		return endedInterrupted
	case transient(err):
		return endedTransient
	}
	return endedFailed
}
