package azure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

func respErr(status int, hdr ...string) error {
	h := http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return &azcore.ResponseError{StatusCode: status, RawResponse: &http.Response{StatusCode: status, Header: h}}
}

func TestClassify(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/dbs/x", Err: err} }
	opErr := func(op string, err error) error {
		return urlErr(&net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)})
	}
	cases := []struct {
		name      string
		err       error
		transient bool
		wait      time.Duration
	}{
		{"429 with retry-after", respErr(429, "x-ms-retry-after-ms", "2500"), true, 2500 * time.Millisecond},
		{"429 fractional retry-after", respErr(429, "x-ms-retry-after-ms", "1.5"), true, 1500 * time.Microsecond},
		{"429 without retry-after", respErr(429), true, 0},
		{"408", respErr(408), true, 0},
		{"449", respErr(449), true, 0},
		{"500", respErr(500), true, 0},
		{"503", respErr(503), true, 0},
		{"400", respErr(400), false, 0},
		{"404", respErr(404), false, 0},
		{"409", respErr(409), false, 0},
		{"412", respErr(412), false, 0},
		{"413", respErr(413), false, 0},
		{"refused", opErr("dial", syscall.ECONNREFUSED), true, 0},
		{"reset", opErr("read", syscall.ECONNRESET), true, 0},
		{"EOF", urlErr(io.EOF), true, 0},
		{"unexpected EOF", fmt.Errorf("wrapped: %w", io.ErrUnexpectedEOF), true, 0},
		{"attempt timeout", fmt.Errorf("x: %w", context.DeadlineExceeded), true, 0},
		{"other", errors.New("failed to marshal"), false, 0},
	}
	for _, c := range cases {
		wait, transient := classify(c.err)
		if transient != c.transient || wait != c.wait {
			t.Errorf("%s: classify = (%v, %v), want (%v, %v)", c.name, wait, transient, c.wait, c.transient)
		}
	}
}

func TestBackoffIsCappedFullJitter(t *testing.T) {
	o := RetryOptions{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}.withDefaults()
	o.Jitter = func() float64 { return 0.999999 }
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := backoff(o, i+1); got > w*time.Millisecond || got < w*time.Millisecond*99/100 {
			t.Errorf("attempt %d: max backoff %v, want ≈ %v", i+1, got, w*time.Millisecond)
		}
	}
	o.Jitter = func() float64 { return 0 }
	if got := backoff(o, 100); got != 0 {
		t.Errorf("full jitter must allow 0, got %v", got)
	}
}
