package cmd

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// countTable is the table of counts of a replay's or a reverse's summary:
// head names its first column (TABLE, CONTAINER) and names the count
// columns; each group (a table or a container) has the counts of each
// kind and of all, and total the counts of every group, each in the
// columns' order.
type countTable struct {
	head   string
	names  []string
	groups []countGroup
	total  []int64
}

// countGroup is a table's or a container's counts: per kind, and all.
type countGroup struct {
	name  string
	kinds map[string][]int64
	all   []int64
}

// writeCountTable prints t: a line per group and kind (kinds by name),
// the group's "(all)" line, and a TOTAL line.
func writeCountTable(w io.Writer, t countTable) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tKIND\t", t.head)
	for _, name := range t.names {
		fmt.Fprintf(tw, "%s\t", name)
	}
	fmt.Fprintln(tw)
	for _, g := range t.groups {
		for _, k := range sortedKeys(g.kinds) {
			writeCountLine(tw, g.name, k, g.kinds[k])
		}
		writeCountLine(tw, g.name, "(all)", g.all)
	}
	writeCountLine(tw, "TOTAL", "", t.total)
	return tw.Flush()
}

// writeCountLine prints one line of a count table.
func writeCountLine(w io.Writer, group, kind string, counts []int64) {
	fmt.Fprintf(w, "%s\t%s\t", group, kind)
	for _, n := range counts {
		fmt.Fprintf(w, "%d\t", n)
	}
	fmt.Fprintln(w)
}
