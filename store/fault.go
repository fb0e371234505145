package store

import (
	"errors"
	"strconv"
	"time"
)

// FaultKind is what a failed request means to the code that sent it: the
// one fault vocabulary every layer reads (docs/engine.md, "Faults"). The
// adapter that sees a service's answer sets it, once (azure.FaultOf); the
// engine acts on it (migrate's settle); the command words its message and
// its last line by it (cmd's explain and transient).
type FaultKind uint8

// The fault kinds. Exists and Changed are the conflict and the failed
// precondition of a conditional write, two kinds because replay counts
// them apart.
const (
	// NoFault is the kind of a nil error.
	NoFault FaultKind = iota
	// Throttled: the service asks to wait (429); Fault.Wait is how long,
	// when it says.
	Throttled
	// Transient: the same request may well succeed if sent again: 408,
	// 449, 5xx, a connection dropped, an attempt that timed out.
	Transient
	// Unreachable: the endpoint could not be reached at all, or not over
	// a connection the tool trusts: the connection refused, the host name
	// not resolved, the TLS handshake failed (Fault.TLS says how).
	Unreachable
	// Exists: a create found the doc or row there already (409): created
	// meanwhile.
	Exists
	// Changed: If-Match no longer matches (412): changed since it was
	// read.
	Changed
	// NotFound: the doc or row a conditional write names is not there
	// (404): deleted meanwhile.
	NotFound
	// Refused: the service refuses this item for good (another 4xx): a
	// dead letter, not a failure of the command.
	Refused
	// Auth: the service refuses the credentials (401, 403): no item can be
	// written, so the command stops.
	Auth
	// Fatal: anything else: a missing table or container, an answer in no
	// form the tool knows, an error of the tool's own.
	Fatal
)

// FaultKinds are the kinds of a failed request, in their order: the rows
// of the tests that drive every kind through every engine.
func FaultKinds() []FaultKind {
	return []FaultKind{Throttled, Transient, Unreachable, Exists, Changed, NotFound, Refused, Auth, Fatal}
}

func (k FaultKind) String() string {
	switch k {
	case NoFault:
		return "no fault"
	case Throttled:
		return "throttled"
	case Transient:
		return "transient"
	case Unreachable:
		return "unreachable"
	case Exists:
		return "exists"
	case Changed:
		return "changed"
	case NotFound:
		return "not found"
	case Refused:
		return "refused"
	case Auth:
		return "auth"
	case Fatal:
		return "fatal"
	}
	return "fault kind " + strconv.Itoa(int(k))
}

// Retryable reports whether a request that failed with k is worth sending
// again: throttled, transient, unreachable. It is the one retryable list:
// the adapters' retry loops retry these kinds until --retry-timeout (the
// start-up checks by RetryableAtFirstContact), and a command stopped by
// one of them says that running it again may finish the work.
func (k FaultKind) Retryable() bool {
	return k == Throttled || k == Transient || k == Unreachable
}

// RetryableAtFirstContact reports whether a command's first request to
// an endpoint (its start-up check) that failed with k is worth sending
// again: the Retryable kinds but Unreachable, so throttled and
// transient. An endpoint that answered once and then refuses connections
// is a gateway restarting or failing over, and is waited for; one that
// refuses the first connection, has no such host or fails the TLS
// handshake is a wrong setting far more often, and the check fails at
// once naming it, as it does for refused credentials.
func (k FaultKind) RetryableAtFirstContact() bool {
	return k.Retryable() && k != Unreachable
}

// TLSFailure is how a TLS handshake failed, for an Unreachable fault.
type TLSFailure uint8

// The ways a TLS handshake fails.
const (
	// NoTLSFailure: the fault is not a failed TLS handshake.
	NoTLSFailure TLSFailure = iota
	// TLSUntrusted: the endpoint's certificate did not verify: issued by
	// an authority this machine does not trust (self-signed), for another
	// host name, or out of its validity.
	TLSUntrusted
	// TLSNotSpoken: the endpoint answered the handshake in plain text:
	// it serves http, and the setting names it https.
	TLSNotSpoken
	// TLSRefused: the endpoint ended the handshake with an alert: no
	// protocol version or cipher in common, or it wants a client
	// certificate.
	TLSRefused
)

// Fault is a failed request with its kind, as the adapter that saw the
// answer classified it. Its text never holds a credential or a doc.
type Fault struct {
	Kind FaultKind
	// Status is the service's HTTP status; 0 when no answer came.
	Status int
	// Wait is how long the service asked to wait before the next attempt
	// (a 429's x-ms-retry-after-ms, a Retry-After); 0 when it did not say.
	Wait time.Duration
	// TLS says how the TLS handshake failed, for an Unreachable fault
	// that is one; NoTLSFailure otherwise.
	TLS TLSFailure
	// Reason is the fault's one line for messages and dead letters; empty
	// means Err's text.
	Reason string
	// Err is the service's answer or the transport's error the fault was
	// made of; nil for a fault a fake makes.
	Err error
}

func (f *Fault) Error() string {
	if f.Reason != "" || f.Err == nil {
		return f.Reason
	}
	return f.Err.Error()
}

func (f *Fault) Unwrap() error { return f.Err }

// FaultOf returns the fault in err's chain, or nil when it carries none.
func FaultOf(err error) *Fault {
	var f *Fault
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// KindOf returns the kind of err: NoFault for nil, the kind of the fault
// in its chain, and Fatal for an error that carries none (the tool's
// own, a cancelled context). An error that wraps ErrRetriesExhausted has
// the kind of the last attempt's fault.
func KindOf(err error) FaultKind {
	if err == nil {
		return NoFault
	}
	if f := FaultOf(err); f != nil {
		return f.Kind
	}
	return Fatal
}
