package ui

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testProgress is a Progress of "run" on fake streams and a fake clock,
// whose timers never fire during a test (its lines are printed by
// calling printLine): stdout, stderr, the clock.
func testProgress(t *testing.T, asJSON, terminal bool, width int) (*Progress, *testenv.Buffer, *testenv.Buffer, *fakeClock) {
	t.Helper()
	var out, errOut testenv.Buffer
	clock := newFakeClock()
	p, err := Start(Config{
		Name: "run", Words: RowsToDocs, Out: NewOutput("run", &out, &errOut, asJSON, false, nil),
		Stamp: clock.now, Clock: clock.now, Interval: time.Hour, Terminal: terminal, Width: func() int { return width },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Finish)
	return p, &out, &errOut, clock
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// A progress line comes at each interval whatever the rate: before any
// checkpoint it says the rows read, and before any table what the
// command is at.
func TestProgressLineBeforeAnyCheckpoint(t *testing.T) {
	p, _, errOut, clock := testProgress(t, false, false, 0)
	clock.add(2 * time.Second)
	p.printLine()
	if got, want := lastLine(errOut.String()), "2026-11-21T12:00:02Z run: starting (for 2s)"; got != want {
		t.Errorf("before any table:\n got %q\nwant %q", got, want)
	}
	p.Counting([]string{"Config", "Entities"})
	p.Total("Config", 3000)
	p.Read("Config", 1000)
	p.Outcome("Config", migrate.Outcome{Written: 96})
	clock.add(10 * time.Second)
	p.printLine()
	want := "2026-11-21T12:00:12Z run: Config 0/3,000 rows (0%), 1,000 read; 0 in all; 96 docs written; 0 rows/s; ETA unknown until every table is counted"
	if got := lastLine(errOut.String()); got != want {
		t.Errorf("before the first checkpoint:\n got %q\nwant %q", got, want)
	}
}

// inAll reads "N/T (P%) in all" from a progress line: T and P are -1
// when the line has no total.
var inAll = regexp.MustCompile(`; ([\d,]+)(?:/([\d,]+) \((\d+)%\))? in all;`)

func number(s string) int64 {
	if s == "" {
		return -1
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// The total over every table and its percentage are shown once every
// table's pre-count arrived, and never fall from one line to the next:
// not when the last count arrives late (issue 40: "10,725/20,000 (53%)"
// then "13,725/100,000 (13%)"), not when a table ends with more rows
// than it was counted with, not when a count arrives after its table
// ended with fewer.
func TestTotalAndPercentageNeverFall(t *testing.T) {
	p, _, errOut, clock := testProgress(t, false, false, 0)
	p.Counting([]string{"Config", "Entities", "Relationships"})
	steps := []func(){
		func() { p.Total("Entities", 15_000) },
		func() { p.Advance("Config", 700) }, // Config's count is late
		func() { p.Advance("Config", 300); p.TableDone("Config") },
		func() { p.Total("Config", 1200) }, // after its table ended, with fewer rows
		func() { p.Advance("Entities", 9000) },
		func() { p.Total("Relationships", 80_000) }, // the last count
		func() { p.Advance("Entities", 6000) },
		func() { p.Advance("Entities", 500) }, // more than counted
		func() { p.TableDone("Entities") },
		func() { p.Advance("Relationships", 40_000) },
		func() { p.Advance("Relationships", 39_000); p.TableDone("Relationships") },
	}
	var lines []string
	for _, step := range steps {
		step()
		clock.add(time.Second)
		p.printLine()
		lines = append(lines, lastLine(errOut.String()))
	}
	var prevTotal, prevPct int64 = -1, -1
	shown := false
	for i, l := range lines {
		m := inAll.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %d has no 'in all': %q", i, l)
		}
		total, pct := number(m[2]), number(m[3])
		if shown && total < 0 {
			t.Errorf("line %d: the total vanished: %q", i, l)
		}
		if total >= 0 {
			shown = true
			if total < prevTotal || pct < prevPct {
				t.Errorf("line %d: %d (%d%%) after %d (%d%%): %q", i, total, pct, prevTotal, prevPct, l)
			}
			prevTotal, prevPct = total, pct
		}
		if strings.Contains(l, "ETA ") != true || (total < 0) != strings.Contains(l, "ETA unknown until every table is counted") {
			t.Errorf("line %d: an ETA without every total, or none with them: %q", i, l)
		}
	}
	if !shown || prevPct != 100 {
		t.Errorf("the lines end at %d%% of %d, want 100%%:\n%s", prevPct, prevTotal, strings.Join(lines, "\n"))
	}
	// The total appears only once Relationships was counted.
	if m := inAll.FindStringSubmatch(lines[4]); m[2] != "" {
		t.Errorf("a total before the last count: %q", lines[4])
	}
	if m := inAll.FindStringSubmatch(lines[5]); m[1] != "10,200" || m[2] != "96,200" || m[3] != "10" {
		t.Errorf("the first total: %q, want 10,200/96,200 (10%%): Config ended at 1,000 of 1,200 counted, Entities 9,000/15,000, Relationships 0/80,000", lines[5])
	}
}

// JSON progress lines carry the rows read, and their rate counts only
// the rows of this invocation; a table's line comes at an interval
// without an advance too.
func TestJSONProgressAfterAResume(t *testing.T) {
	p, out, errOut, clock := testProgress(t, true, false, 0)
	p.Resumed("Entities", 1_000_000)
	p.Read("Entities", 1500)
	clock.add(2 * time.Second)
	p.Advance("Entities", 1000)
	var line TableProgress
	if err := json.Unmarshal([]byte(lastLine(out.String())), &line); err != nil {
		t.Fatal(err)
	}
	if line.Done != 1_001_000 || line.Read != 1500 || line.RowsPerSecond != 500 || line.Total != nil || line.Finished {
		t.Errorf("line %s: want done 1001000, read 1500, 500 rows/s, no total, not finished", lastLine(out.String()))
	}
	p.Read("Entities", 1000)
	clock.add(time.Hour)
	p.printLine()
	if err := json.Unmarshal([]byte(lastLine(out.String())), &line); err != nil || line.Read != 2500 {
		t.Errorf("no line at the interval: %s (%v)", out.String(), err)
	}
	if errOut.String() != "" {
		t.Errorf("--output json: stderr %q", errOut.String())
	}
}

// The passes of --follow show progress lines during passes only, with
// what every pass wrote, and no JSON progress lines and no engine
// messages; OnWork's function runs once, at the first report.
func TestProgressWhileFollowing(t *testing.T) {
	p, out, errOut, clock := testProgress(t, false, false, 0)
	p.Following(clock.now())
	calls := 0
	p.OnWork(func() { calls++ })
	p.printLine() // before the first pass: none
	p.PassStarted()
	p.Advance("Entities", 3)
	p.Outcome("Entities", migrate.Outcome{Written: 3})
	p.Message("prune: listing migrated docs")
	clock.add(time.Second)
	p.printLine()
	p.TableDone("Entities")
	p.PassEnded(migrate.PassReport{Pass: 1})
	clock.add(time.Minute)
	p.printLine() // between passes: none
	p.PassStarted()
	p.Advance("Entities", 1)
	p.Outcome("Entities", migrate.Outcome{Written: 1})
	clock.add(time.Second)
	p.printLine()
	if calls != 1 {
		t.Errorf("OnWork's function ran %d times, want once", calls)
	}
	want := "2026-11-21T12:00:01Z run: Entities 3 rows; 3 docs written; 3 rows/s; ETA unknown\n" +
		"2026-11-21T12:01:02Z run: Entities 1 rows; 4 docs written; 0 rows/s; ETA unknown\n"
	if out.String() != "" || errOut.String() != want {
		t.Errorf("following: stdout %q, stderr\n%s\nwant\n%s", out.String(), errOut.String(), want)
	}
}

// A bar on a terminal: drawn in place, kept as a line when its table is
// done, with the status lines above it.
func TestBarOnATerminal(t *testing.T) {
	p, _, errOut, clock := testProgress(t, false, true, 80)
	p.Counting([]string{"Config"})
	// A table done in an earlier session, and an empty one.
	p.Resumed("Relationships", 7)
	p.TableDone("Relationships")
	p.TableDone("Entities")
	p.Total("Config", 3000)
	clock.add(time.Second)
	p.Advance("Config", 1500)
	clock.add(time.Second)
	p.drawBar()
	p.Message("resuming")
	clock.add(time.Second)
	p.Advance("Config", 1500)
	p.TableDone("Config")
	want := eraseLine + "Relationships  [==========]  100%  7/7 rows  done earlier\n" +
		eraseLine + "Entities       [==========]  100%  0/0 rows  0 rows/s  in 0s\n" +
		eraseLine + "Config         [=====>    ]   50%  1,500/3,000 rows  750 rows/s  ETA 1s" +
		eraseLine + "run: resuming\n" + "Config         [=====>    ]   50%  1,500/3,000 rows  750 rows/s  ETA 1s" +
		eraseLine + "Config         [==========]  100%  3,000/3,000 rows  1,000 rows/s  in 3s\n"
	if got := errOut.String(); got != want {
		t.Errorf("stderr:\n got %q\nwant %q", got, want)
	}
}
