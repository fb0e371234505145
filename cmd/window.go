package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
)

// windowFlags are the flags replay and reverse share: the window of
// changes they read (--since) and how --follow repeats it (SPEC §16).
type windowFlags struct {
	// Since is --since as given (RFC 3339).
	Since string
	// Follow repeats passes every Interval, each from the previous pass's
	// watermark less Skew, until SIGINT or SIGTERM.
	Follow         bool
	Interval, Skew time.Duration
}

// bind adds --since, --follow, --interval and --skew to fl; since and
// follow say what the command reads and what following does.
func (w *windowFlags) bind(fl *pflag.FlagSet, since, follow string) {
	fl.StringVar(&w.Since, "since", "", since+" at or after this RFC 3339 `TIME` (e.g. "+sinceExample+")")
	fl.BoolVar(&w.Follow, "follow", false, follow+": a pass every --interval, until SIGINT or SIGTERM")
	fl.DurationVar(&w.Interval, "interval", migrate.DefaultFollowInterval, "with --follow, the wait between passes")
	fl.DurationVar(&w.Skew, "skew", migrate.DefaultFollowSkew, "with --follow, how far before the newest change read each next pass starts (clock skew between servers)")
}

// windowCheck are the other flags replay and reverse check alike.
type windowCheck struct {
	database, stateDir string
	concurrency        int
	dryRun, prune      bool
	ru                 ruFlags
}

// parse returns --since once the flags both commands share are valid;
// otherwise a usage error that names the flag.
func (w windowFlags) parse(c windowCheck) (time.Time, error) {
	since, err := parseSince(w.Since)
	if err != nil {
		return time.Time{}, UsageError(err)
	}
	switch {
	case strings.TrimSpace(c.database) == "":
		return since, UsageError(errors.New("--database must not be empty"))
	case c.concurrency < 1:
		return since, UsageError(fmt.Errorf("--concurrency must be at least 1, got %d", c.concurrency))
	case strings.TrimSpace(c.stateDir) == "":
		return since, UsageError(errors.New("--state-dir must not be empty"))
	case w.Follow && (c.dryRun || c.prune):
		return since, UsageError(errors.New("--follow cannot be combined with --dry-run or --prune (run them once, before or after following)"))
	case w.Follow && (w.Interval <= 0 || w.Skew < 0):
		return since, UsageError(fmt.Errorf("--interval must be positive and --skew not negative, got %s and %s", w.Interval, w.Skew))
	}
	return since, c.ru.validate()
}

// parseSince parses --since.
func parseSince(s string) (time.Time, error) {
	if strings.TrimSpace(s) == "" {
		return time.Time{}, fmt.Errorf("--since is required: an RFC 3339 time such as %s", sinceExample)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q is not an RFC 3339 time such as %s", s, sinceExample)
	}
	return t.UTC(), nil
}

// ready prints where the command works, then fails when the database or
// containers are missing or the tables cannot be read.
func ready(ctx context.Context, o *output, where string, missing []azure.Resource, rows store.PageReader, prefix string, tables []string) error {
	o.status("%s", where)
	if len(missing) > 0 {
		return &notProvisionedError{Missing: missing}
	}
	return probeTables(ctx, rows, prefix, tables)
}

// startStatus prints what a replay or reverse reads (what: "rows" or
// "docs") and how.
func (w windowFlags) startStatus(o *output, what string, since time.Time, dryRun bool) {
	if w.Follow {
		o.status("following %s changed since %s: a pass every %s, each from the newest change read less %s; SIGINT or SIGTERM stops after the pass in progress",
			what, since.Format(time.RFC3339Nano), w.Interval, w.Skew)
		return
	}
	o.status("%s changed since %s", what, since.Format(time.RFC3339Nano))
	if dryRun {
		o.status("dry run: nothing will be written")
	}
}

// newPass is one pass of --follow with its conflicts by doc.
func newPass[C any](r migrate.PassResult, deadLetters int64, conflicts []C, doc func(C) string) pass[C] {
	p := pass[C]{result: r, deadLetters: deadLetters, conflicts: make(map[string]C, len(conflicts))}
	for _, c := range conflicts {
		p.conflicts[doc(c)] = c
	}
	return p
}

// followedSummary prints what the passes of --follow did — the totals
// (text: the line read), the conflicts (text: by writeConflict) and the
// request units — and returns the error that ends the command: exit 4
// when conflicts are left, else 3 when there were dead letters (in
// stateDir/deadLetters).
func followedSummary[C, T any](o *output, f followed[C], total T, ru ruReport, read string, writeConflict func(io.Writer, C), stateDir, deadLetters string) error {
	var err error
	if o.json() {
		err = o.lines.emit(lineSummary, struct {
			Passes    int      `json:"passes"`
			Totals    T        `json:"totals"`
			Conflicts []C      `json:"conflicts"`
			RU        ruReport `json:"ru"`
		}{f.passes, total, f.listed(), ru})
	} else {
		fmt.Fprintf(o.out, "followed for %d pass(es): %s, %d conflict(s), %d dead letter(s)\n", f.passes, read, len(f.conflicts), f.deadLetters)
		for i, c := range f.listed() {
			if i == maxConflictsShown {
				fmt.Fprintf(o.out, "  … and %d more\n", len(f.conflicts)-i)
				break
			}
			writeConflict(o.out, c)
		}
		ru.writeText(o.out)
	}
	if err != nil {
		return err
	}
	return f.exit(filepath.Join(stateDir, deadLetters))
}

// windowExit is the error a replay or reverse (not --follow) ends with,
// once its summary is printed: err as it is (interrupted: a sentence that
// says to run the same command again, rerun), else exit 4 for conflicts
// left (conflicts: what was not written and what --force does), else
// exit 3 for dead letters of what ("row(s)", "doc(s)") in file.
func windowExit(err error, interrupted bool, rerun string, dryRun bool, conflicts int64, conflictsLeft string, deadLetters int64, what, file string) error {
	dry := ""
	if dryRun {
		dry = "dry run: "
	}
	switch {
	case err != nil && interrupted:
		return fmt.Errorf("%s (%w)", rerun, err)
	case err != nil:
		return err
	case conflicts > 0:
		return ConflictError(fmt.Errorf("%s%d conflict(s) left unresolved: %s", dry, conflicts, conflictsLeft))
	case deadLetters > 0 && dryRun:
		return PartialError(fmt.Errorf("dry run: %d %s would be dead-lettered", deadLetters, what))
	case deadLetters > 0:
		return PartialError(fmt.Errorf("%d %s dead-lettered; see %s", deadLetters, what, file))
	}
	return nil
}
