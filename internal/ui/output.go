package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	// LineProgress is how far a command is: TableProgress (run, replay,
	// reverse, fixtures load) or StepProgress (verify).
	LineProgress = "progress"
	// LineStatus is what a command is doing or found at its start, for
	// people: {"message"}.
	LineStatus = "status"
	// LineWarning is something the user should know before relying on the
	// result: {"message"}.
	LineWarning = "warning"
	// LineSummary is a command's result, printed once, last before any
	// error line. Every summary line carries, after its type, the
	// "toolVersion" of the build that printed it (jsonLine adds it).
	LineSummary = "summary"
	// LineError ends the output of a command that failed: ErrorLine.
	LineError = "error"
)

// MessageLine is the body of a status or warning line.
type MessageLine struct {
	Message string `json:"message"`
}

// ErrorLine is the body of the error line: the exit status and the same
// scrubbed sentence that stderr shows.
type ErrorLine struct {
	Exit    int    `json:"exit"`
	Message string `json:"message"`
}

// JSONLines writes --output json: each value as one JSON object on one
// line, with its "type" first, HTML characters not escaped. It is safe for
// concurrent use (progress comes from several goroutines): lines never
// interleave. The first error, encoding or writing, is kept: every later
// Emit returns it without writing, so that an error met on a progress
// line the caller cannot act on surfaces at the summary's.
type JSONLines struct {
	w io.Writer

	mu  sync.Mutex
	err error
}

// NewJSONLines returns the JSON lines written to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// Emit writes v, which must encode as a JSON object with no "type" field
// of its own, as one line whose "type" is typ. It returns the first error
// these lines met, if any.
func (j *JSONLines) Emit(typ string, v any) error {
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
	if typ == LineSummary {
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

// Output is where one command reports to its user, in the --output
// format: status and warning lines, the progress lines and the bar
// (Progress), the result through Summary (JSON) or Out (text). Its
// methods are safe for concurrent use.
type Output struct {
	name        string // the command, before its text status lines: "run"
	out, errOut io.Writer
	lines       *JSONLines // nil: text
	quiet       bool
	// log, when not nil, gets every status and warning line too, even
	// with --quiet (--log-file).
	log *LogFile
	// screen is stderr as the status lines and the bar share it.
	screen *screen
}

// NewOutput returns the output of command name writing to out (stdout)
// and errOut (stderr); asJSON is --output json, quiet --quiet, log
// --log-file (nil: none).
func NewOutput(name string, out, errOut io.Writer, asJSON, quiet bool, log *LogFile) *Output {
	o := &Output{name: name, out: out, errOut: errOut, quiet: quiet, log: log, screen: &screen{w: errOut}}
	if asJSON {
		o.lines = NewJSONLines(out)
	}
	return o
}

// Name is the command's name, as its status lines begin.
func (o *Output) Name() string { return o.name }

// Out is where the command's text results go (stdout).
func (o *Output) Out() io.Writer { return o.out }

// JSON reports whether the output is --output json.
func (o *Output) JSON() bool { return o.lines != nil }

// Quiet reports whether the output is --quiet.
func (o *Output) Quiet() bool { return o.quiet }

// Log is --log-file (nil without it; a nil *LogFile logs nothing).
func (o *Output) Log() *LogFile { return o.log }

// Emit writes one line of --output json of type typ (JSONLines.Emit).
// It must only be called with --output json.
func (o *Output) Emit(typ string, v any) error { return o.lines.Emit(typ, v) }

// Summary writes the command's result v as its summary line (--output
// json only) and returns the first error the lines met.
func (o *Output) Summary(v any) error { return o.lines.Emit(LineSummary, v) }

// Status reports what the command is doing, for people: "name: message"
// on stderr, or a status line on stdout with --output json; nothing with
// --quiet (but in the log).
func (o *Output) Status(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if o.quiet {
		o.log.Printf("%s: %s", o.name, msg)
		return
	}
	o.say(LineStatus, msg)
}

// Warning reports something the user should know before relying on the
// result, as Status does, but even with --quiet.
func (o *Output) Warning(format string, args ...any) {
	o.say(LineWarning, fmt.Sprintf(format, args...))
}

// say prints msg as a line of type typ. An error writing stdout is kept
// by lines and returned by the summary's Emit; stderr's has nowhere to go.
func (o *Output) say(typ, msg string) {
	if typ == LineWarning {
		o.log.Printf("%s: warning: %s", o.name, msg)
	} else {
		o.log.Printf("%s: %s", o.name, msg)
	}
	if o.lines != nil {
		_ = o.lines.Emit(typ, MessageLine{msg})
		return
	}
	o.screen.println(o.name + ": " + msg)
}

// Prefixed writes each line with a prefix ("verify: "); lines must come
// whole, one per Write, as fmt.Fprintf sends them.
type Prefixed struct {
	W      io.Writer
	Prefix string
}

func (p Prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.W, p.Prefix); err != nil {
		return 0, err
	}
	return p.W.Write(b)
}

// Lines are the --output json lines (nil in text).
func (o *Output) Lines() *JSONLines { return o.lines }
