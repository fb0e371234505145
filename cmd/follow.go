package cmd

import (
	"fmt"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// linePass is the "type" of a --follow pass line.
const linePass = "pass"

// passLine is one {"type":"pass"} line of --follow.
type passLine struct {
	Pass        int      `json:"pass"`
	Started     string   `json:"started"`
	Since       string   `json:"since"`
	Rows        int64    `json:"rows"`
	Written     int64    `json:"written"`
	Conflicts   int64    `json:"conflicts"`
	DeadLetters int64    `json:"deadLetters"`
	LagSeconds  *float64 `json:"lagSeconds"` // null when the pass read no change
	Seconds     float64  `json:"seconds"`
}

// writePass prints one pass: a line of text on stdout, or with --output
// json one {"type":"pass"} line.
func writePass(o *ui.Output, r migrate.PassReport, deadLetters int64) error {
	line := passLine{Pass: r.Pass, Started: r.Started.UTC().Format(time.RFC3339Nano), Since: r.Since.UTC().Format(time.RFC3339Nano), Rows: r.Read, Written: r.Applied,
		Conflicts: r.Conflicts, DeadLetters: deadLetters, Seconds: r.Took.Seconds()}
	lag := "no change"
	if !r.Newest.IsZero() {
		secs := r.Lag.Seconds()
		line.LagSeconds = &secs
		lag = "lag " + r.Lag.Round(100*time.Millisecond).String()
	}
	text := fmt.Sprintf("pass %d since %s: %d row(s), %d written, %d conflict(s), %d dead letter(s), %s (%.1fs)",
		line.Pass, line.Since, line.Rows, line.Written, line.Conflicts, line.DeadLetters, lag, line.Seconds)
	o.Log().Printf("%s: %s", o.Name(), text)
	if o.JSON() {
		return o.Lines().Emit(linePass, line)
	}
	_, err := fmt.Fprintf(o.Out(), "%s: %s\n", o.Name(), text)
	return err
}

// followPass is what one pass of --follow did that the passes after it
// need: its dead letters, and its conflicts by doc.
type followPass struct {
	deadLetters int64
	conflicts   map[string]listedConflict
}

// newFollowPass is one pass of --follow with its conflicts by doc.
func newFollowPass(deadLetters int64, conflicts []listedConflict) followPass {
	p := followPass{deadLetters: deadLetters, conflicts: make(map[string]listedConflict, len(conflicts))}
	for _, c := range conflicts {
		p.conflicts[c.doc] = c
	}
	return p
}

// followed is what every pass of --follow did.
type followed struct {
	passes      int
	deadLetters int64
	conflicts   map[string]listedConflict // the latest of each doc's conflicts
}

// listed returns the conflicts in doc order.
func (f followed) listed() []listedConflict {
	out := make([]listedConflict, 0, len(f.conflicts))
	for _, k := range sortedKeys(f.conflicts) {
		out = append(out, f.conflicts[k])
	}
	return out
}

// exit is the error that ends a follow: conflicts left (exit 4), else
// dead letters (exit 3, in the file deadLetterFile), else none.
func (f followed) exit(deadLetterFile string) error {
	switch {
	case len(f.conflicts) > 0:
		return ConflictError(fmt.Errorf("%d conflict(s) left unresolved over %d pass(es): see the list", len(f.conflicts), f.passes))
	case f.deadLetters > 0:
		return PartialError(fmt.Errorf("%d dead letter(s) over %d pass(es); see %s", f.deadLetters, f.passes, deadLetterFile))
	}
	return nil
}

// deref is *t, or the zero time for nil.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
