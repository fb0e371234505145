package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/store"
)

// CosmosDocs reads and writes docs in the containers of one Cosmos DB
// database. It implements migrate.DocWriter (Upsert) and the conditional
// operations replay needs (SPEC §13).
//
// Every operation runs its own retry loop by RetryOptions (SPEC §11, §14)
// and switches off the client's retry policies for its calls, so that this
// loop alone decides how often and how long to retry: the retryable
// faults (store.FaultKind.Retryable: a 429 honouring x-ms-retry-after-ms
// however long and however many times, until RetryOptions.Timeout; 408,
// 449, 5xx and connection errors) are retried; any other 4xx is a fault
// of kind store.Refused. The loop is its own (not the clients'
// retryPolicy) so that it can tell the outcomes replay acts on (409, 412,
// 404) from refusals and add up the charges of every attempt. What
// remains of the SDK's own retrying (azcosmos's
// client policy, which cannot be switched off) is: a dropped connection
// that provably never reached the service (refused, DNS) is retried up to
// 3 times 1 s apart, and a read is retried once on 408 and 500. It never
// retries writes on 408, 429, 449 or 5xx, nor writes whose connection
// broke after sending.
//
// CosmosDocs is safe for concurrent use.
type CosmosDocs struct {
	client     *azcosmos.Client
	database   string
	retry      RetryOptions
	containers sync.Map // name → *azcosmos.ContainerClient
}

// resource is container of d's database, for a *ResourceError.
func (d *CosmosDocs) resource(container string) Resource {
	return Resource{Service: ServiceCosmos, Kind: KindContainer, Name: d.database + "/" + container, Endpoint: d.client.Endpoint()}
}

// NewCosmosDocs returns a CosmosDocs for database over client (see
// NewCosmosClient). retry may be nil for the defaults.
func NewCosmosDocs(client *azcosmos.Client, database string, retry *RetryOptions) *CosmosDocs {
	var o RetryOptions
	if retry != nil {
		o = *retry
	}
	return &CosmosDocs{client: client, database: database, retry: o.withDefaults()}
}

// Upsert creates or replaces the doc (JSON bytes, which must carry id and
// scope) in partition scope of container. Repeating it is harmless, so a
// connection dropped after the service wrote it is simply retried. Its
// errors carry their fault (store.KindOf): Refused for any 4xx but 401,
// 403, 408, 429 and 449 (a *store.Fault whose Reason never holds
// credentials or the doc); Auth (401, 403) in a *ResourceError naming the
// container; a retryable kind in a *ResourceError that wraps
// store.ErrRetriesExhausted when the faults lasted longer than
// RetryOptions.Timeout; Fatal in a *ResourceError for a transport error
// that is not retried; or the context's error.
func (d *CosmosDocs) Upsert(ctx context.Context, container, scope, id string, doc []byte) (store.WriteResult, error) {
	var res store.WriteResult
	err := d.do(ctx, "upsert", container, id, &res.RequestCharge, func(ctx context.Context, c *azcosmos.ContainerClient) (float64, error) {
		r, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(scope), doc, nil)
		if err == nil {
			res.ETag = string(r.ETag)
		}
		return float64(r.RequestCharge), err
	})
	return res, err
}

// Read point-reads a doc. A missing doc is found=false with a nil error.
// charge sums every attempt. Errors are as for Upsert.
//
// The request carries x-ms-documentdb-query-enablecrosspartition: true: the
// Cosmos DB stand-in (@vercel/cosmosdb-server) answers a point read of a
// missing doc with 500 instead of 404 without it, and the service ignores
// it on point reads.
func (d *CosmosDocs) Read(ctx context.Context, container, scope, id string) (doc []byte, etag string, found bool, charge float64, err error) {
	ctx = policy.WithHTTPHeader(ctx, http.Header{"x-ms-documentdb-query-enablecrosspartition": []string{"true"}})
	err = d.do(ctx, "read", container, id, &charge, func(ctx context.Context, c *azcosmos.ContainerClient) (float64, error) {
		r, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString(scope), id, nil)
		if err == nil {
			doc, etag, found = r.Value, string(r.ETag), true
		}
		return float64(r.RequestCharge), err
	}, store.NotFound)
	if store.KindOf(err) == store.NotFound {
		return nil, "", false, charge, nil
	}
	return doc, etag, found, charge, err
}

// Create creates the doc; when a doc with that id exists in the partition
// (409) the error's kind is store.Exists. Note that a connection dropped
// after the service created the doc makes the retry report Exists too:
// callers that get it read the doc again (SPEC §13 "start over"). Other
// errors are as for Upsert.
func (d *CosmosDocs) Create(ctx context.Context, container, scope, id string, doc []byte) (store.WriteResult, error) {
	var res store.WriteResult
	err := d.do(ctx, "create", container, id, &res.RequestCharge, func(ctx context.Context, c *azcosmos.ContainerClient) (float64, error) {
		r, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(scope), doc, nil)
		if err == nil {
			res.ETag = string(r.ETag)
		}
		return float64(r.RequestCharge), err
	}, store.Exists)
	return res, err
}

// Replace replaces the doc with If-Match: ifMatch (no condition when
// ifMatch is empty). A stale etag (412) is an error of kind store.Changed,
// a missing doc one of kind store.NotFound; as with Create, a retry after
// a dropped connection can report Changed for a replace that did happen.
// Other errors are as for Upsert.
func (d *CosmosDocs) Replace(ctx context.Context, container, scope, id string, doc []byte, ifMatch string) (store.WriteResult, error) {
	var res store.WriteResult
	err := d.do(ctx, "replace", container, id, &res.RequestCharge, func(ctx context.Context, c *azcosmos.ContainerClient) (float64, error) {
		r, err := c.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(scope), id, doc, itemOptions(ifMatch))
		if err == nil {
			res.ETag = string(r.ETag)
		}
		return float64(r.RequestCharge), err
	}, store.Changed, store.NotFound)
	return res, err
}

// Delete deletes the doc with If-Match: ifMatch (no condition when empty).
// Its errors are of kind store.Changed (412) or store.NotFound (404, which
// a retry after a dropped connection can also report for a delete that
// did happen); others are as for Upsert.
func (d *CosmosDocs) Delete(ctx context.Context, container, scope, id, ifMatch string) (store.WriteResult, error) {
	var res store.WriteResult
	err := d.do(ctx, "delete", container, id, &res.RequestCharge, func(ctx context.Context, c *azcosmos.ContainerClient) (float64, error) {
		r, err := c.DeleteItem(ctx, azcosmos.NewPartitionKeyString(scope), id, itemOptions(ifMatch))
		return float64(r.RequestCharge), err
	}, store.Changed, store.NotFound)
	return res, err
}

func itemOptions(ifMatch string) *azcosmos.ItemOptions {
	if ifMatch == "" {
		return nil
	}
	e := azcore.ETag(ifMatch)
	return &azcosmos.ItemOptions{IfMatchEtag: &e}
}

// noSDKRetries switches off the azcore retry policy for one call
// (MaxRetries < 0 means one try): our loop is the one that retries.
var noSDKRetries = policy.RetryOptions{MaxRetries: -1}

// do runs op until it succeeds, fails with a fault that is not retryable,
// or the retry budget is spent. outcomes are the answers op expects
// (expect): 409, 412 or 404 for a conditional write, a refusal of the doc
// otherwise. Every attempt's request charge is added to *charge.
func (d *CosmosDocs) do(ctx context.Context, opName, container, id string, charge *float64, op func(context.Context, *azcosmos.ContainerClient) (float64, error), outcomes ...store.FaultKind) error {
	where := func() string { return fmt.Sprintf("cosmos %s %s/%s", opName, container, id) }
	c, err := d.container(container)
	if err != nil {
		return fmt.Errorf("%s: %w", where(), err)
	}
	o := d.retry
	var b *retryBudget
	// Our loop is the only one retrying: neither azcore's policy nor the
	// clients' retryPolicy repeat these requests.
	ctx = SingleAttempt(policy.WithRetryOptions(ctx, noSDKRetries))
	start := o.Now()
	for {
		actx, cancel := context.WithTimeout(ctx, o.AttemptTimeout)
		rc, err := op(actx, c)
		cancel()
		*charge += rc
		if err == nil {
			return nil
		}
		if rc == 0 {
			*charge += responseCharge(err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", where(), ctx.Err())
		}
		f := expect(FaultOf(err), outcomes...)
		if !f.Kind.Retryable() {
			return d.fault(container, opName, where(), f)
		}
		if b == nil {
			b = &retryBudget{o: o, op: where(), start: start}
		}
		if err := b.next(ctx, f); err != nil {
			if errors.Is(err, store.ErrRetriesExhausted) {
				return &ResourceError{Resource: d.resource(container), Err: err}
			}
			return err
		}
	}
}

// container returns the client of container, made once.
func (d *CosmosDocs) container(name string) (*azcosmos.ContainerClient, error) {
	if c, ok := d.containers.Load(name); ok {
		return c.(*azcosmos.ContainerClient), nil
	}
	c, err := d.client.NewContainer(d.database, name)
	if err != nil {
		return nil, err
	}
	actual, _ := d.containers.LoadOrStore(name, c)
	return actual.(*azcosmos.ContainerClient), nil
}

// fault is the error of op (where names it and the doc) that ended with
// f, which is not retryable: an answer about the doc (a refusal, or an
// outcome op expects) as a *store.Fault whose Reason is one line; an
// answer that refuses the account (Auth: a key rotated, a role missing, a
// firewall; no doc can be written, so the command stops, resumable) or
// any other failure in a *ResourceError naming the container.
func (d *CosmosDocs) fault(container, op, where string, f *store.Fault) error {
	switch {
	case f.Status == 0:
		f.Err = ScrubError(f.Err)
		return &ResourceError{Resource: d.resource(container), Op: where, Err: f}
	case f.Kind == store.Auth:
		f.Reason = fmt.Sprintf("cosmos %s: access denied: %s", op, describe(f.Err))
		return &ResourceError{Resource: d.resource(container), Err: f}
	case f.Kind == store.Fatal:
		return &ResourceError{Resource: d.resource(container), Op: where, Err: f}
	}
	f.Reason = fmt.Sprintf("cosmos %s: %s", op, describe(f.Err))
	return f
}

func responseCharge(err error) float64 {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse != nil {
		if v, perr := strconv.ParseFloat(re.RawResponse.Header.Get("x-ms-request-charge"), 64); perr == nil {
			return v
		}
	}
	return 0
}

// maxMessage bounds the service message kept in a reason.
const maxMessage = 300

// describe is a one-line description of err: "400 Bad Request: <service
// message>" for a service answer (never the URL, headers or our doc), or
// the transport error without its URL.
func describe(err error) string {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		var ne net.Error
		if errors.As(err, &ne) {
			if ue, ok := ne.(interface{ Unwrap() error }); ok && ue.Unwrap() != nil {
				return ue.Unwrap().Error()
			}
		}
		return ScrubError(err).Error()
	}
	s := fmt.Sprintf("%d %s", re.StatusCode, http.StatusText(re.StatusCode))
	if msg := serviceMessage(re.RawResponse); msg != "" {
		s += ": " + msg
	}
	return s
}

// serviceMessage extracts the "message" of a Cosmos DB error body, keeping
// only its first line (the service appends ActivityId, request URI and
// diagnostics) and unwrapping `Message: {"Errors":[...]}`.
func serviceMessage(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	body, err := runtime.Payload(resp) // cached by azcore; reading it again is safe
	if err != nil {
		return ""
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	msg := strings.TrimSpace(e.Message)
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = strings.TrimSpace(msg[:i])
	}
	if rest, ok := strings.CutPrefix(msg, "Message: "); ok {
		var inner struct{ Errors []string }
		if json.Unmarshal([]byte(strings.TrimSuffix(rest, ",")), &inner) == nil && len(inner.Errors) > 0 {
			msg = strings.Join(inner.Errors, "; ")
		} else {
			msg = rest
		}
	}
	msg = strings.TrimRight(msg, ".,; ") // the stand-in ends some messages with ".,"
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "…"
	}
	return msg
}
