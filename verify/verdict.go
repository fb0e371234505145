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
}

// newScope is the scope of a Run with opts (its tables and sample
// already defaulted) that read rowsRead rows and judged rowsJudged of
// them. A --tables naming every table is not a selection.
func newScope(opts Options, rowsJudged, rowsRead int) Scope {
	s := Scope{Sample: opts.Sample, RowsJudged: rowsJudged, RowsRead: rowsRead}
	if !slices.Equal(opts.Tables, transform.Tables()) {
		s.Tables = slices.Clone(opts.Tables)
	}
	return s
}

// partial reports whether s leaves rows unjudged.
func (s Scope) partial() bool {
	return s.Sample < 1 || s.Tables != nil || !s.Since.IsZero()
}

// String says what was judged, for a partial check's verdict: "a 5 %
// sample of tables Config: 52 of 1,040 rows judged", "tables Config: no
// rows to judge", "changes since 2026-11-20T14:00:00Z: 12 of 12 rows
// judged". For a full check it is "every row: N of N rows judged".
func (s Scope) String() string {
	return s.what() + ": " + s.judged()
}

// what names the selection.
func (s Scope) what() string {
	var w string
	tables := "tables " + strings.Join(s.Tables, ", ")
	switch {
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
	if s.RowsRead == 0 {
		return "no rows to judge"
	}
	return fmt.Sprintf("%s of %s rows judged", words.Thousands(int64(s.RowsJudged)), words.Thousands(int64(s.RowsRead)))
}

// VerdictLine is the last line of the text output: "verify: OK" for a
// full check that found nothing wrong, "verify: OK for a 1 % sample: 209
// of 20,000 rows judged" for a partial one, else the counts of what
// failed, and for a partial check in what.
func (r *Report) VerdictLine() string {
	var s string
	switch {
	case r.OK:
		s = "verify: OK"
	case r.NotMigrated > 0:
		s = fmt.Sprintf("verify: %d row(s) not migrated; %d missing, %d different, %d orphan doc(s)",
			r.NotMigrated, r.Totals.Missing, r.Totals.Different, r.Totals.Orphans)
	default:
		s = fmt.Sprintf("verify: %d missing, %d different, %d orphan doc(s)", r.Totals.Missing, r.Totals.Different, r.Totals.Orphans)
	}
	return s + r.PartialSuffix()
}

// PartialSuffix is what a partial check's verdict adds to a sentence
// about its outcome: " for a 5 % sample: 52 of 1,040 rows judged" when
// OK, " in a 5 % sample: …" when not; "" for a full check.
func (r *Report) PartialSuffix() string {
	switch {
	case !r.Partial:
		return ""
	case r.OK:
		return " for " + r.Scope.String()
	}
	return " in " + r.Scope.String()
}
