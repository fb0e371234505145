package azure

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/bifrost/bifrost-migrate/store"
)

// DefaultRetryTimeout is the default of RetryOptions.Timeout
// (--retry-timeout).
const DefaultRetryTimeout = 10 * time.Minute

// RetryOptions is the retry rule of every request this package sends to
// Cosmos DB, Table Storage and Blob Storage (SPEC §11, §14). A 429 is
// back-pressure, never a failure by count: it is retried, honouring
// x-ms-retry-after-ms (or Retry-After) however long and however often,
// until the operation has spent Timeout. 408, 449, 5xx, attempt timeouts
// and connection errors are retried with capped exponential backoff and
// full jitter. Anything else is returned at once. The zero value gives the
// defaults stated on each field.
type RetryOptions struct {
	// Timeout bounds one operation, from its first attempt, waits
	// included (default DefaultRetryTimeout). A wait that would end past
	// it is not started: the operation fails with ErrRetriesExhausted at
	// once.
	Timeout time.Duration
	// MaxAttempts, when > 0, also bounds the attempts of an operation
	// whose failures are not 429s (408, 449, 5xx, connection errors).
	// 0 leaves them to Timeout alone. 429s never count.
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt when the service
	// gives no retry-after (default 100ms). It doubles per attempt up to
	// MaxDelay and is fully jittered: the wait is uniform in
	// [0, min(MaxDelay, BaseDelay·2^(n-1))].
	BaseDelay time.Duration
	// MaxDelay caps the computed backoff (default 10s). It does not cap a
	// delay the service asks for, which is always honoured in full
	// (bounded only by Timeout).
	MaxDelay time.Duration
	// AttemptTimeout bounds one HTTP attempt (default 60s); an attempt that
	// times out is retried like a dropped connection.
	AttemptTimeout time.Duration

	// Sleep waits d or until ctx is done, returning ctx.Err() then. Tests
	// may replace it to observe the waits; nil uses a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock used for Timeout; nil uses time.Now.
	Now func() time.Time
	// Jitter returns a uniform float64 in [0, 1); nil uses math/rand/v2.
	Jitter func() float64
	// OnRetry, when not nil, hears every retry just before its wait
	// (--log-file). It is called from many goroutines at once.
	OnRetry func(RetryEvent)
}

// RetryEvent is one retry: what was retried, why, and for how long the
// retry loop waits before the next attempt. It carries no secret: the
// operation names a service, a host and a path, never a query string.
type RetryEvent struct {
	Op      string
	Attempt int
	Cause   string
	Wait    time.Duration
	// Fault is the failed attempt's fault, for a message worded from
	// its kind and status.
	Fault *store.Fault
}

func (o RetryOptions) withDefaults() RetryOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultRetryTimeout
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = 100 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 10 * time.Second
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 60 * time.Second
	}
	if o.Sleep == nil {
		o.Sleep = store.Sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	return o
}

// retryBudget is the state of one operation's retry loop: it decides,
// after each failed attempt, whether and how long to wait.
type retryBudget struct {
	o        RetryOptions
	op       string
	start    time.Time
	attempts int // all attempts so far
	failures int // attempts that failed other than with a 429
	// bound names what ends the loop, for the message; "" means
	// --retry-timeout.
	bound string
}

func newRetryBudget(o RetryOptions, op string) *retryBudget {
	return &retryBudget{o: o, op: op, start: o.Now()}
}

// next is called after an attempt failed with last, a retryable fault. It
// returns nil when the caller should try again (after having waited the
// wait last asks for, or a backoff), or the error that ends the
// operation: ctx's error, or one wrapping ErrRetriesExhausted and last.
func (b *retryBudget) next(ctx context.Context, last *store.Fault) error {
	throttled := last.Kind == store.Throttled
	b.attempts++
	if !throttled {
		b.failures++
	}
	wait := last.Wait
	if wait <= 0 {
		wait = backoff(b.o, b.attempts)
	}
	elapsed := b.o.Now().Sub(b.start)
	if (b.o.MaxAttempts > 0 && !throttled && b.failures >= b.o.MaxAttempts) || elapsed+wait > b.o.Timeout {
		bound := b.bound
		if bound == "" {
			bound = fmt.Sprintf("--retry-timeout %s", b.o.Timeout)
		}
		return &exhaustedError{
			msg: fmt.Sprintf("%s: %v after %d attempts in %s (%s): %s",
				b.op, store.ErrRetriesExhausted, b.attempts, elapsed.Round(time.Millisecond), bound, describe(last)),
			last: last,
		}
	}
	if b.o.OnRetry != nil {
		b.o.OnRetry(RetryEvent{Op: b.op, Attempt: b.attempts, Cause: describe(last), Wait: wait, Fault: last})
	}
	store.MeterOf(ctx).Wait(wait) // a back-off, not latency
	if err := b.o.Sleep(ctx, wait); err != nil {
		return fmt.Errorf("%s: %w", b.op, err)
	}
	return nil
}

// exhaustedError is a one-line message that wraps both
// ErrRetriesExhausted and the last attempt's error (whose own text, from
// azcore, spans many lines).
type exhaustedError struct {
	msg  string
	last error
}

func (e *exhaustedError) Error() string   { return e.msg }
func (e *exhaustedError) Unwrap() []error { return []error{store.ErrRetriesExhausted, e.last} }

// backoff is the full-jitter exponential wait before attempt+1.
func backoff(o RetryOptions, attempt int) time.Duration {
	ceil := o.MaxDelay
	if attempt < 40 {
		if d := o.BaseDelay << (attempt - 1); d > 0 && d < ceil {
			ceil = d
		}
	}
	return time.Duration(o.Jitter() * float64(ceil))
}

// singleAttemptKey marks a context whose requests retryPolicy sends once:
// the caller runs a retry loop of its own (CosmosDocs).
type singleAttemptKey struct{}

// SingleAttempt returns a context whose requests through this package's
// clients are sent once, without the retry loop: for a caller that runs
// a retry loop of its own.
func SingleAttempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, singleAttemptKey{}, true)
}

func isSingleAttempt(ctx context.Context) bool { return ctx.Value(singleAttemptKey{}) != nil }

// FirstContact is the retry rule of a command's first requests to an
// endpoint (its start-up check), in place of the clients' RetryOptions:
// a fault that store.FaultKind.RetryableAtFirstContact names (throttled,
// transient: a 503, a reset, an attempt that timed out) is retried with
// backoff until Deadline; any other (a refused connection, an unknown
// host, a failed TLS handshake, refused credentials) is returned at once.
type FirstContact struct {
	// Deadline ends the check, attempts and waits included: a wait that
	// would end past it is not started, and an attempt is cut at it.
	Deadline time.Time
	// AttemptTimeout, when > 0, bounds one attempt in place of the
	// clients' RetryOptions.AttemptTimeout.
	AttemptTimeout time.Duration
	// OnRetry, when not nil, hears each retry just before its wait, in
	// place of the clients' RetryOptions.OnRetry (the command's status
	// line). It may be called from several goroutines at once.
	OnRetry func(RetryEvent)
}

type firstContactKey struct{}

// AtFirstContact returns a context whose requests through this package's
// clients follow fc. Its value survives context.WithoutCancel, so the
// read of the account (GET /) that the Cosmos DB client sends before its
// first request, and whose failure it keeps for minutes, follows fc too.
func AtFirstContact(ctx context.Context, fc FirstContact) context.Context {
	return context.WithValue(ctx, firstContactKey{}, fc)
}

// retryRule is how the retry loop treats one request: its options, the
// kinds worth sending again, and the deadline that cuts every attempt
// (zero: none).
type retryRule struct {
	o         RetryOptions
	retryable func(store.FaultKind) bool
	deadline  time.Time
}

// ruleOf returns the rule of a request sent in ctx by a client with
// options o: o and FaultKind.Retryable, or at first contact (ctx from
// AtFirstContact) fc's deadline and options and
// FaultKind.RetryableAtFirstContact.
func ruleOf(ctx context.Context, o RetryOptions) retryRule {
	fc, ok := ctx.Value(firstContactKey{}).(FirstContact)
	if !ok {
		return retryRule{o: o, retryable: store.FaultKind.Retryable}
	}
	o.Timeout = fc.Deadline.Sub(o.Now())
	o.MaxAttempts = 0
	if fc.AttemptTimeout > 0 {
		o.AttemptTimeout = fc.AttemptTimeout
	}
	o.OnRetry = fc.OnRetry
	return retryRule{o: o, retryable: store.FaultKind.RetryableAtFirstContact, deadline: fc.Deadline}
}

// budget starts the retry loop of operation op.
func (r retryRule) budget(op string) *retryBudget {
	b := newRetryBudget(r.o, op)
	if !r.deadline.IsZero() {
		b.bound = "the start-up check's deadline"
	}
	return b
}

// attemptTimeout bounds the attempt that starts now.
func (r retryRule) attemptTimeout() time.Duration {
	if r.deadline.IsZero() {
		return r.o.AttemptTimeout
	}
	return min(r.o.AttemptTimeout, time.Until(r.deadline))
}

// retryPolicy is the azcore pipeline policy that retries every request of
// the clients this package builds by RetryOptions (at first contact, by
// FirstContact); azcore's own retry
// policy is switched off in those clients (see clientOptions). Request
// bodies must be rewindable and survive Close (the SDKs send
// streaming.NopCloser over bytes), as for azcore's own policy.
type retryPolicy struct {
	o       RetryOptions
	service string // "Cosmos DB", "Table Storage", "Blob Storage"
}

func (p *retryPolicy) Do(req *policy.Request) (*http.Response, error) {
	ctx := req.Raw().Context()
	if isSingleAttempt(ctx) {
		return req.Next()
	}
	rule := ruleOf(ctx, p.o)
	u := req.Raw().URL
	b := rule.budget(fmt.Sprintf("%s %s %s%s", p.service, req.Raw().Method, u.Host, u.Path))
	for {
		if err := req.RewindBody(); err != nil {
			return nil, err
		}
		tryCtx, cancel := context.WithTimeout(ctx, rule.attemptTimeout())
		resp, err := req.Clone(tryCtx).Next()
		if ctx.Err() != nil {
			cancel()
			if err == nil {
				runtime.Drain(resp)
			}
			return nil, ctx.Err()
		}
		var last *store.Fault
		if err != nil {
			cancel()
			last = FaultOf(err)
		} else {
			if !rule.retryable(AnswerKind(resp)) {
				// The body may still be read (a download): cancel the
				// attempt's context only once it is closed.
				resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
				return resp, nil
			}
			last = FaultOf(runtime.NewResponseError(resp)) // reads and closes the body
			cancel()
		}
		if !rule.retryable(last.Kind) {
			return nil, last
		}
		if err := b.next(ctx, last); err != nil {
			return nil, err
		}
	}
}

// cancelOnClose cancels an attempt's context when the answer's body is
// closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
