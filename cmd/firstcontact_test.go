package cmd

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// The start-up checks follow the fault model (docs/engine.md, "Faults"):
// a busy endpoint at first contact is waited for, said in a status line;
// a closed port, an unknown host, a failed TLS handshake and refused
// credentials end the command at once, in one sentence.

func TestRetryLine(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "http://127.0.0.1:1/x", Err: err} }
	for _, c := range []struct {
		fault *store.Fault
		want  string
	}{
		{&store.Fault{Kind: store.Transient, Status: 503}, "answered 503 Service Unavailable"},
		{&store.Fault{Kind: store.Throttled, Status: 429}, "answered 429 Too Many Requests"},
		{&store.Fault{Kind: store.Transient, Err: urlErr(io.EOF)}, "closed the connection without an answer"},
		{&store.Fault{Kind: store.Transient, Err: urlErr(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)})}, "reset the connection"},
		{&store.Fault{Kind: store.Transient, Err: fmt.Errorf("attempt: %w", context.DeadlineExceeded)}, "gave no answer in time"},
		{&store.Fault{Kind: store.Transient, Err: urlErr(&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)})}, "failed (write: broken pipe)"},
	} {
		want := "Table Storage at 127.0.0.1:1 " + c.want + "; trying again (up to 20 s)"
		if got := retryLine("Table Storage", "127.0.0.1:1", c.fault); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// A TLS failure is one sentence naming the endpoint and what to check:
// a self-signed certificate on a host name that is not an emulator's,
// and an https endpoint that speaks plain HTTP. Each is tried once.
func TestTLSFailureIsOneSentence(t *testing.T) {
	var handshakes int
	selfSigned := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	selfSigned.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	selfSigned.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			handshakes++
		}
	}
	selfSigned.StartTLS()
	defer selfSigned.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plain.Close()
	// The verifying transport of every endpoint but an emulator's on a
	// loopback address, with the test's host names reached at its servers.
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		to := plain.Listener.Addr().String()
		if strings.HasPrefix(addr, "cosmos.bifrost.test:") {
			to = selfSigned.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, to)
	}}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"self-signed", map[string]string{"CosmosDBConnection": "AccountEndpoint=https://cosmos.bifrost.test/;AccountKey=" + azure.EmulatorCosmosKey + ";"},
			[]string{"init"},
			"bifrost-migrate: cannot use Cosmos DB at cosmos.bifrost.test:443: its TLS certificate is not trusted here; check that the host name in " +
				cosmosSettings + " is the service's and that this machine trusts its certificate (TLS is verified for every endpoint but an emulator's on a loopback address)\n"},
		{"plain HTTP", map[string]string{"BIFROST_TABLES_CONNECTION": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + azure.DevStorageKey +
			";TableEndpoint=https://tables.bifrost.test/acct;BlobEndpoint=https://tables.bifrost.test/acct;"},
			[]string{"fixtures", "load", "--account", "acct"},
			"bifrost-migrate: cannot use Table Storage at tables.bifrost.test:443: it does not speak TLS, and the endpoint says https; " +
				"check the endpoint's scheme (http or https) in " + tablesSettings + "\n" +
				"cannot use Blob Storage at tables.bifrost.test:443: it does not speak TLS, and the endpoint says https; " +
				"check the endpoint's scheme (http or https) in " + blobSettings + "\n"},
	} {
		f, out, errOut := newTestFactory(c.env)
		f.Transport = transport
		start := time.Now()
		code := Execute(context.Background(), f, c.args)
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s: took %v, want < 30 s", c.name, d)
		}
		if code != ExitFatal || errOut.String() != c.want || out.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and exactly:\n%s", c.name, code, out, errOut, c.want)
		}
	}
	if handshakes != 1 {
		t.Errorf("%d TLS handshakes with the self-signed server, want 1 (no retry)", handshakes)
	}
}

// firstContactWorld is one run of the commands' story on names of its
// own: the fixtures in tables and blobs, and every command's database,
// state directory and window times.
type firstContactWorld struct {
	*reverseEnv
	bin string
	// name is "calm" or "busy", for the messages; window is the --since
	// of the next replay or reverse.
	name, window string
}

// newFirstContactWorld loads the fixtures under fresh names (nothing
// else: init and run are the story's own steps).
func newFirstContactWorld(t *testing.T, name, bin string) *firstContactWorld {
	t.Helper()
	ve := &verifyEnv{
		t:        t,
		env:      map[string]string{"BIFROST_TABLES_CONNECTION": testenv.StorageConnection(t), "CosmosDBConnection": testenv.CosmosConnection(t)},
		prefix:   testenv.Name("fc"),
		db:       testenv.Name("firstcontact"),
		blobs:    testenv.Name("fcblobs"),
		stateDir: filepath.Join(t.TempDir(), "state"),
		acct:     testenv.Storage(t),
	}
	var err error
	if ve.cosmos, err = azure.NewCosmosClient(testenv.Cosmos(t), azure.Options{}); err != nil {
		t.Fatal(err)
	}
	tables, err := azure.NewTablesClient(ve.acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(context.Background())
		if db, err := ve.cosmos.NewDatabase(ve.db); err == nil {
			_, _ = db.Delete(ctx, nil)
		}
		if bw, err := azure.NewBlobWriter(ve.acct, ve.blobs, azure.Options{}); err == nil {
			_ = bw.Delete(ctx)
		}
		for _, table := range fixtures.Tables() {
			_, _ = tables.DeleteTable(ctx, ve.prefix+table, nil)
		}
	})
	ve.loadFixtures()
	return &firstContactWorld{reverseEnv: &reverseEnv{replayEnv: &replayEnv{verifyEnv: ve, tables: tables}}, bin: bin, name: name}
}

// args are the command's arguments with the world's names.
func (w *firstContactWorld) args(command ...string) []string {
	args := append(slices.Clone(command), "--database", w.db)
	if command[0] == "init" {
		return args
	}
	args = append(args, "--table-prefix", w.prefix, "--blob-container", w.blobs)
	if !slices.Contains(command, "--dry-run") {
		args = append(args, "--state-dir", w.stateDir)
	}
	return args
}

// run runs the binary in the world's environment with env's settings
// over it.
func (w *firstContactWorld) run(env map[string]string, args []string) (int, string, string) {
	w.t.Helper()
	all := os.Environ()
	for _, m := range []map[string]string{w.env, env} {
		for k, v := range m {
			all = append(all, k+"="+v)
		}
	}
	return runBinary(w.t, w.bin, all, args...)
}

// busyProxies are the proxies before Table Storage, Blob Storage and
// Cosmos DB (with the change feed the stand-in lacks) for one command:
// each answers its first request 503 and closes the connection of its
// second without an answer.
type busyProxies struct {
	tables, blobs, cosmos *faultproxy.Proxy
}

func newBusyProxies(t *testing.T) busyProxies {
	t.Helper()
	acct := testenv.Storage(t)
	first := []faultproxy.Kind{faultproxy.Unavailable, faultproxy.CloseBefore}
	start := func(target string, cf *faultproxy.ChangeFeed) *faultproxy.Proxy {
		u, err := url.Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		p, err := faultproxy.Start(faultproxy.Config{Target: u.Scheme + "://" + u.Host, First: first, ChangeFeed: cf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	return busyProxies{
		tables: start(acct.TableEndpoint, nil),
		blobs:  start(acct.BlobEndpoint, nil),
		cosmos: start(testenv.Cosmos(t).Endpoint, &faultproxy.ChangeFeed{Ranges: 2}),
	}
}

// env points the settings at the proxies.
func (b busyProxies) env() map[string]string {
	hp := func(p *faultproxy.Proxy) string { return hostPort(p.URL()) }
	return map[string]string{
		"BIFROST_TABLES_CONNECTION": storageAt(hp(b.tables), hp(b.blobs)),
		"CosmosDBConnection":        "AccountEndpoint=" + b.cosmos.URL() + ";AccountKey=" + azure.EmulatorCosmosKey + ";",
	}
}

// check reports, for each proxy a command used, whether it got its 503
// and its closed connection and the command said so on stderr.
func (b busyProxies) check(t *testing.T, what, stderr string) {
	t.Helper()
	for _, s := range []struct {
		service string
		p       *faultproxy.Proxy
	}{{"Table Storage", b.tables}, {"Blob Storage", b.blobs}, {"Cosmos DB", b.cosmos}} {
		if s.p.Forwarded() == 0 {
			continue
		}
		if s.p.Injected(faultproxy.Unavailable) != 1 || s.p.Injected(faultproxy.CloseBefore) != 1 {
			t.Errorf("%s: %s got %v, want one 503 and one closed connection", what, s.service, s.p.Counts())
		}
		at := s.service + " at " + hostPort(s.p.URL())
		for _, line := range []string{at + " answered 503 Service Unavailable; trying again (up to 20 s)\n",
			at + " closed the connection without an answer; trying again (up to 20 s)\n"} {
			if !strings.Contains(stderr, line) {
				t.Errorf("%s: stderr does not say %q:\n%s", what, line, stderr)
			}
		}
	}
}

// TestEveryCommandWaitsForABusyFirstContact: every command, the built
// binary, whose first request to Table Storage, Blob Storage and Cosmos
// DB gets a 503 and whose second a connection closed without an answer
// (the fault proxy) does its work and exits as the same command in a
// world without those faults; run's docs are all correct (verify agrees),
// replay and reverse write what they should. A closed port still ends a
// command at once, naming the setting.
func TestEveryCommandWaitsForABusyFirstContact(t *testing.T) {
	t.Parallel()
	bin := testenv.Build(t)
	calm, busy := newFirstContactWorld(t, "calm", bin), newFirstContactWorld(t, "busy", bin)
	// The calm world reaches Cosmos DB through a proxy too, for the
	// change feed, but one without faults.
	feed, err := faultproxy.Start(faultproxy.Config{Target: testenv.Cosmos(t).Endpoint, ChangeFeed: &faultproxy.ChangeFeed{Ranges: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = feed.Close() })
	calm.env["CosmosDBConnection"] = "AccountEndpoint=" + feed.URL() + ";AccountKey=" + azure.EmulatorCosmosKey + ";"

	for _, step := range []struct {
		command []string
		before  func(w *firstContactWorld) // a change to the world before the command, in both
		after   func(w *firstContactWorld, stderr string)
	}{
		{command: []string{"init"}},
		{command: []string{"run", "--dry-run"}},
		{command: []string{"run"}},
		{command: []string{"verify"}, after: func(w *firstContactWorld, stderr string) {
			// The rows run dead-lettered are not migrated; every doc is right.
			if !strings.Contains(stderr, "row(s) not migrated (dead letters; see "+filepath.Join(w.stateDir, "dead-letter.jsonl")+"), 0 missing, 0 different and 0 orphan doc(s)\n") {
				w.t.Errorf("%s verify: run's docs are not all correct:\n%s", w.name, stderr)
			}
		}},
		{command: []string{"replay"}, before: func(w *firstContactWorld) {
			w.window = w.since()
			w.mergeRow(transform.TableConfig, "GLOBAL", smtpRK, map[string]any{"Value": "smtp2.contoso.example", "Description": "moved during the rollback"})
		}, after: func(w *firstContactWorld, _ string) {
			if d := w.readDoc(transform.ContainerEntities, "GLOBAL", smtpID); d["description"] != "moved during the rollback" {
				w.t.Errorf("%s replay did not write the changed row's doc: %v", w.name, d)
			}
		}},
		{command: []string{"reverse"}, before: func(w *firstContactWorld) {
			w.window = w.since()
			alice := w.readDoc(transform.ContainerEntities, "GLOBAL", aliceID)
			alice["displayName"] = "Alice Renamed"
			w.appWrite(transform.ContainerEntities, alice)
		}, after: func(w *firstContactWorld, _ string) {
			raw, err := w.tables.NewClient(w.prefix+transform.TableEntities).GetEntity(context.Background(), "GLOBAL", aliceRK, &aztables.GetEntityOptions{})
			if err != nil || !strings.Contains(string(raw.Value), `"DisplayName":"Alice Renamed"`) {
				w.t.Errorf("%s reverse did not write the doc back to its row: %v\n%s", w.name, err, raw.Value)
			}
		}},
	} {
		if step.before != nil {
			step.before(calm)
			step.before(busy)
		}
		args := func(w *firstContactWorld) []string {
			if step.command[0] == "replay" || step.command[0] == "reverse" {
				return w.args(step.command[0], "--since", w.window)
			}
			return w.args(step.command...)
		}
		what := strings.Join(step.command, " ")
		want, calmOut, calmErr := calm.run(nil, args(calm))
		proxies := newBusyProxies(t)
		code, stdout, stderr := busy.run(proxies.env(), args(busy))
		if code != want {
			t.Fatalf("%s: exit %d through the faults, %d without them\nstdout:\n%s\nstderr:\n%s\nwithout them:\n%s%s", what, code, want, stdout, stderr, calmOut, calmErr)
		}
		if want != ExitOK && want != ExitPartial {
			t.Fatalf("%s: exit %d without faults, want 0 or 3:\n%s%s", what, want, calmOut, calmErr)
		}
		proxies.check(t, what, stderr)
		if proxies.tables.Forwarded()+proxies.cosmos.Forwarded() == 0 {
			t.Errorf("%s: reached neither Table Storage nor Cosmos DB through the proxies", what)
		}
		if step.after != nil {
			step.after(calm, calmErr)
			step.after(busy, stderr)
		}
	}

	// A closed port: exit 1 at once, naming the setting, no retry.
	closed := testenv.ClosedPort(t)
	start := time.Now()
	code, _, stderr := busy.run(map[string]string{"BIFROST_TABLES_CONNECTION": storageAt(closed, hostPort(busy.acct.BlobEndpoint))}, busy.args("verify"))
	// The acceptance's "within 1 s" is what it takes on an idle machine
	// (about 10 ms); the bound is a hang bound that a retry, which waits
	// up to 20 s, would still break, not a measure of the machine's load.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a closed port: took %v, want at once (no retry)", d)
	}
	t.Logf("a closed port failed after %v", time.Since(start))
	if want := "bifrost-migrate: cannot use Table Storage at " + closed + ": connection refused; check " + tablesSettings + "\n"; code != ExitFatal || !strings.HasSuffix(stderr, want) || strings.Contains(stderr, "trying again") {
		t.Errorf("a closed port: exit %d, stderr:\n%s\nwant exit 1, no retry, and the last line\n%s", code, stderr, want)
	}
}
