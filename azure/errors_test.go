package azure_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/testenv"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/store"
)

const sasSecret = "sig=SIGNATURE-do-not-print"

// TestScrubErrorKeepsTheChain: ScrubError removes the query string from
// the text and from the URL error found through it, and keeps what the
// error wraps: an exhausted retry stays one, with its fault.
func TestScrubErrorKeepsTheChain(t *testing.T) {
	ue := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/acct/Config()?sv=1&" + sasSecret,
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	err := fmt.Errorf("read Config: %w", errors.Join(store.ErrRetriesExhausted, &store.Fault{Kind: store.Unreachable, Err: ue}))
	got := azure.ScrubError(err)
	if strings.Contains(got.Error(), "sig=") || !strings.Contains(got.Error(), `Get "http://127.0.0.1:1/acct/Config()": dial tcp: connect: connection refused`) {
		t.Errorf("text %q: want the URL without its query", got)
	}
	if !errors.Is(got, store.ErrRetriesExhausted) || store.KindOf(got) != store.Unreachable || !errors.Is(got, syscall.ECONNREFUSED) {
		t.Errorf("the chain is lost: exhausted %v, kind %s", errors.Is(got, store.ErrRetriesExhausted), store.KindOf(got))
	}
	var found *url.Error
	if !errors.As(got, &found) || strings.Contains(found.Error(), "sig=") {
		t.Errorf("errors.As finds %v; want the URL error without its query", found)
	}
	var ne net.Error
	if !errors.As(got, &ne) || strings.Contains(ne.Error(), "sig=") {
		t.Errorf("errors.As(net.Error) finds %v; want the URL error without its query", ne)
	}
	if plain := errors.New("disk full"); azure.ScrubError(plain) != plain {
		t.Error("an error without a URL is not returned as it is")
	}
}

// TestTableReaderUnreachableOutlastsTheTimeout: during the work (not at
// first contact) a table endpoint that refuses connections is retried
// until --retry-timeout, and the error says so: it wraps
// ErrRetriesExhausted and the last attempt's Unreachable fault, and holds
// no SAS.
func TestTableReaderUnreachableOutlastsTheTimeout(t *testing.T) {
	closed := testenv.ClosedPort(t)
	acct := azure.StorageAccount{Name: "acct", SAS: "sv=1&ss=t&" + sasSecret, TableEndpoint: "http://" + closed + "/acct"}
	r := azure.NewTableReader(acct, azure.Options{Retry: azure.RetryOptions{Timeout: 200 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}})
	_, err := r.ReadPage(context.Background(), "Config", store.Query{}, store.Cursor{})
	if !errors.Is(err, store.ErrRetriesExhausted) || store.KindOf(err) != store.Unreachable {
		t.Fatalf("err = %v (%s); want ErrRetriesExhausted of an Unreachable fault", err, store.KindOf(err))
	}
	var res *azure.ResourceError
	if !errors.As(err, &res) || res.Name != "Config" {
		t.Errorf("err = %v; want it to name table Config", err)
	}
	if strings.Contains(err.Error(), "sig=") {
		t.Errorf("the SAS in %q", err)
	}
}
