package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The samples file never holds more than MaxSamples lines however long a
// run samples: it is thinned to every other line, the newest kept, and
// the time between samples doubles; LoadSamples returns one run's.
func TestSampleLogStaysBounded(t *testing.T) {
	dir := t.TempDir()
	l := NewSampleLog(dir, time.Second)
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const n = 3*MaxSamples + 7
	for i := range n {
		if err := l.Append(ThroughputSample{Time: start.Add(time.Duration(i) * time.Second), RunID: "r1", RowsDone: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(b), "\n")
	if lines >= MaxSamples || lines < MaxSamples/4 {
		t.Errorf("%d lines after %d samples, want fewer than %d and at least %d", lines, n, MaxSamples, MaxSamples/4)
	}
	if l.Every <= time.Second {
		t.Errorf("Every is still %s after thinning", l.Every)
	}
	got, err := LoadSamples(dir, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != lines || got[len(got)-1].RowsDone != n-1 {
		t.Fatalf("LoadSamples: %d samples, the last %+v; want %d, the last of RowsDone %d", len(got), got[len(got)-1], lines, n-1)
	}
	for i := 1; i < len(got); i++ {
		if !got[i].Time.After(got[i-1].Time) {
			t.Fatalf("samples out of order at %d: %s after %s", i, got[i].Time, got[i-1].Time)
		}
	}
	// A resumed run (a new log, the same run) appends; another run
	// replaces the file with its own.
	if err := NewSampleLog(dir, time.Second).Append(ThroughputSample{Time: start.Add(n * time.Second), RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadSamples(dir, "r1"); len(got) != lines+1 {
		t.Errorf("after a resumed run's sample: %d samples, want %d", len(got), lines+1)
	}
	if err := NewSampleLog(dir, time.Second).Append(ThroughputSample{Time: start, RunID: "r2"}); err != nil {
		t.Fatal(err)
	}
	if r1, _ := LoadSamples(dir, "r1"); len(r1) != 0 {
		t.Errorf("after another run's sample, %d of the old run's remain", len(r1))
	}
	if r2, _ := LoadSamples(dir, "r2"); len(r2) != 1 {
		t.Errorf("the new run's samples: %d, want 1", len(r2))
	}
	if s, err := LoadSamples(t.TempDir(), "r1"); err != nil || s != nil {
		t.Errorf("no file: %v, %v; want none and no error", s, err)
	}
}
