package azure_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
)

var _ migrate.BlobStore = (*azure.BlobStore)(nil)

// newBlobStore returns a BlobStore over a fresh container (created), and
// the container's name.
func newBlobStore(t *testing.T, acct azure.StorageAccount) (*azure.BlobStore, string) {
	t.Helper()
	name := testenv.Name("execdata")
	c, err := azure.NewBlobContainerClient(acct, name, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := azure.NewBlobStore(c)
	if err := s.EnsureContainer(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureContainer(context.Background()); err != nil {
		t.Fatalf("second EnsureContainer: %v", err)
	}
	t.Cleanup(func() { _, _ = c.Delete(context.Background(), nil) })
	return s, name
}

func download(t *testing.T, acct azure.StorageAccount, containerName, blobName string) ([]byte, string) {
	t.Helper()
	c, err := azure.NewBlobContainerClient(acct, containerName, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.NewBlobClient(blobName).DownloadStream(context.Background(), nil)
	if err != nil {
		t.Fatalf("download %s: %v", blobName, err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, *r.ContentType
}

func TestBlobStorePutIfAbsent(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Storage(t)
	s, cname := newBlobStore(t, acct)
	data := []byte(`{"result":"` + strings.Repeat("x", 40000) + `"}`)

	created, err := s.PutIfAbsent(ctx, "e1/result.json", data, "application/json")
	if err != nil || !created {
		t.Fatalf("first: created=%v err=%v", created, err)
	}
	created, err = s.PutIfAbsent(ctx, "e1/result.json", data, "application/json")
	if err != nil || created {
		t.Fatalf("same content again: created=%v err=%v, want false, nil", created, err)
	}
	other := bytes.Clone(data)
	other[20] = 'y' // same size, different content
	for _, d := range [][]byte{other, data[:100]} {
		created, err = s.PutIfAbsent(ctx, "e1/result.json", d, "application/json")
		if !errors.Is(err, store.ErrBlobConflict) || created || !strings.Contains(err.Error(), cname+"/e1/result.json") {
			t.Errorf("different content (%d bytes): created=%v err=%v, want ErrBlobConflict naming the blob", len(d), created, err)
		}
	}
	got, ct := download(t, acct, cname, "e1/result.json")
	if !bytes.Equal(got, data) || ct != "application/json" {
		t.Errorf("stored %d bytes of type %q, want the first upload", len(got), ct)
	}
}

// A blob uploaded in blocks has no stored Content-MD5; PutIfAbsent then
// compares the bytes' MD5.
func TestBlobStorePutIfAbsentExistingBlobWithoutMD5(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Storage(t)
	s, cname := newBlobStore(t, acct)
	data := []byte("hello from the app")
	c, err := azure.NewBlobContainerClient(acct, cname, azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bb := c.NewBlockBlobClient("e2/logs.json")
	id := base64.StdEncoding.EncodeToString([]byte("block-0000"))
	if _, err := bb.StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(data)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.CommitBlockList(ctx, []string{id}, &blockblob.CommitBlockListOptions{}); err != nil {
		t.Fatal(err)
	}
	props, err := bb.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(props.ContentMD5) != 0 {
		t.Fatalf("precondition: the block blob has a Content-MD5 (%x); this test needs one without", props.ContentMD5)
	}
	if created, err := s.PutIfAbsent(ctx, "e2/logs.json", data, "application/json"); err != nil || created {
		t.Errorf("same bytes: created=%v err=%v, want false, nil", created, err)
	}
	if _, err := s.PutIfAbsent(ctx, "e2/logs.json", []byte("hello from the APP"), "application/json"); !errors.Is(err, store.ErrBlobConflict) {
		t.Errorf("different bytes of the same size: %v, want ErrBlobConflict", err)
	}
}

func TestBlobStoreListInNameOrderWithSizes(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Storage(t)
	s, _ := newBlobStore(t, acct)
	names := []string{"b2/result.txt", "a1/result.json", "A9/x", "a1-b/x", "a1/logs.json", "a1.b/x", "a10/x", "a1/variables.json", "Z/z"}
	want := make(map[string]int64)
	for i, n := range names {
		data := bytes.Repeat([]byte{'.'}, 10*i+1)
		if _, err := s.PutIfAbsent(ctx, n, data, "text/plain"); err != nil {
			t.Fatal(err)
		}
		want[n] = int64(len(data))
	}
	var got []string
	err := s.List(ctx, func(name string, size int64) error {
		got = append(got, name)
		if size != want[name] {
			t.Errorf("%s: size %d, want %d", name, size, want[name])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if !slices.Equal(got, sorted) {
		t.Errorf("listed %v\n want %v", got, sorted)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.List(ctx, func(string, int64) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("List after fn error: err=%v after %d calls, want stop after 1", err, n)
	}
}

// Transient failures are retried by the client's retry policy: a 503, a 429 with
// x-ms-retry-after-ms, and a connection reset after the blob was written
// (the retry then finds the blob with the same MD5).
func TestBlobStorePutIfAbsentThroughFaults(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Storage(t)
	_, cname := newBlobStore(t, acct)
	u, err := url.Parse(acct.BlobEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(faultproxy.Config{
		Target: u.Scheme + "://" + u.Host,
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/"+cname+"/")
		},
		DocKey: func(r *http.Request, _ []byte) string { return "|" + r.URL.Path },
		Rules: []faultproxy.Rule{
			{Kind: faultproxy.Unavailable, Share: 1, Count: 1},
			{Kind: faultproxy.Throttle, Share: 1, Count: 1, RetryAfter: 5 * time.Millisecond},
			{Kind: faultproxy.DropAfter, Share: 1, Count: 1},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	viaProxy := acct
	viaProxy.BlobEndpoint = strings.TrimSuffix(p.URL(), "/") + u.Path
	c, err := azure.NewBlobContainerClient(viaProxy, cname, azure.Options{Retry: azure.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	s := azure.NewBlobStore(c)
	data := []byte(`{"logs":["a","b"]}`)
	created, err := s.PutIfAbsent(ctx, "e3/logs.json", data, "application/json")
	if err != nil {
		t.Fatalf("PutIfAbsent through faults: %v (injected %v)", err, p.Counts())
	}
	// The reset came after the write: this call did create the blob but
	// cannot know it, so it reports the blob as already there.
	if created {
		t.Errorf("created = true; the last attempt must have found the blob")
	}
	want := map[faultproxy.Kind]int{faultproxy.Unavailable: 1, faultproxy.Throttle: 1, faultproxy.DropAfter: 1}
	if fmt.Sprint(p.Counts()) != fmt.Sprint(want) {
		t.Errorf("injected %v, want %v", p.Counts(), want)
	}
	if got, _ := download(t, acct, cname, "e3/logs.json"); !bytes.Equal(got, data) {
		t.Errorf("stored %q", got)
	}
}
