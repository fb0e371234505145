package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRUDuration(t *testing.T) {
	for _, c := range []struct {
		ru    int64
		maxRU float64
		want  string
	}{
		{720000, 1000, "≈ 12 min at 1,000 RU/s"},
		{50, 1000, "≈ 1 s at 1,000 RU/s"},
		{36_000_000, 5000, "≈ 2 h 00 min at 5,000 RU/s"},
		{45_000_000, 4000, "≈ 3 h 08 min at 4,000 RU/s"},
		{1000, 2.5, "≈ 7 min at 2.5 RU/s"},
		{1000, 0, "pass --max-ru N to see how long that takes at N RU/s"},
	} {
		if got := ruDuration(c.ru, c.maxRU); got != c.want {
			t.Errorf("ruDuration(%d, %g) = %q, want %q", c.ru, c.maxRU, got, c.want)
		}
	}
}

func TestMaxRUMustBePositive(t *testing.T) {
	for _, v := range []string{"0", "-5", "+Inf"} {
		f, _, errOut := newTestFactory(nil)
		code := Execute(context.Background(), f, []string{"run", "--max-ru", v})
		want := "bifrost-migrate: --max-ru \"" + v + "\": want a positive number of request units per second\n"
		if code != ExitUsage || !strings.HasPrefix(errOut.String(), want) {
			t.Errorf("--max-ru %s: exit %d, stderr %q; want 2 and %q…", v, code, errOut, want)
		}
	}
}

// JSON progress lines carry the RU/s and the throttled share, and their
// rate counts only the rows of this invocation.
func TestJSONProgressAfterAResume(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	p := newJSONProgress(newJSONLines(&out), func() time.Time { return now }, func() liveFigures { return liveFigures{ruPerSecond: 950, throttledShare: 0.02} })
	p.Resumed("Entities", 1_000_000)
	now = now.Add(2 * time.Second)
	p.Advance("Entities", 1000)
	var line tableProgress
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line.Done != 1_001_000 || line.RowsPerSecond != 500 || *line.RUPerSecond != 950 || *line.ThrottledShare != 0.02 {
		t.Errorf("line %s: want done 1001000, 500 rows/s, 950 RU/s, 0.02 throttled", out.Bytes())
	}
}
