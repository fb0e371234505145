package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/version"
	"github.com/bifrost/bifrost-migrate/migrate"
)

func TestJSONLinesTypeFirstOneObjectPerLine(t *testing.T) {
	var b bytes.Buffer
	j := NewJSONLines(&b)
	if err := j.Emit(LineStatus, MessageLine{"a <b> & c"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Emit(LineSummary, struct{}{}); err != nil {
		t.Fatal(err)
	}
	total := int64(7)
	l := live{hasRU: true, ruPerSecond: 12.5, throttledShare: 0.25, flow: migrate.FlowStats{InFlight: 40, LatencyP50: 80500 * time.Microsecond}}
	if err := j.Emit(LineProgress, TableProgress{Table: "Config", Done: 3, Total: &total, RUNow: ruNow(l)}); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"status","message":"a <b> & c"}` + "\n" +
		`{"type":"summary","toolVersion":"` + version.String() + `"}` + "\n" +
		`{"type":"progress","table":"Config","done":3,"total":7,"rowsPerSecond":0,"ruPerSecond":12.5,"throttledShare":0.25,"inFlight":40,"latencyP50Ms":80.5,"finished":false}` + "\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A value that is not an object, or sets "type" itself, is refused, and
// the refusal is kept: every later line returns it and nothing more is
// written, so that the summary's emit reports an error met on a progress
// line.
func TestJSONLinesRefusesAndKeepsTheFirstError(t *testing.T) {
	for _, c := range []struct {
		typ string
		v   any
	}{
		{LineProgress, "text"}, {LineProgress, []int{1}}, {LineProgress, nil}, {LineProgress, 3},
		{LineProgress, struct {
			Type string `json:"type"`
		}{"mine"}}, {LineProgress, map[string]any{"type": "x"}}, {LineProgress, struct{ C chan int }{}},
		// A summary's toolVersion is the running build's, set by jsonLine.
		{LineSummary, map[string]any{"toolVersion": "v0"}},
	} {
		v := c.v
		var b bytes.Buffer
		j := NewJSONLines(&b)
		err := j.Emit(c.typ, v)
		if err == nil {
			t.Errorf("%#v: no error", v)
			continue
		}
		if err2 := j.Emit(LineSummary, MessageLine{"after"}); err2 != err {
			t.Errorf("%#v: the next emit returned %v, want the first error %v", v, err2, err)
		}
		if b.Len() != 0 {
			t.Errorf("%#v: wrote %q", v, b.String())
		}
	}
}

// failingWriter fails every write after the first n.
type failingWriter struct {
	n      int
	writes int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > w.n {
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

func TestJSONLinesKeepsAWriteError(t *testing.T) {
	w := &failingWriter{n: 1}
	j := NewJSONLines(w)
	if err := j.Emit(LineStatus, MessageLine{"one"}); err != nil {
		t.Fatal(err)
	}
	err := j.Emit(LineProgress, StepProgress{Step: "two"})
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("error %v, want the write's", err)
	}
	if err := j.Emit(LineSummary, MessageLine{"three"}); !errors.Is(err, io.ErrClosedPipe) || w.writes != 2 {
		t.Errorf("after a write error: %v after %d writes, want the same error and no third write", err, w.writes)
	}
}

// overlapWriter records whether two Writes ever ran at once.
type overlapWriter struct {
	in      atomic.Bool
	overlap atomic.Bool
	b       bytes.Buffer
}

func (w *overlapWriter) Write(p []byte) (int, error) {
	if !w.in.CompareAndSwap(false, true) {
		w.overlap.Store(true)
		return len(p), nil
	}
	defer w.in.Store(false)
	runtime.Gosched() // widen the window another writer could enter
	return w.b.Write(p)
}

func TestJSONLinesConcurrentEmitsNeverInterleave(t *testing.T) {
	w := &overlapWriter{}
	j := NewJSONLines(w)
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if err := j.Emit(LineProgress, TableProgress{Table: fmt.Sprintf("t%d", g), Done: int64(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if w.overlap.Load() {
		t.Fatal("two lines were written at once")
	}
	lines := strings.Split(strings.TrimSuffix(w.b.String(), "\n"), "\n")
	if len(lines) != goroutines*each {
		t.Fatalf("%d lines, want %d", len(lines), goroutines*each)
	}
	last := map[string]int64{}
	for _, l := range lines {
		var p struct {
			Type string `json:"type"`
			TableProgress
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.Type != LineProgress {
			t.Fatalf("line %q: %v", l, err)
		}
		if prev, ok := last[p.Table]; ok && p.Done != prev+1 {
			t.Errorf("%s: done %d after %d", p.Table, p.Done, prev)
		}
		last[p.Table] = p.Done
	}
}

func TestOutputStatusAndWarning(t *testing.T) {
	var out, errOut bytes.Buffer
	text := NewOutput("run", &out, &errOut, false, false, nil)
	text.Status("resuming %s", "r1")
	text.Warning("dry run: %s missing", "database x")
	if out.Len() != 0 || errOut.String() != "run: resuming r1\nrun: dry run: database x missing\n" {
		t.Errorf("text: stdout %q, stderr %q", out.String(), errOut.String())
	}

	out.Reset()
	errOut.Reset()
	quiet := NewOutput("run", &out, &errOut, true, true, nil)
	quiet.Status("not shown")
	quiet.Warning("shown")
	if errOut.Len() != 0 || out.String() != `{"type":"warning","message":"shown"}`+"\n" {
		t.Errorf("json --quiet: stdout %q, stderr %q", out.String(), errOut.String())
	}

	out.Reset()
	loud := NewOutput("run", &out, &errOut, true, false, nil)
	loud.Status("tables x → y")
	if errOut.Len() != 0 || out.String() != `{"type":"status","message":"tables x → y"}`+"\n" {
		t.Errorf("json: stdout %q, stderr %q", out.String(), errOut.String())
	}
}
