package cmd

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// countColumns are the count columns of a summary table: their names,
// and the counts of a C, in the same order.
type countColumns[C any] struct {
	names  []string
	counts func(C) []int64
}

// countGroup is a table's or a container's counts: per kind, and all.
type countGroup[C any] struct {
	name  string
	kinds map[string]C
	all   C
}

// writeCountTable prints counts as a table: a line per group and kind
// (kinds by name), the group's "(all)" line, and a TOTAL line; head names
// the first column (TABLE, CONTAINER).
func writeCountTable[C any](w io.Writer, head string, cols countColumns[C], groups []countGroup[C], total C) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tKIND\t", head)
	for _, name := range cols.names {
		fmt.Fprintf(tw, "%s\t", name)
	}
	fmt.Fprintln(tw)
	line := func(group, kind string, c C) {
		fmt.Fprintf(tw, "%s\t%s\t", group, kind)
		for _, n := range cols.counts(c) {
			fmt.Fprintf(tw, "%d\t", n)
		}
		fmt.Fprintln(tw)
	}
	for _, g := range groups {
		for _, k := range sortedKeys(g.kinds) {
			line(g.name, k, g.kinds[k])
		}
		line(g.name, "(all)", g.all)
	}
	line("TOTAL", "", total)
	return tw.Flush()
}
