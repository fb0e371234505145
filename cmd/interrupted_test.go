package cmd

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/transform"
)

// interruptAtFirstWrite is a transport that interrupts a command (cancel,
// as SIGINT cancels the root context) at its first write, which then
// fails: the command stops before anything is counted.
type interruptAtFirstWrite struct {
	cancel context.CancelFunc
	once   sync.Once
	hit    bool
}

func (t *interruptAtFirstWrite) RoundTrip(req *http.Request) (*http.Response, error) {
	write := req.Method != http.MethodGet && req.Method != http.MethodHead &&
		!(req.Method == http.MethodPost && req.Header.Get("x-ms-documentdb-isquery") != "")
	if write {
		t.once.Do(func() {
			t.hit = true
			t.cancel()
		})
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestInterruptedWindowPrintsItsSummary (issue 40): a replay and a
// reverse interrupted at their first write, before anything is counted,
// print their summary, whose last line says they are not complete and
// what to do, and exit 130 with the interruption's sentence (run's is
// TestRunProgressFromTheFirstSecond, through the binary).
func TestInterruptedWindowPrintsItsSummary(t *testing.T) {
	e := newReverseEnvWith(t, faultproxy.Config{ChangeFeed: &faultproxy.ChangeFeed{Ranges: 2}})
	since := e.since()
	// Work for both: rows the application changed in the tables (replay)
	// and docs it changed in Cosmos DB (reverse).
	e.mergeRow(transform.TableConfig, "GLOBAL", smtpRK, map[string]any{"Value": "smtp2.contoso.example"})
	e.applicationWrites()
	for _, c := range []struct {
		args      []string
		last, err string
	}{
		{e.replayArgs("--since", since), "replay: not complete: run it again with the same --since to finish",
			"bifrost-migrate: interrupted: " + replayWords.rerun + "\n"},
		{e.reverseArgs(since), "reverse: not complete: run it again with the same --since to finish",
			"bifrost-migrate: interrupted: " + reverseWords.rerun + "\n"},
	} {
		f, out, errOut := newTestFactory(e.env)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		tr := &interruptAtFirstWrite{cancel: cancel}
		f.Transport = tr
		code := Execute(ctx, f, c.args)
		cancel()
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		switch {
		case !tr.hit:
			t.Errorf("%s: no write to interrupt; exit %d:\n%s%s", c.args[0], code, out, errOut)
		case code != ExitInterrupted:
			t.Errorf("%s: exit %d, want %d:\n%s", c.args[0], code, ExitInterrupted, errOut)
		case lines[len(lines)-1] != c.last:
			t.Errorf("%s: stdout ends with %q, want %q:\n%s", c.args[0], lines[len(lines)-1], c.last, out)
		case !strings.HasSuffix(errOut.String(), c.err):
			t.Errorf("%s: stderr\n%s\nwant it to end with\n%s", c.args[0], errOut, c.err)
		}
		t.Logf("%s, interrupted:\n%s", c.args[0], out)
	}
}
