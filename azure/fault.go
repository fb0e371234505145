package azure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bifrost/bifrost-migrate/store"
)

// This file is the one place where an answer of Cosmos DB, Table Storage
// or Blob Storage, or the failure to get one, becomes a fault kind
// (store.FaultKind; docs/engine.md, "Faults"). The retry loops, the
// pacer, the writers and the wrappers of every failed request read it;
// nothing else in the tool makes a fault kind of a status code. (The
// existence checks — a 404 to "does this table exist?" — read an answer
// as a fact, not a fault.) It is also where the rest of what a failed
// request says is read, for the sentences package cmd words from it:
// how the transport failed (TransportOf), the service's error code
// (ErrorCode), a resource that does not exist (ResourceError.Missing)
// and an answer in no form the tool knows (Unreadable). No other
// package reads a status code, a network error or a decoder's error to
// decide what to say.

// FaultOf returns err as a fault: the *store.Fault in its chain when an
// adapter set one already, else one made of the answer or the transport
// error err carries (faultKind), with the wait a 429 or a 5xx asked for.
// It returns nil for nil.
func FaultOf(err error) *store.Fault {
	if err == nil {
		return nil
	}
	if f := store.FaultOf(err); f != nil {
		return f
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return &store.Fault{Kind: transportKind(err), TLS: tlsFailure(err), Err: err}
	}
	f := &store.Fault{Kind: faultKind(re.StatusCode, re.ErrorCode), Status: re.StatusCode, Err: err}
	if f.Kind == store.Throttled || re.StatusCode >= 500 {
		f.Wait = retryAfter(re.RawResponse)
	}
	return f
}

// AnswerKind is the kind of the answer resp: store.NoFault for a status
// below 400, else faultKind's. The retry loop, the pacer and the metrics
// read an answer by it before the SDK makes an error of it.
func AnswerKind(resp *http.Response) store.FaultKind {
	if resp.StatusCode < 400 {
		return store.NoFault
	}
	return faultKind(resp.StatusCode, resp.Header.Get("x-ms-error-code"))
}

// faultKind is the kind of an answer with status and the service's error
// code (x-ms-error-code). Adding a kind is a row here and its rows in
// TestFaultKind (docs/engine.md shows how).
func faultKind(status int, code string) store.FaultKind {
	switch {
	case status == http.StatusTooManyRequests:
		return store.Throttled
	case status == http.StatusRequestTimeout, status == 449, status >= 500: // 449: Cosmos DB's "retry with"
		return store.Transient
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return store.Auth
	case resourceGone(code):
		return store.Fatal
	case status == http.StatusConflict:
		return store.Exists
	case status == http.StatusPreconditionFailed:
		return store.Changed
	case status == http.StatusNotFound:
		return store.NotFound
	case status >= 400:
		return store.Refused
	}
	return store.Fatal
}

// resourceGone reports whether an error code says that the table or the
// container itself is missing or going, not the item: no item of it can
// be written, so the command stops.
func resourceGone(code string) bool {
	switch code {
	case "TableNotFound", "TableBeingDeleted", "ContainerNotFound", "ContainerBeingDeleted":
		return true
	}
	return false
}

// transportKind is the kind of a request that got no answer.
func transportKind(err error) store.FaultKind {
	t := TransportOf(err)
	switch {
	case t.Failure == TimedOut: // an attempt's own timeout: the caller's ended context is checked first
		return store.Transient
	case t.Failure == ConnRefused, t.Failure == NoSuchHost, tlsFailure(err) != store.NoTLSFailure:
		return store.Unreachable
	case t.Failure != NoTransportFailure:
		return store.Transient
	}
	return store.Fatal
}

// TransportFailure is how a request that got no answer failed, as the
// transport reported it: what a message says of the attempt (the fault's
// kind says what to do about it).
type TransportFailure uint8

// The ways a request gets no answer.
const (
	// NoTransportFailure: an answer came, or the error is none of the
	// transport's (the tool's own, a cancelled context).
	NoTransportFailure TransportFailure = iota
	// TimedOut: the attempt's own time ran out.
	TimedOut
	// ConnRefused: nothing listens at the endpoint's port.
	ConnRefused
	// NoSuchHost: the endpoint's host name does not resolve.
	NoSuchHost
	// ConnClosed: the connection closed without an answer.
	ConnClosed
	// ConnReset: the endpoint reset the connection.
	ConnReset
	// OtherTransportFailure: any other network error (a broken pipe, an
	// i/o timeout, no route to the host); Transport.Words says it.
	OtherTransportFailure
)

// Transport is what the transport said of a request that got no answer.
type Transport struct {
	Failure TransportFailure
	// Host is the host name that did not resolve (NoSuchHost).
	Host string
	// Words are the transport's own ("connect: connection refused",
	// "i/o timeout"), never a URL; "" when it said nothing.
	Words string
}

// TransportOf returns what the transport said of the request err failed:
// the zero Transport when err got an answer or is none of the
// transport's. It is the one reading of a network error: the fault kind
// (transportKind) and every message that words an attempt read it.
func TransportOf(err error) Transport {
	var (
		dns *net.DNSError
		ne  net.Error
	)
	t := Transport{Words: transportWords(err)}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		t.Failure = TimedOut
	case errors.Is(err, syscall.ECONNREFUSED):
		t.Failure = ConnRefused
	case errors.As(err, &dns):
		t.Failure, t.Host = NoSuchHost, dns.Name
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		t.Failure = ConnClosed
	case errors.Is(err, syscall.ECONNRESET):
		t.Failure = ConnReset
	case errors.As(err, &ne), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		t.Failure = OtherTransportFailure
	}
	return t
}

// transportWords are the words of the network error in err's chain
// ("connect: connection refused", "lookup host: no such host", "i/o
// timeout"), without the URL; "" when it holds none.
func transportWords(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return ne.Error()
	}
	return ""
}

// tlsFailure is how the TLS handshake of a request that got no answer
// failed: the certificate did not verify, the endpoint speaks plain
// HTTP, or it sent an alert (crypto/tls reports a peer's alert as a
// *net.OpError whose Op is "remote error"); NoTLSFailure when err is
// no failed handshake. A handshake that timed out is a timeout, not
// this.
func tlsFailure(err error) store.TLSFailure {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		op        *net.OpError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &authority), errors.As(err, &hostname), errors.As(err, &invalid):
		return store.TLSUntrusted
	case errors.As(err, &record), errors.Is(err, http.ErrSchemeMismatch):
		return store.TLSNotSpoken
	case errors.As(err, &op) && op.Op == "remote error":
		return store.TLSRefused
	}
	return store.NoTLSFailure
}

// expect is f as the answer of a request that expects the outcomes
// named: an Exists, Changed or NotFound it does not expect is a refusal
// of the item (an upsert's 409 or 412, a create's 404). f is not changed.
func expect(f *store.Fault, outcomes ...store.FaultKind) *store.Fault {
	switch f.Kind {
	case store.Exists, store.Changed, store.NotFound:
		if !slices.Contains(outcomes, f.Kind) {
			g := *f
			g.Kind = store.Refused
			return &g
		}
	}
	return f
}

// withFault returns err carrying its fault: err as it is when it carries
// one, else the fault FaultOf makes of it.
func withFault(err error) error {
	if err == nil || store.FaultOf(err) != nil {
		return err
	}
	return FaultOf(err)
}

// ErrorCode is the service's error code of the answer err carries
// (x-ms-error-code: "TableNotFound"), if any.
func ErrorCode(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// Missing reports whether the request failed because its resource itself
// does not exist: a 404 about a table, a database or a container, or
// about a blob container but for a blob's own (BlobNotFound).
func (e *ResourceError) Missing() bool {
	if f := FaultOf(e.Err); f == nil || f.Status != http.StatusNotFound {
		return false
	}
	switch e.Kind {
	case KindTable, KindDatabase, KindContainer:
		return true
	case KindBlobContainer:
		return ErrorCode(e.Err) != "BlobNotFound"
	}
	return false
}

// Unreadable reports whether err is an answer in a form that is not the
// service's: the error of a Go decoder, whose text names Go types.
// A query's answer read doc by doc (querystream.go) is unreadable when
// jsontext finds it is no JSON or not a page of docs — but not when its
// body ended early or failed to arrive, which is the transport's
// failure.
func Unreadable(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var page *unreadableAnswerError
	var text *jsontext.SyntacticError
	return errors.As(err, &syntax) || errors.As(err, &typ) || errors.As(err, &page) ||
		errors.As(err, &text) && TransportOf(err).Failure == NoTransportFailure
}

// retryAfter is the wait a service asks for: x-ms-retry-after-ms (Cosmos
// DB, in milliseconds, possibly fractional), else Retry-After in seconds
// (Storage); 0 when it asks for none.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(resp.Header.Get("x-ms-retry-after-ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
