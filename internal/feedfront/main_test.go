package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// hang bounds how long a test waits for the front to start or stop.
const hang = 30 * time.Second

// front is a feedfront run in this process.
type front struct {
	url    string
	stderr *bytes.Buffer
	cancel context.CancelFunc
	exit   chan int
}

// startFront runs feedfront with args until the test ends (or stop), and
// returns once it printed its line: the URL it serves.
func startFront(t *testing.T, args ...string) *front {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	f := &front{stderr: &bytes.Buffer{}, cancel: cancel, exit: make(chan int, 1)}
	go func() {
		f.exit <- run(ctx, args, pw, f.stderr)
		pw.Close()
	}()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case s := <-line:
		const pre = "feedfront: serving "
		if !strings.HasPrefix(s, pre) {
			cancel()
			t.Fatalf("first line %q, want %q…; stderr: %s", s, pre, f.stderr)
		}
		f.url, _, _ = strings.Cut(strings.TrimPrefix(s, pre), " ")
	case <-time.After(hang):
		cancel()
		t.Fatalf("feedfront did not print its line within %v", hang)
	}
	t.Cleanup(func() { f.stop(t) })
	return f
}

// stop cancels the front and returns its exit status (once; later calls
// return -1).
func (f *front) stop(t *testing.T) int {
	t.Helper()
	f.cancel()
	select {
	case code, ok := <-f.exit:
		if !ok {
			return -1
		}
		close(f.exit)
		return code
	case <-time.After(hang):
		t.Fatalf("feedfront did not stop within %v", hang)
		return -1
	}
}

// upstream answers GET / as the stand-in does (announcing its own
// address) and every other request with 200 and the request's path.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			fmt.Fprintf(w, `{"id":"acct","writableLocations":[{"name":"local","databaseAccountEndpoint":"http://%s/"}],"readableLocations":[]}`, r.Host)
			return
		}
		fmt.Fprintf(w, "upstream %s %s", r.Method, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFrontBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "feedfront: --target is required: the Cosmos DB stand-in's base URL, e.g. http://127.0.0.1:8081/\n"},
		{[]string{"--target", "https://127.0.0.1:8081/"}, `feedfront: --target "https://127.0.0.1:8081/" is not an http:// URL (the stand-in, started with --no-ssl)` + "\n"},
		{[]string{"--target", "127.0.0.1:8081"}, `feedfront: --target "127.0.0.1:8081" is not an http:// URL (the stand-in, started with --no-ssl)` + "\n"},
		{[]string{"--target", "http://127.0.0.1:1/", "--ranges", "0"}, "feedfront: --ranges 0 is not in 1..64\n"},
		{[]string{"--target", "http://127.0.0.1:1/", "extra"}, "feedfront: unexpected argument \"extra\"\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), c.args, &stdout, &stderr); code != 2 || stderr.String() != c.want || stdout.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--nope"}, &stdout, &stderr); code != 2 ||
		!strings.HasPrefix(stderr.String(), "flag provided but not defined: -nope\nUsage of feedfront:\n") {
		t.Errorf("--nope: exit %d, stderr %q; want 2 and the flag package's usage", code, stderr.String())
	}
}

func TestFrontAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--target", "http://127.0.0.1:1/", "--addr", addr}, &stdout, &stderr)
	want := "feedfront: faultproxy: listen: listen tcp " + addr + ": bind: address already in use\n"
	if code != 1 || stderr.String() != want || stdout.Len() > 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, stdout.String(), stderr.String(), want)
	}
}

// The front listens on the given address, forwards what it does not
// simulate, points the account's locations at itself, and stops with
// exit 0 when cancelled (then nothing listens there).
func TestFrontProxiesUntilStopped(t *testing.T) {
	up := upstream(t)
	addr := testenv.FreePort(t)
	f := startFront(t, "--target", up.URL+"/", "--addr", addr)
	if f.url != "http://"+addr+"/" {
		t.Fatalf("serving %q, want http://%s/", f.url, addr)
	}
	if got := get(t, f.url+"dbs/d/colls/c/docs/x"); got != "upstream GET /dbs/d/colls/c/docs/x" {
		t.Errorf("forwarded read: %q", got)
	}
	var acct struct {
		WritableLocations []struct{ DatabaseAccountEndpoint string }
	}
	if err := json.Unmarshal([]byte(get(t, f.url)), &acct); err != nil || len(acct.WritableLocations) != 1 ||
		acct.WritableLocations[0].DatabaseAccountEndpoint != f.url {
		t.Errorf("account: %+v (%v), want its location at %s", acct, err, f.url)
	}
	if code := f.stop(t); code != 0 || f.stderr.Len() > 0 {
		t.Errorf("stopped: exit %d, stderr %q; want 0, nothing", code, f.stderr)
	}
	if c, err := net.DialTimeout("tcp", addr, hang); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the front stopped", addr)
	}
}

// The built program, as the emulators script runs it: prints its line,
// serves, and ends with exit 0 on SIGTERM.
func TestFrontProgramStopsOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "feedfront")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	up := upstream(t)
	cmd := exec.Command(bin, "--target", up.URL+"/")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	var url string
	select {
	case s := <-line:
		url, _, _ = strings.Cut(strings.TrimPrefix(s, "feedfront: serving "), " ")
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			_ = cmd.Process.Kill()
			t.Fatalf("first line %q; stderr %s", s, &stderr)
		}
	case <-time.After(hang):
		_ = cmd.Process.Kill()
		t.Fatalf("no line within %v; stderr %s", hang, &stderr)
	}
	if got := get(t, url+"dbs"); got != "upstream GET /dbs" {
		t.Errorf("forwarded: %q", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || stderr.Len() > 0 {
			t.Errorf("after SIGTERM: %v, stderr %q; want exit 0, nothing", err, &stderr)
		}
	case <-time.After(hang):
		_ = cmd.Process.Kill()
		t.Fatalf("still running %v after SIGTERM", hang)
	}
}

// On the stand-in (test.sh's): the stand-in alone has no change feed;
// through the front, docs written through it come in the feed, from the
// beginning and then only what changed, at their latest version.
func TestFrontServesTheStandInsChangeFeed(t *testing.T) {
	acct := testenv.Cosmos(t)
	f := startFront(t, "--target", acct.Endpoint, "--ranges", "2")
	ctx := context.Background()
	through := acct
	through.Endpoint = f.url
	client, err := azure.NewCosmosClient(through, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dbName := testenv.Name("feedfront")
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: dbName}, nil); err != nil {
		t.Fatalf("create database through the front: %v", err)
	}
	db, _ := client.NewDatabase(dbName)
	direct, err := azure.NewCosmosClient(acct, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Straight to the stand-in: the front is stopped before this cleanup.
	t.Cleanup(func() {
		d, _ := direct.NewDatabase(dbName)
		_, _ = d.Delete(context.WithoutCancel(ctx), nil)
	})
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "docs",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/scope"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
	}, nil); err != nil {
		t.Fatalf("create container through the front: %v", err)
	}
	c, _ := db.NewContainer("docs")
	write := func(id string, v int) {
		t.Helper()
		doc := fmt.Sprintf(`{"id":%q,"scope":"s-%s","v":%d}`, id, id, v)
		if _, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString("s-"+id), []byte(doc), nil); err != nil {
			t.Fatalf("write %s through the front: %v", id, err)
		}
	}

	// The stand-in itself answers the feed's requests in its own format.
	dr, err := azure.NewDocReader(direct, dbName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dr.Changes(ctx, "docs", "", 0, func([]byte) error { return nil }); !errors.Is(err, azure.ErrNoChangeFeed) {
		t.Fatalf("change feed of the stand-in alone: %v, want %v", err, azure.ErrNoChangeFeed)
	}

	r, err := azure.NewDocReader(client, dbName)
	if err != nil {
		t.Fatal(err)
	}
	changes := func(from string) (got []string, next string) {
		t.Helper()
		next, err := r.Changes(ctx, "docs", from, 0, func(doc []byte) error {
			var d struct {
				ID string `json:"id"`
				V  int    `json:"v"`
			}
			if err := json.Unmarshal(doc, &d); err != nil {
				return err
			}
			got = append(got, fmt.Sprintf("%s=%d", d.ID, d.V))
			return nil
		})
		if err != nil {
			t.Fatalf("change feed through the front: %v", err)
		}
		slices.Sort(got) // two ranges: the order across ranges is theirs
		return got, next
	}
	for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
		write(id, i)
	}
	got, pos := changes(azure.ChangeFeedSince(time.Time{}))
	if want := []string{"a=0", "b=1", "c=2", "d=3", "e=4", "f=5"}; !slices.Equal(got, want) {
		t.Fatalf("from the beginning: %v, want %v", got, want)
	}
	if got, _ := changes(pos); len(got) != 0 {
		t.Errorf("nothing written since: %v, want nothing", got)
	}
	write("b", 10)
	write("g", 11)
	write("b", 12)
	if got, _ := changes(pos); !slices.Equal(got, []string{"b=12", "g=11"}) {
		t.Errorf("after changes: %v, want [b=12 g=11] (each once, at its latest version)", got)
	}
	if code := f.stop(t); code != 0 || f.stderr.Len() > 0 {
		t.Errorf("front stopped: exit %d, stderr %q; want 0, nothing", code, f.stderr)
	}
}
