package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

// --log-file keeps a timestamped line per page, retry, dead letter and
// checkpoint, and never a piece of a key.
func TestRunLogFile(t *testing.T) {
	t.Parallel()
	src := newResSource(t, 200, 5, resNow, 1)
	// A few 429s make retry lines; the pacer is tested against the
	// simulated account (run_ru_test.go), not here.
	proxy, err := faultproxy.Start(faultproxy.Config{
		Target: src.cosmos.Endpoint, Seed: 3,
		Rules: []faultproxy.Rule{{Kind: faultproxy.Throttle, Share: 1, Count: 3, RetryAfter: 5 * time.Millisecond}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	db := src.newDatabase()
	logPath := filepath.Join(t.TempDir(), "run.log")
	code, _, stderr := resExecute(src.env(proxy.URL()), nil, src.runArgs(db, 0, filepath.Join(t.TempDir(), "state"), "--log-file", logPath)...)
	if code != cmd.ExitPartial { // the fixtures hold rows that are dead-lettered on purpose
		t.Fatalf("run: exit %d, want 3\n%s", code, stderr)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `)
	seen := map[string]int{}
	for _, l := range lines {
		if !stamp.MatchString(l) {
			t.Errorf("line without a timestamp: %q", l)
			continue
		}
		for _, what := range []string{"start: ", "page of ", "retry Cosmos DB ", "retry cosmos upsert ", "dead letter ", "checkpoint ", "end: "} {
			if strings.Contains(l, what) {
				seen[what]++
			}
		}
	}
	for _, what := range []string{"start: ", "page of ", "dead letter ", "checkpoint ", "end: "} {
		if seen[what] == 0 {
			t.Errorf("no %q line in the log:\n%s", what, b)
		}
	}
	if seen["retry Cosmos DB "]+seen["retry cosmos upsert "] == 0 || proxy.Injected(faultproxy.Throttle) == 0 {
		t.Errorf("no retry line (%d 429s injected):\n%s", proxy.Injected(faultproxy.Throttle), b)
	}
	for _, key := range []string{src.storage.Key, src.cosmos.Key, azure.DevStorageKey, azure.EmulatorCosmosKey} {
		for i := 0; i+12 <= len(key); i++ {
			if strings.Contains(string(b), key[i:i+12]) {
				t.Fatalf("the log holds %q, a piece of a key", key[i:i+12])
			}
		}
	}
	t.Logf("%d lines: %v", len(lines), seen)
}
