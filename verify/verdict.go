package verify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/words"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Verdict is what verify concludes: whether what it judged is in sync,
// whether that was every row (a full check) or part of them (a partial
// check), and what was judged. Run computes it once; the text output
// (VerdictLine), the JSON report, the HTML page and the command's exit
// render it. Only a full check's OK is the signal to cut over (SPEC §12).
type Verdict struct {
	// OK is true when nothing judged failed: no row not migrated, no doc
	// missing, different or orphaned (Report.Failures is 0).
	OK bool `json:"ok"`
	// Partial is true when Scope leaves rows unjudged (--sample,
	// --tables, --since): OK then speaks for the rows judged alone.
	Partial bool `json:"partial"`
	// Scope is what was judged.
	Scope Scope `json:"scope"`
}

// Scope is what a verify judged: the selection (a sample, some tables,
// the changes since a time) and how many rows it held.
type Scope struct {
	// Sample is the fraction of rows judged (--sample): 1 is every row.
	Sample float64 `json:"sample"`
	// Tables are the tables judged when --tables left some out, in read
	// order; nil when every table was judged.
	Tables []string `json:"tables,omitempty"`
	// Since, when not zero, limits the check to what changed since then
	// (--since).
	Since time.Time `json:"since,omitzero"`
	// RowsJudged is how many source rows were judged: those of the
	// selected tables (and changes) that fall in the sample.
	RowsJudged int `json:"rowsJudged"`
	// RowsRead is how many rows verify read from the selected tables (and
	// changes): the rows the sample is drawn from. RowsJudged equals it
	// without --sample.
	RowsRead int `json:"rowsRead"`
	// DocsJudged is how many docs changed since Since were judged (the
	// change feed); 0 without --since.
	DocsJudged int `json:"docsJudged,omitempty"`
	// Base, when not zero, is the start of the clean full verify that a
	// --since at or before it builds on: together they judged every row
	// and doc, and the check is not partial.
	Base time.Time `json:"base,omitzero"`
}

// newScope is the scope of a Run with opts (its tables and sample
// already defaulted) that read rowsRead rows and judged rowsJudged of
// them. A --tables naming every table is not a selection.
func newScope(opts Options, rowsJudged, rowsRead int) Scope {
	s := Scope{Sample: opts.Sample, RowsJudged: rowsJudged, RowsRead: rowsRead, Since: opts.Since}
	if !slices.Equal(opts.Tables, transform.Tables()) {
		s.Tables = slices.Clone(opts.Tables)
	}
	return s
}

// partial reports whether s leaves rows unjudged.
func (s Scope) partial() bool {
	return s.Sample < 1 || s.Tables != nil || !s.Since.IsZero() && s.Base.IsZero()
}

// String says what was judged, for a partial check's verdict: "a 5 %
// sample of tables Config: 52 of 1,040 rows judged", "tables Config: no
// rows to judge", "changes since 2026-11-20T14:00:00Z: 12 of 12 rows
// and 15 docs judged". For a full check it is "every row: N of N rows
// judged"; for a --since that builds on a full verify, "the full verify
// of 2026-11-20T14:00:00Z plus every change since 2026-11-20T14:00:00Z:
// 12 of 12 rows and 15 docs judged".
func (s Scope) String() string {
	return s.what() + ": " + s.judged()
}

// what names the selection.
func (s Scope) what() string {
	var w string
	tables := "tables " + strings.Join(s.Tables, ", ")
	switch {
	case !s.Base.IsZero():
		w = "the full verify of " + s.Base.UTC().Format(time.RFC3339) + " plus every change since " + s.Since.UTC().Format(time.RFC3339)
	case !s.Since.IsZero() && s.Tables != nil:
		w = "changes since " + s.Since.UTC().Format(time.RFC3339) + " in " + tables
	case !s.Since.IsZero():
		w = "changes since " + s.Since.UTC().Format(time.RFC3339)
	case s.Tables != nil:
		w = tables
	}
	switch {
	case s.Sample < 1 && w != "":
		return "a " + words.Percent(s.Sample) + " sample of " + w
	case s.Sample < 1:
		return "a " + words.Percent(s.Sample) + " sample"
	case w == "":
		return "every row"
	}
	return w
}

// judged counts the rows judged; a selection that holds no rows says so
// plainly.
func (s Scope) judged() string {
	docs := ""
	if !s.Since.IsZero() {
		docs = " and " + words.Thousands(int64(s.DocsJudged)) + " docs"
	}
	if s.RowsRead == 0 && s.DocsJudged == 0 {
		if !s.Since.IsZero() {
			return "no changed row or doc to judge"
		}
		return "no rows to judge"
	}
	return fmt.Sprintf("%s of %s rows%s judged", words.Thousands(int64(s.RowsJudged)), words.Thousands(int64(s.RowsRead)), docs)
}

// VerdictLine is the last line of the text output: "verify: OK" for a
// full check that found nothing wrong, "verify: OK for a 1 % sample: 209
// of 20,000 rows judged" for a partial one, else the counts of what
// failed, and for a partial check in what.
func (r *Report) VerdictLine() string {
	var s string
	switch {
	case r.OK && !r.Scope.Base.IsZero():
		return "verify: OK — in sync: " + r.Scope.String() + r.InFlightSuffix()
	case r.OK:
		s = "verify: OK"
	case r.NotMigrated > 0:
		s = fmt.Sprintf("verify: %d row(s) not migrated; %d missing, %d different, %d orphan doc(s)",
			r.NotMigrated, r.Totals.Missing, r.Totals.Different, r.Totals.Orphans)
	default:
		s = fmt.Sprintf("verify: %d missing, %d different, %d orphan doc(s)", r.Totals.Missing, r.Totals.Different, r.Totals.Orphans)
	}
	return s + r.PartialSuffix() + r.InFlightSuffix()
}

// InFlightSuffix is what a verdict adds when changes were in flight
// while verify ran: "; 4 doc(s) changed while verify ran: `bifrost-migrate
// verify --since 2026-11-20T14:00:00Z` judges them"; "" when none were.
func (r *Report) InFlightSuffix() string {
	if r.Totals.ChangedWhileRunning == 0 {
		return ""
	}
	return fmt.Sprintf("; %d doc(s) changed while verify ran: `bifrost-migrate verify --since %s` judges them", r.Totals.ChangedWhileRunning,
		r.startedAt.UTC().Truncate(time.Second).Format(time.RFC3339))
}

// PartialSuffix is what a partial check's verdict, or a --since that
// builds on a full verify, adds to a sentence about its outcome: " for a
// 5 % sample: 52 of 1,040 rows judged" when OK, " in a 5 % sample: …"
// (or " in the full verify of … plus every change since …: …") when not;
// "" for a full check.
func (r *Report) PartialSuffix() string {
	switch {
	case !r.Partial && r.Scope.Base.IsZero():
		return ""
	case r.OK:
		return " for " + r.Scope.String()
	}
	return " in " + r.Scope.String()
}
