package cmd_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

// ruExecutions is the size of the RU tests' source: enough executions for
// a run of about a minute at 1,000 RU/s (each doc costs about 15 RU in the
// simulated account: 5 RU per started KB).
const ruExecutions = 4000

// loadRUSource starts loading ruExecutions generated executions (with
// their index rows and blobs) into fresh tables, with an empty Config
// table, so that a run has nothing to dead-letter; the function it
// returns waits for the load. Called before t.Parallel, the load runs
// while the test waits for its turn among the parallel tests, so that
// its outage run, the package's longest, starts sooner.
func loadRUSource(t *testing.T) func() *resSource {
	t.Helper()
	s, tw, blobs := newRateWriters(t, "ru", 1)
	ctx := context.Background()
	if err := tw.CreateTable(ctx, s.prefix+fixtures.TableConfig); err != nil {
		t.Fatal(err)
	}
	loaded := make(chan error, 1)
	go func() {
		_, err := fixtures.LoadGenerated(ctx, tw, blobs, fixtures.GenerateOptions{N: ruExecutions, Seed: 3, Base: resNow},
			fixtures.LoadOptions{TablePrefix: s.prefix})
		loaded <- err
	}()
	return func() *resSource {
		t.Helper()
		if err := <-loaded; err != nil {
			t.Fatalf("load %d generated executions: %v", ruExecutions, err)
		}
		return s
	}
}

// rates is held by a test while it measures a rate: such tests run
// beside the functional tests, not beside each other. The emulators are
// single processes on a 2-core machine; two runs each asking for
// thousands of RU/s from them would measure each other.
var rates sync.Mutex

// measuring makes t the one test measuring a rate until it ends.
func measuring(t *testing.T) {
	t.Helper()
	rates.Lock()
	t.Cleanup(rates.Unlock)
}

// ruFigures are what the simulated account saw of one consumer's writes.
type ruFigures struct {
	ru                  float64
	attempts, throttled int
	seconds             float64
	maxWindow           float64 // the most RU in any 5-second window
}

func (f ruFigures) mean() float64 { return f.ru / f.seconds }
func (f ruFigures) share() float64 {
	if f.attempts == 0 {
		return 0
	}
	return float64(f.throttled) / float64(f.attempts)
}

func (f ruFigures) String() string {
	return fmt.Sprintf("%.0f RU in %.1f s = %.0f RU/s; busiest 5 s: %.0f RU/s; %d of %d write attempts throttled (%.1f %%)",
		f.ru, f.seconds, f.mean(), f.maxWindow/5, f.throttled, f.attempts, 100*f.share())
}

func figures(p *faultproxy.Proxy, consumer string) ruFigures {
	ledger := p.Ledger()
	ru, attempts, throttled, first, last := faultproxy.Totals(ledger, consumer, true)
	return ruFigures{ru: ru, attempts: attempts, throttled: throttled, seconds: last.Sub(first).Seconds(),
		maxWindow: faultproxy.MaxWindow(ledger, consumer, 5*time.Second).RU}
}

// budgetProxy starts the simulated account of ruPerSecond in front of the
// Cosmos DB stand-in.
func budgetProxy(t *testing.T, s *resSource, ruPerSecond float64) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(faultproxy.Config{Target: s.cosmos.Endpoint, Budget: &faultproxy.Budget{RUPerSecond: ruPerSecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// runAndVerify runs `run` with extra flags into a fresh database through
// the proxy, then `verify` straight against the stand-in; both must exit 0.
func (s *resSource) runAndVerify(t *testing.T, p *faultproxy.Proxy, extra ...string) {
	t.Helper()
	db := s.newDatabase()
	code, stdout, stderr := resExecute(s.env(p.URL()), nil, s.runArgs(db, 0, filepath.Join(t.TempDir(), "state"), extra...)...)
	if code != cmd.ExitOK {
		t.Fatalf("run %v: exit %d\n%s", extra, code, stderr)
	}
	sum := resSummary(t, stdout)
	if !sum.Complete || sum.DocsWritten < ruExecutions {
		t.Fatalf("run: complete %v, %d docs written; want complete with %d", sum.Complete, sum.DocsWritten, ruExecutions)
	}
	code, _, stderr = resExecute(s.env(""), nil, "verify", "--database", db, "--table-prefix", s.prefix,
		"--blob-container", s.blobs[0], "--quiet")
	if code != cmd.ExitOK {
		t.Fatalf("verify after run %v: exit %d\n%s", extra, code, stderr)
	}
}

// TestRunUnderAnRUBudget runs `run` against a simulated account of 2,000
// RU/s (SPEC §14), three ways:
//
//   - with --max-ru 1000 while a simulated application draws 200 RU/s from
//     the same account: the application is (almost) never throttled, the
//     run uses ≥ 850 RU/s on average and no 5-second window above 1,100;
//   - with no --max-ru and nothing else on the account: the run finds the
//     account's limit, ≥ 1,700 RU/s on average, with ≤ 10 % of its write
//     attempts throttled;
//   - with the account's budget (6,000 RU/s) dropping to zero for 60 s in
//     the middle: the run waits it out and ends with exit 0.
//
// Every run is verified clean. The figures it logs are the RU benchmark
// of docs/performance.md.
//
// The two runs whose rates it measures take turns (measuring), with each
// other and, in ./bench.sh, with the full-size latency tests; the outage,
// which measures no rate, runs beside them.
func TestRunUnderAnRUBudget(t *testing.T) {
	loaded := loadRUSource(t)
	t.Parallel()
	s := loaded()

	// The three run side by side in the parent's turn among the parallel
	// tests: t.Parallel in a subtest would queue it behind every test
	// waiting for a turn (half a minute in ./test.sh), and the outage,
	// the package's longest test, would start that much later.
	var runs sync.WaitGroup
	defer runs.Wait()
	runs.Go(func() {
		t.Run("max-ru beside the application", func(t *testing.T) {
			p := budgetProxy(t, s, 2000)
			measuring(t)
			stop := p.StartApplication(200, 10)
			s.runAndVerify(t, p, "--max-ru", "1000")
			stop()
			run, app := figures(p, "client"), figures(p, "application")
			t.Logf("run --max-ru 1000 on an account of 2,000 RU/s beside an application drawing 200 RU/s: %s; mean %.2f of the cap", run, run.mean()/1000)
			t.Logf("the application: %s", app)
			if run.mean() < 850 {
				t.Errorf("the run's mean is %.0f RU/s, want ≥ 850", run.mean())
			}
			if run.maxWindow > 1100*5 {
				t.Errorf("the run used %.0f RU in one 5-second window, want ≤ 5,500", run.maxWindow)
			}
			if app.share() > 0.01 {
				t.Errorf("the application got %d 429s in %d attempts, want ≤ 1 %%", app.throttled, app.attempts)
			}
		})
	})

	runs.Go(func() {
		t.Run("adaptive", func(t *testing.T) {
			p := budgetProxy(t, s, 2000)
			measuring(t)
			s.runAndVerify(t, p)
			run := figures(p, "client")
			t.Logf("run without --max-ru on an account of 2,000 RU/s: %s; mean %.2f of the account", run, run.mean()/2000)
			if run.mean() < 1700 {
				t.Errorf("the run's mean is %.0f RU/s, want ≥ 1,700", run.mean())
			}
			if run.share() > 0.10 {
				t.Errorf("%.1f %% of the write attempts were throttled, want ≤ 10 %%", 100*run.share())
			}
		})
	})

	runs.Go(func() {
		t.Run("outage", func(t *testing.T) {
			// An account of 6,000 RU/s: this run measures no rate, and the
			// faster its writes around the 60 s, the sooner the suite ends.
			const budget = 6000
			p := budgetProxy(t, s, budget)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			outage := make(chan [2]time.Time, 1)
			go func() {
				// A third of the way through the writes, the account's budget
				// drops to zero for 60 s.
				for {
					select {
					case <-ctx.Done():
						return
					case <-time.After(100 * time.Millisecond):
					}
					if ru, _, _, _, _ := faultproxy.Totals(p.Ledger(), "client", true); ru >= ruExecutions*15/3 {
						break
					}
				}
				p.SetBudget(0)
				from := time.Now() // after: a request the old budget admitted is no charge of the outage
				select {
				case <-ctx.Done():
				case <-time.After(60 * time.Second):
				}
				p.SetBudget(budget)
				outage <- [2]time.Time{from, time.Now()}
			}()
			s.runAndVerify(t, p)
			var o [2]time.Time
			select {
			case o = <-outage:
			default:
				t.Fatal("the run ended before the outage was over: the test proved nothing")
			}
			var during, after float64
			for _, c := range p.Ledger() {
				switch {
				case c.Consumer != "client" || c.Throttled:
				case c.At.After(o[0]) && c.At.Before(o[1]):
					during += c.Cost
				case c.At.After(o[1]):
					after += c.Cost
				}
			}
			t.Logf("outage of %s: %.0f RU charged during it, %.0f after; %s", o[1].Sub(o[0]).Round(time.Second), during, after, figures(p, "client"))
			if during > 0 || after == 0 {
				t.Errorf("%.0f RU charged during the outage, %.0f after; want 0 during and the rest after", during, after)
			}
		})
	})
}
