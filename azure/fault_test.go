package azure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

	"github.com/bifrost/bifrost-migrate/store"
)

// answerErr is the error azcore returns for an answer with status, the
// service's error code and headers (name, value, …).
func answerErr(status int, code string, hdr ...string) error {
	h := http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return &azcore.ResponseError{StatusCode: status, ErrorCode: code, RawResponse: &http.Response{StatusCode: status, Header: h}}
}

// TestFaultKind is the table of faultKind and transportKind, the one
// place where an answer or a failure to get one becomes a fault kind: a
// new kind (or a status moved to another) is a row here.
func TestFaultKind(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/dbs/x", Err: err} }
	opErr := func(op string, err error) error {
		return urlErr(&net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)})
	}
	for _, c := range []struct {
		name string
		err  error
		kind store.FaultKind
		wait time.Duration
	}{
		{"429 with retry-after", respErr(429, "x-ms-retry-after-ms", "2500"), store.Throttled, 2500 * time.Millisecond},
		{"429 fractional retry-after", respErr(429, "x-ms-retry-after-ms", "1.5"), store.Throttled, 1500 * time.Microsecond},
		{"429 Retry-After in seconds", respErr(429, "Retry-After", "3"), store.Throttled, 3 * time.Second},
		{"429 without retry-after", respErr(429), store.Throttled, 0},
		{"408", respErr(408), store.Transient, 0},
		{"408 asks no wait", respErr(408, "Retry-After", "3"), store.Transient, 0},
		{"449 retry with", respErr(449), store.Transient, 0},
		{"500", respErr(500), store.Transient, 0},
		{"503 with retry-after", respErr(503, "Retry-After", "2"), store.Transient, 2 * time.Second},
		{"401", respErr(401), store.Auth, 0},
		{"403", answerErr(403, "AuthorizationPermissionMismatch"), store.Auth, 0},
		{"409", respErr(409), store.Exists, 0},
		{"409 EntityAlreadyExists", answerErr(409, "EntityAlreadyExists"), store.Exists, 0},
		{"409 BlobAlreadyExists", answerErr(409, "BlobAlreadyExists"), store.Exists, 0},
		{"409 TableBeingDeleted", answerErr(409, "TableBeingDeleted"), store.Fatal, 0},
		{"412", answerErr(412, "UpdateConditionNotSatisfied"), store.Changed, 0},
		{"404", respErr(404), store.NotFound, 0},
		{"404 ResourceNotFound", answerErr(404, "ResourceNotFound"), store.NotFound, 0},
		{"404 TableNotFound", answerErr(404, "TableNotFound"), store.Fatal, 0},
		{"404 ContainerNotFound", answerErr(404, "ContainerNotFound"), store.Fatal, 0},
		{"400", respErr(400), store.Refused, 0},
		{"413", answerErr(413, "RequestBodyTooLarge"), store.Refused, 0},
		{"304", respErr(304), store.Fatal, 0},
		{"refused", opErr("dial", syscall.ECONNREFUSED), store.Unreachable, 0},
		{"certificate not trusted", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), store.Unreachable, 0},
		{"plain HTTP to https", urlErr(http.ErrSchemeMismatch), store.Unreachable, 0},
		{"TLS alert", urlErr(&net.OpError{Op: "remote error", Err: errors.New("tls: handshake failure")}), store.Unreachable, 0},
		{"no such host", urlErr(&net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}), store.Unreachable, 0},
		{"reset", opErr("read", syscall.ECONNRESET), store.Transient, 0},
		{"broken pipe", opErr("write", syscall.EPIPE), store.Transient, 0},
		{"EOF", urlErr(io.EOF), store.Transient, 0},
		{"unexpected EOF", fmt.Errorf("wrapped: %w", io.ErrUnexpectedEOF), store.Transient, 0},
		{"attempt timeout", fmt.Errorf("x: %w", context.DeadlineExceeded), store.Transient, 0},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), store.Fatal, 0},
		{"other", errors.New("failed to marshal"), store.Fatal, 0},
		{"set by an adapter", fmt.Errorf("x: %w", &store.Fault{Kind: store.Refused, Status: 400}), store.Refused, 0},
	} {
		f := FaultOf(c.err)
		if f.Kind != c.kind || f.Wait != c.wait || f.Err != c.err && store.FaultOf(c.err) == nil {
			t.Errorf("%s: FaultOf = %s, wait %v; want %s, wait %v", c.name, f.Kind, f.Wait, c.kind, c.wait)
		}
		if got, want := f.Kind.Retryable(), c.kind == store.Throttled || c.kind == store.Transient || c.kind == store.Unreachable; got != want {
			t.Errorf("%s: retryable %v, want %v", c.name, got, want)
		}
		// At first contact, an endpoint that cannot be reached is not
		// tried again: only a busy one is.
		if got, want := f.Kind.RetryableAtFirstContact(), c.kind == store.Throttled || c.kind == store.Transient; got != want {
			t.Errorf("%s: retryable at first contact %v, want %v", c.name, got, want)
		}
	}
	if FaultOf(nil) != nil || store.KindOf(withFault(nil)) != store.NoFault {
		t.Error("nil is a fault")
	}
}

// TestTLSFailure: a failed TLS handshake is told apart by how it failed
// (Fault.TLS), which the start-up check words; every other failure has
// none.
func TestTLSFailure(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "https://acct.example.test/", Err: err} }
	for _, c := range []struct {
		name string
		err  error
		want store.TLSFailure
	}{
		{"unknown authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), store.TLSUntrusted},
		{"another host name", urlErr(x509.HostnameError{Host: "acct.example.test", Certificate: &x509.Certificate{}}), store.TLSUntrusted},
		{"expired", urlErr(x509.CertificateInvalidError{Reason: x509.Expired, Cert: &x509.Certificate{}}), store.TLSUntrusted},
		{"plain HTTP (net/http)", urlErr(http.ErrSchemeMismatch), store.TLSNotSpoken},
		{"plain text (crypto/tls)", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), store.TLSNotSpoken},
		{"alert", urlErr(&net.OpError{Op: "remote error", Err: errors.New("tls: protocol version not supported")}), store.TLSRefused},
		{"reset", urlErr(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), store.NoTLSFailure},
		{"refused", urlErr(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), store.NoTLSFailure},
		{"503", respErr(503), store.NoTLSFailure},
	} {
		if got := FaultOf(c.err).TLS; got != c.want {
			t.Errorf("%s: TLS %d, want %d", c.name, got, c.want)
		}
	}
}

// TestTransportOf: how a request that got no answer failed, and the
// transport's own words, read once for every message that words an
// attempt; an answer, or an error of the tool's own, is none.
func TestTransportOf(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "http://127.0.0.1:1/x?sig=s", Err: err} }
	opErr := func(op string, err error) error {
		return urlErr(&net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)})
	}
	for _, c := range []struct {
		name string
		err  error
		want Transport
	}{
		{"refused", opErr("connect", syscall.ECONNREFUSED), Transport{ConnRefused, "", "connect: connection refused"}},
		{"no such host", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}),
			Transport{NoSuchHost, "x.invalid", "lookup x.invalid: no such host"}},
		{"EOF", urlErr(io.EOF), Transport{ConnClosed, "", "EOF"}},
		{"reset", opErr("read", syscall.ECONNRESET), Transport{ConnReset, "", "read: connection reset by peer"}},
		{"attempt timeout", fmt.Errorf("attempt: %w", context.DeadlineExceeded), Transport{TimedOut, "", "context deadline exceeded"}},
		{"broken pipe", opErr("write", syscall.EPIPE), Transport{OtherTransportFailure, "", "write: broken pipe"}},
		{"another URL error", urlErr(errors.New("proxyconnect tcp: refused by policy")), Transport{OtherTransportFailure, "", "proxyconnect tcp: refused by policy"}},
		{"503", respErr(503), Transport{}},
		{"the tool's own", errors.New("failed to marshal"), Transport{}},
	} {
		if got := TransportOf(c.err); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestMissing: a 404 about a table, database or container says it does
// not exist; a blob's own 404 does not say its container is missing.
func TestMissing(t *testing.T) {
	in := func(kind string, err error) *ResourceError {
		return &ResourceError{Resource: Resource{Kind: kind, Name: "x"}, Err: FaultOf(err)}
	}
	for _, c := range []struct {
		name string
		err  *ResourceError
		want bool
	}{
		{"table", in(KindTable, answerErr(404, "TableNotFound")), true},
		{"database", in(KindDatabase, answerErr(404, "NotFound")), true},
		{"container", in(KindContainer, answerErr(404, "NotFound")), true},
		{"blob container", in(KindBlobContainer, answerErr(404, "ContainerNotFound")), true},
		{"a blob", in(KindBlobContainer, answerErr(404, "BlobNotFound")), false},
		{"refused access", in(KindTable, answerErr(403, "AuthorizationFailure")), false},
		{"no answer", in(KindTable, &url.Error{Op: "Get", URL: "http://127.0.0.1:1/", Err: syscall.ECONNREFUSED}), false},
	} {
		if got := c.err.Missing(); got != c.want {
			t.Errorf("%s: Missing %v, want %v", c.name, got, c.want)
		}
	}
}

// TestExpect: the outcomes a request does not expect are refusals of its
// item; the rest are left as they are.
func TestExpect(t *testing.T) {
	for _, c := range []struct {
		kind     store.FaultKind
		outcomes []store.FaultKind
		want     store.FaultKind
	}{
		{store.Exists, nil, store.Refused},                               // an upsert's 409
		{store.Exists, []store.FaultKind{store.Exists}, store.Exists},    // a create's
		{store.NotFound, []store.FaultKind{store.Exists}, store.Refused}, // a create's 404
		{store.Changed, []store.FaultKind{store.Changed, store.NotFound}, store.Changed},
		{store.NotFound, []store.FaultKind{store.Changed, store.NotFound}, store.NotFound},
		{store.Throttled, nil, store.Throttled},
		{store.Auth, nil, store.Auth},
		{store.Fatal, nil, store.Fatal},
	} {
		f := &store.Fault{Kind: c.kind}
		if got := expect(f, c.outcomes...); got.Kind != c.want || f.Kind != c.kind {
			t.Errorf("%s expecting %v: %s, want %s (and the fault unchanged)", c.kind, c.outcomes, got.Kind, c.want)
		}
	}
}
