package migrate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/statedir"
)

// SamplesFile is where run records its throughput over time, in the
// state directory: one JSON line per ThroughputSample, appended as the
// run goes. A resumed run appends to it; another run (after --restart)
// replaces it with its own. verify's HTML report draws its charts from
// it.
const SamplesFile = "samples.jsonl"

// MaxSamples bounds samples.jsonl: when it reaches MaxSamples lines
// (about 200 bytes each), every other line is dropped and the time
// between samples doubles, so that a run of any length keeps at most
// MaxSamples lines, evenly spread over the run.
const MaxSamples = 2000

// ThroughputSample is one point of a run's throughput: rates over the Seconds
// before Time, measured by the process that ran then.
type ThroughputSample struct {
	Time  time.Time `json:"time"`
	RunID string    `json:"runId"`
	// Seconds is the span the rates are measured over.
	Seconds float64 `json:"seconds"`
	// RowsDone counts the run's rows with their final outcome at Time,
	// earlier sessions of a resumed run included.
	RowsDone       int64   `json:"rowsDone"`
	RowsPerSecond  float64 `json:"rowsPerSecond"`
	DocsPerSecond  float64 `json:"docsPerSecond"`
	RUPerSecond    float64 `json:"ruPerSecond"`
	ThrottledShare float64 `json:"throttledShare"`
	InFlight       int     `json:"inFlight"`
}

// SampleLog appends samples to the samples file of a state directory,
// keeping it within MaxSamples lines. It is used by one goroutine.
type SampleLog struct {
	dir string
	// Every is the least time between two samples worth keeping; it
	// doubles each time the file is thinned.
	Every time.Duration
	n     int // lines in the file; -1 until counted
}

// NewSampleLog returns the sample log of dir, with samples at least
// every apart.
func NewSampleLog(dir string, every time.Duration) *SampleLog {
	return &SampleLog{dir: dir, Every: every, n: -1}
}

// Append appends s. When the file then holds MaxSamples lines, it is
// replaced (atomically) by every other one of them, and Every doubles.
// It returns an error naming the file when it cannot be written.
func (l *SampleLog) Append(s ThroughputSample) error {
	name := filepath.Join(l.dir, SamplesFile)
	if l.n < 0 {
		lines, err := readLines(name)
		if err != nil {
			return err
		}
		l.n = len(lines)
		var last ThroughputSample
		if l.n > 0 && (json.Unmarshal(lines[l.n-1], &last) != nil || last.RunID != s.RunID) {
			// Another run's (before a --restart): this run's replace them.
			if err := statedir.WriteFile(l.dir, SamplesFile, nil); err != nil {
				return err
			}
			l.n = 0
		}
	}
	line, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	l.n++
	if l.n < MaxSamples {
		return nil
	}
	return l.thin(name)
}

// thin replaces the file at name by every other of its lines, the last
// one kept.
func (l *SampleLog) thin(name string) error {
	lines, err := readLines(name)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	kept := 0
	for i := (len(lines) - 1) % 2; i < len(lines); i += 2 {
		b.Write(lines[i])
		b.WriteByte('\n')
		kept++
	}
	if err := statedir.WriteFile(l.dir, SamplesFile, b.Bytes()); err != nil {
		return err
	}
	l.n = kept
	l.Every *= 2
	return nil
}

// readLines returns the non-empty lines of the file at name (none when
// it does not exist).
func readLines(name string) ([][]byte, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// LoadSamples returns the samples of run runID in dir's samples file, in
// time order: none when the file does not exist. A line that does not
// decode (a line cut short by a crash) is skipped.
func LoadSamples(dir, runID string) ([]ThroughputSample, error) {
	f, err := os.Open(filepath.Join(dir, SamplesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ThroughputSample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var s ThroughputSample
		if json.Unmarshal(sc.Bytes(), &s) != nil || s.RunID != runID {
			continue
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
