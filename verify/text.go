package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/bifrost/bifrost-migrate/internal/words"
)

// Text is the report as verify prints it on stdout: the per-table and
// kind table, the application-written docs, the access patterns and the
// first ShownDifferences problems, then the verdict line. It is not a
// --report format (Formats): the file holds the whole report.
type Text struct{}

// Name is "text".
func (Text) Name() string { return "text" }

// Exts is none: no --report name chooses the text.
func (Text) Exts() []string { return nil }

// Write writes r as text (WriteText); it needs no Meta.
func (Text) Write(w io.Writer, r *Report, _ Meta) error { return r.WriteText(w) }

// WriteText writes the per-table and kind table, the application-written
// docs, the access patterns and the first ShownDifferences missing docs,
// orphans and differences.
func (r *Report) WriteText(w io.Writer) error {
	if r.Settings.Sample > 0 && r.Settings.Sample < 1 {
		fmt.Fprintf(w, "sample: %s of the rows (chosen by a hash of their keys)\n", words.Percent(r.Settings.Sample))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tKIND\tROWS\tEXPECTED\tMATCHED\tMISSING\tDIFFERENT\tORPHANS\tDROPPED-INDEX\tKEPT-IN-TABLES\tEXPIRED\tDEAD-LETTER")
	row := func(table, kind string, c Counts) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", table, kind, c.Rows, c.ExpectedDocs,
			c.Matched, c.Missing, c.Different, c.Orphans, c.DroppedIndex, c.KeptInTables, c.Expired, c.DeadLetter)
	}
	for _, k := range r.Tables {
		row(k.Table, k.Kind, k.Counts)
	}
	row("total", "", r.Totals)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "application-written docs (no _migration, not judged): %s\n", perContainer(r.AppWritten))
	if n := total(r.DocsWithoutTTL); n > 0 {
		fmt.Fprintf(w, "docs without ttl (%s): written by the application after migration, each lives by the container's defaultTtl from its last write; judged by content, not a difference:\n", perContainer(r.DocsWithoutTTL))
		for _, d := range first(r.WithoutTTL, ShownDifferences) {
			fmt.Fprintf(w, "  %s\n", d)
		}
		if n > ShownDifferences {
			fmt.Fprintf(w, "  … and %d more\n", n-ShownDifferences)
		}
	}
	if r.Totals.ExpiredPresent > 0 {
		fmt.Fprintf(w, "expired executions still present (allowed): %d\n", r.Totals.ExpiredPresent)
	}
	if r.NotJudged > 0 {
		fmt.Fprintf(w, "docs of rows outside --tables/--sample (not judged): %d\n", r.NotJudged)
	}
	r.AccessPatterns.writeText(w, r.Settings.Sample)
	if n := len(r.Missing); n > 0 {
		fmt.Fprintf(w, "missing docs (%s):\n", shown(n))
		for _, m := range first(r.Missing, ShownDifferences) {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
	if n := len(r.Orphans); n > 0 {
		fmt.Fprintf(w, "orphan docs (%s):\n", shown(n))
		for _, o := range first(r.Orphans, ShownDifferences) {
			fmt.Fprintf(w, "  %s: %s\n", o.DocRef, o.Reason)
		}
	}
	if n := r.Totals.ChangedWhileRunning; n > 0 {
		fmt.Fprintf(w, "changed while verify ran (%s; not differences: a row or doc written after verify started, read again and still in flight):\n", shown(n))
		for _, d := range first(r.ChangedWhileRunning, ShownDifferences) {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	if r.NotReread > 0 {
		fmt.Fprintf(w, "findings not read again (beyond the first %d): %d; they stand as first read\n", MaxRecheck, r.NotReread)
	}
	if n := len(r.Differences); n > 0 {
		fmt.Fprintf(w, "differences (%s, in %d doc(s)):\n", shown(n), r.Totals.Different)
		for _, d := range first(r.Differences, ShownDifferences) {
			fmt.Fprintf(w, "  %s\n", d.text())
		}
		if r.DetailsTruncated {
			fmt.Fprintf(w, "  (field details computed for the first %d differing docs only)\n", MaxDetailedDocs)
		}
	}
	if r.NotMigrated > 0 {
		fmt.Fprintln(w, r.NotMigratedText())
	}
	_, err := fmt.Fprintln(w, r.VerdictLine())
	return err
}

// NotMigratedText is the line that counts the rows not migrated and says
// where they are listed: run's dead-letter file, or, when it was not
// found, how to list them.
func (r *Report) NotMigratedText() string {
	s := fmt.Sprintf("not migrated: %d row(s) are dead letters, not in Cosmos DB (DEAD-LETTER column)", r.NotMigrated)
	switch {
	case r.DeadLetterFile == "":
		return s + "; `bifrost-migrate run --dry-run` lists them with their reasons"
	case r.DeadLetterFileFound:
		return s + "; run listed them with their reasons in " + r.DeadLetterFile
	}
	return s + "; no run wrote a dead-letter file in " + filepath.Dir(r.DeadLetterFile) +
		": `bifrost-migrate run --dry-run` lists them with their reasons (or give verify the run's --state-dir)"
}

// perContainer writes counts per container: "entities 0, executions 2".
func perContainer(counts map[string]int) string {
	containers := make([]string, 0, len(counts))
	for c := range counts {
		containers = append(containers, c)
	}
	sort.Strings(containers)
	var parts []string
	for _, c := range containers {
		parts = append(parts, fmt.Sprintf("%s %d", c, counts[c]))
	}
	return strings.Join(parts, ", ")
}

func shown(n int) string {
	if n > ShownDifferences {
		return fmt.Sprintf("first %d of %d", ShownDifferences, n)
	}
	return fmt.Sprint(n)
}

// text renders a difference on one line.
func (d Difference) text() string {
	where := d.Doc.Container + "/" + d.Doc.Scope + "/" + d.Doc.ID
	if d.ActualDoc != nil {
		where += " (found at " + d.ActualDoc.Container + "/" + d.ActualDoc.Scope + "/" + d.ActualDoc.ID + ")"
	}
	val := func(v json.RawMessage) string {
		if v == nil {
			return "(absent)"
		}
		return string(v)
	}
	switch d.Problem {
	case ProblemBlob:
		return fmt.Sprintf("%s: %s: blob %s does not exist in execution-data", where, d.Path, val(d.Actual))
	case ProblemTTL:
		return fmt.Sprintf("%s: %s: expected %s, actual %s", where, d.Path, strings.Trim(string(d.Expected), `"`), val(d.Actual))
	}
	return fmt.Sprintf("%s: %s: expected %s, actual %s", where, d.Path, val(d.Expected), val(d.Actual))
}

// writeText writes the access-pattern counts, then the first
// ShownDifferences dangling rows, stale rows and unindexed executions,
// one line each. sample is the report's --sample.
func (a AccessPatterns) writeText(w io.Writer, sample float64) {
	if !a.Checked {
		fmt.Fprintln(w, "access patterns: not checked (they need both Entities and Relationships; --tables left one out)")
		return
	}
	of := ""
	if sample > 0 && sample < 1 {
		of = " of the sample"
	}
	fmt.Fprintf(w, "access patterns (data quality, not failures): %d dangling and %d stale index row(s), %d unindexed execution(s)%s\n",
		a.Dangling, a.Stale, a.Unindexed, of)
	groups := accessRows(a.Findings)
	for _, k := range []struct {
		kind  FindingKind
		title string
		n     int
	}{
		{FindingDangling, "dangling index rows (no such execution: listed before cutover, gone after)", a.Dangling},
		{FindingStale, "stale index rows (listed under the index's value before cutover, under the execution's after)", a.Stale},
		{FindingUnindexed, "unindexed executions (missing from that user's or workflow's list before cutover, in it after)", a.Unindexed},
	} {
		if k.n == 0 {
			continue
		}
		fmt.Fprintf(w, "%s (%s):\n", k.title, shown(k.n))
		n := 0
		for _, g := range groups {
			if g[0].Kind != k.kind || n == ShownDifferences {
				continue
			}
			n++
			fmt.Fprintf(w, "  %s\n", findingText(g))
		}
	}
}

// findingText renders the findings of one index row or one execution on
// one line.
func findingText(g []Finding) string {
	val := func(v *string) string {
		if v == nil {
			return "(none)"
		}
		return string(rawJSON(*v))
	}
	var parts []string
	for _, f := range g {
		switch f.Kind {
		case FindingDangling:
			parts = append(parts, "execution "+f.ExecutionID+" is not in Entities")
		case FindingStale:
			parts = append(parts, fmt.Sprintf("%s: index %s, execution %s", f.Field, val(f.IndexValue), val(f.ExecutionValue)))
		case FindingUnindexed:
			missing := "userexec"
			if f.Field == FieldWorkflowName {
				missing = "workflowexec"
			}
			parts = append(parts, fmt.Sprintf("no %s row (%s %s)", missing, f.Field, val(f.ExecutionValue)))
		}
	}
	head := "execution " + g[0].ExecutionID
	if g[0].Index != nil {
		head = "index " + *g[0].Index
	}
	return head + ": " + strings.Join(parts, "; ")
}
