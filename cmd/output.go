package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/bifrost/bifrost-migrate/internal/version"
)

// The output convention of every command (docs/configuration.md, "Output"):
//
//   - text (the default): results (summaries, reports, plans) on stdout;
//     status, warnings, progress and errors on stderr.
//   - --output json: stdout carries only JSON objects, one per line, each
//     with "type" first: the line types below, with the same field names
//     in every command. Status and warnings are lines on stdout too, so
//     that a program reading stdout has the whole story in order. Stderr
//     keeps what is for a person watching: the error's sentence (which is
//     also the last line on stdout), progress bars when stderr is a
//     terminal, and --verbose's HTTP lines.
//
// --quiet drops status and progress in both modes; warnings, results and
// errors remain.

// The "type" of each --output json line.
const (
	// lineProgress is how far a command is: tableProgress (run, replay,
	// fixtures load) or stepProgress (verify).
	lineProgress = "progress"
	// lineStatus is what a command is doing or found at its start, for
	// people: {"message"}.
	lineStatus = "status"
	// lineWarning is something the user should know before relying on the
	// result: {"message"}.
	lineWarning = "warning"
	// lineSummary is a command's result, printed once, last before any
	// error line. Every summary line carries, after its type, the
	// "toolVersion" of the build that printed it (jsonLine adds it).
	lineSummary = "summary"
	// lineError ends the output of a command that failed: errorLine.
	lineError = "error"
)

// messageLine is the body of a status or warning line.
type messageLine struct {
	Message string `json:"message"`
}

// errorLine is the body of the error line: the exit status and the same
// scrubbed sentence that stderr shows (errorMessage).
type errorLine struct {
	Exit    int    `json:"exit"`
	Message string `json:"message"`
}

// ruNow is the part of a progress line that tells how a command is using
// Cosmos DB: request units per second and the share of requests answered
// 429, both over the last 5 seconds; absent when the command sends no
// Cosmos DB requests in volume.
type ruNow struct {
	RUPerSecond    *float64 `json:"ruPerSecond,omitempty"`
	ThrottledShare *float64 `json:"throttledShare,omitempty"`
	// InFlight is the requests in flight now, LatencyP50Ms the median
	// latency of the recent ones (SPEC §14, Latency).
	InFlight     *int     `json:"inFlight,omitempty"`
	LatencyP50Ms *float64 `json:"latencyP50Ms,omitempty"`
}

// newRUNow samples ru; a nil ru gives no fields.
func newRUNow(ru ruRecent) ruNow {
	if ru == nil {
		return ruNow{}
	}
	f := ru()
	ms := float64(f.latencyP50.Microseconds()) / 1000
	return ruNow{RUPerSecond: &f.ruPerSecond, ThrottledShare: &f.throttledShare, InFlight: &f.inFlight, LatencyP50Ms: &ms}
}

// tableProgress is the progress line of a command that goes table by
// table (run, replay, fixtures load). Done counts the table's rows whose
// outcome is final, including those a resumed run did before;
// RowsPerSecond counts this invocation's only. Total is null until the
// command knows it.
type tableProgress struct {
	Table         string  `json:"table"`
	Done          int64   `json:"done"`
	Total         *int64  `json:"total"`
	RowsPerSecond float64 `json:"rowsPerSecond"`
	ruNow
	Finished bool `json:"finished"`
}

// stepProgress is the progress line of verify: the phase it enters.
type stepProgress struct {
	Step string `json:"step"`
	ruNow
}

// jsonLines writes --output json: each value as one JSON object on one
// line, with its "type" first, HTML characters not escaped. It is safe for
// concurrent use (progress comes from several goroutines): lines never
// interleave. The first error, encoding or writing, is kept: every later
// emit returns it without writing, so that an error met on a progress
// line the caller cannot act on surfaces at the summary's.
type jsonLines struct {
	w io.Writer

	mu  sync.Mutex
	err error
}

func newJSONLines(w io.Writer) *jsonLines { return &jsonLines{w: w} }

// emit writes v, which must encode as a JSON object with no "type" field
// of its own, as one line whose "type" is typ. It returns the first error
// this jsonLines met, if any.
func (j *jsonLines) emit(typ string, v any) error {
	line, err := jsonLine(typ, v)
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.err != nil:
	case err != nil:
		j.err = err
	default:
		if _, err := j.w.Write(line); err != nil {
			j.err = fmt.Errorf("--output json: writing to stdout: %w", err)
		}
	}
	return j.err
}

// jsonLine encodes v as one line of --output json with "type":typ first,
// and for a summary "toolVersion" (the running build's version) next.
// It refuses a v that is not a JSON object or that sets "type" (or, for
// a summary, "toolVersion") itself: they are given here, once.
func jsonLine(typ string, v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("--output json: a %s line: %w", typ, err)
	}
	body := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("--output json: a %s line must be a JSON object, not %.40s", typ, body)
	}
	if _, ok := fields["type"]; ok {
		return nil, fmt.Errorf("--output json: a %s line must not set its own \"type\"", typ)
	}
	head, err := json.Marshal(typ)
	if err != nil {
		return nil, err
	}
	if typ == lineSummary {
		if _, ok := fields["toolVersion"]; ok {
			return nil, fmt.Errorf("--output json: a %s line must not set its own \"toolVersion\"", typ)
		}
		v, err := json.Marshal(version.String())
		if err != nil {
			return nil, err
		}
		head = append(append(head, `,"toolVersion":`...), v...)
	}
	var line bytes.Buffer
	line.Grow(len(body) + len(head) + 10)
	line.WriteString(`{"type":`)
	line.Write(head)
	if len(fields) > 0 {
		line.WriteByte(',')
		line.Write(body[1:])
	} else {
		line.WriteByte('}')
	}
	line.WriteByte('\n')
	return line.Bytes(), nil
}

// output is where one command reports to its user, in the --output
// format: status and warning lines here, progress through newProgress
// and verifyProgress, the result through lines (JSON) or out (text).
// Its methods are safe for concurrent use.
type output struct {
	name        string // the command, before its text status lines: "run"
	out, errOut io.Writer
	lines       *jsonLines // nil: text
	quiet       bool
	// log, when not nil, gets every status and warning line too, even
	// with --quiet (--log-file).
	log *logFile

	mu   sync.Mutex // serialises text lines on errOut
	bars *barProgress
}

// newOutput returns the output of command name writing to out (stdout)
// and errOut (stderr); asJSON is --output json, quiet --quiet.
func newOutput(name string, out, errOut io.Writer, asJSON, quiet bool) *output {
	o := &output{name: name, out: out, errOut: errOut, quiet: quiet}
	if asJSON {
		o.lines = newJSONLines(out)
	}
	return o
}

// json reports whether the output is --output json.
func (o *output) json() bool { return o.lines != nil }

// showBars makes text status lines appear above b's live bar from now on
// (b and the status lines share stderr).
func (o *output) showBars(b *barProgress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bars = b
}

// status reports what the command is doing, for people: "name: message"
// on stderr, or a status line on stdout with --output json; nothing with
// --quiet.
func (o *output) status(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if o.quiet {
		o.log.Printf("%s: %s", o.name, msg)
		return
	}
	o.say(lineStatus, msg)
}

// warning reports something the user should know before relying on the
// result, as status does, but even with --quiet.
func (o *output) warning(format string, args ...any) {
	o.say(lineWarning, fmt.Sprintf(format, args...))
}

// say prints msg as a line of type typ. An error writing stdout is kept
// by lines and returned by the summary's emit; stderr's has nowhere to go.
func (o *output) say(typ, msg string) {
	if typ == lineWarning {
		o.log.Printf("%s: warning: %s", o.name, msg)
	} else {
		o.log.Printf("%s: %s", o.name, msg)
	}
	if o.lines != nil {
		_ = o.lines.emit(typ, messageLine{msg})
		return
	}
	o.progressLine(o.name + ": " + msg)
}

// progressLine prints a line of text (progress, or a status line) on
// stderr, above the live bar if there is one.
func (o *output) progressLine(text string) {
	o.mu.Lock()
	bars := o.bars
	if bars == nil {
		defer o.mu.Unlock()
		fmt.Fprintln(o.errOut, text)
		return
	}
	o.mu.Unlock()
	bars.Message(text)
}

// outputArg returns the value of the last --output flag in args, read
// from the command line itself ("" when there is none): a usage error can
// stop cobra before it has parsed the flags, and with --output json that
// error too must come as a JSON line. Nothing after "--" is a flag.
func outputArg(args []string) string {
	v := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return v
		case a == "--output" && i+1 < len(args):
			v = args[i+1]
			i++
		case strings.HasPrefix(a, "--output="):
			v = strings.TrimPrefix(a, "--output=")
		}
	}
	return v
}
