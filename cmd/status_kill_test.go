package cmd_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/transform"
)

// A run SIGKILLed after its first checkpoint reads as interrupted: not
// complete, no process holds the lock (the last holder named), and the
// next step is to run again with the options that differ from run's
// defaults; status sends no request (every service at a closed port).
func TestStatusOfAKilledRun(t *testing.T) {
	t.Parallel()
	bin := testenv.Build(t)
	src := newResSource(t, 300, 11, time.Now().UTC(), 1)
	p := newResProc(t, src, bin)
	db := src.newDatabase()
	dir := filepath.Join(t.TempDir(), "state")
	configDone := func(st *migrate.State) bool { return tableRows(st, transform.TableConfig) > 0 && !st.Done }
	r := p.run(killTrigger{writeDelay: 20 * time.Millisecond, state: configDone}, syscall.SIGKILL, dir,
		src.runArgs(db, 0, dir, "--execution-ttl", "full"))
	if !r.signaled {
		t.Fatalf("run was not killed: exit %d: %s", r.code, r.stderr)
	}
	st, err := migrate.LoadState(dir)
	if err != nil || st == nil || st.Done {
		t.Fatalf("state after the kill: %+v, %v", st, err)
	}
	lock, err := migrate.ReadLock(dir)
	if err != nil || lock.Held || lock.Command != "run" || lock.PID <= 0 {
		t.Fatalf("lock after the kill: %+v, %v", lock, err)
	}

	env := map[string]string{
		"BIFROST_TABLES_CONNECTION": "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azure.DevStorageKey +
			";TableEndpoint=http://" + testenv.ClosedPort(t) + "/devstoreaccount1;BlobEndpoint=http://" + testenv.ClosedPort(t) + "/devstoreaccount1;",
		"CosmosDBConnection": "AccountEndpoint=http://" + testenv.ClosedPort(t) + "/;AccountKey=" + azure.EmulatorCosmosKey + ";",
	}
	code, out, errOut := resExecute(env, testenv.NoRequests{T: t}, "status", "--state-dir", dir)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"run " + st.RunID + ": interrupted: not complete, and no process holds the lock",
		"  started " + st.Started.UTC().Format(time.RFC3339) + ", last checkpoint " + st.Updated.UTC().Format(time.RFC3339) + ", by bifrost-migrate " + st.ToolVersion,
		fmt.Sprintf("  Config         done      %d    ", tableRows(st, transform.TableConfig)),
		"  Relationships  not done  0     0    0              0               0        0",
		fmt.Sprintf("lock: not held (last held by bifrost-migrate run, PID %d, since %s)", lock.PID, lock.Since.UTC().Format(time.RFC3339)),
		"next: bifrost-migrate run --state-dir " + dir + " --execution-ttl full --database " + db + ": run again to resume",
	} {
		if !strings.Contains("\n"+out, "\n"+want) {
			t.Errorf("status does not say\n%s\nin:\n%s", want, out)
		}
	}
}
