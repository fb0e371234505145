package azure

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/bifrost/bifrost-migrate/transform"
)

// tablesAPIVersion is the Table service REST version the reader speaks.
const tablesAPIVersion = "2019-02-02"

// PageSize is the most rows the Table service returns in one page.
const PageSize = 1000

// Continuation is where the next page of a table query starts. The zero
// value means "from the beginning" when passed in, and "no more pages" when
// returned.
type Continuation struct {
	NextPartitionKey string `json:"nextPartitionKey,omitempty"`
	NextRowKey       string `json:"nextRowKey,omitempty"`
}

// IsZero reports whether c is the zero Continuation.
func (c Continuation) IsZero() bool { return c == Continuation{} }

// Query selects rows of one table.
type Query struct {
	// Filter is an OData $filter expression, evaluated by the service, e.g.
	// TimestampFilter(t). Empty means every row.
	Filter string
	// Select limits the properties returned ($select). Empty means all.
	Select []string
	// Top is the page size; 0 means PageSize.
	Top int
}

// Page is one page of rows, in the service's key order.
type Page struct {
	Rows []transform.Row
	// Next is the continuation of the following page; zero when this page
	// is the last. A page may be empty and still have a Next.
	Next Continuation
}

// TableReader reads Table Storage through the service's annotated JSON and
// decodes it itself (transform.DecodeEntity), so numbers stay exact. It is
// safe for concurrent use.
type TableReader struct {
	pl       runtime.Pipeline
	endpoint string
	account  StorageAccount
}

// NewTableReader returns a reader for the account's table endpoint. base,
// when not nil, replaces the HTTP transport (tests).
func NewTableReader(a StorageAccount, base http.RoundTripper) *TableReader {
	pl := runtime.NewPipeline("bifrost-migrate", "v1", runtime.PipelineOptions{
		PerRetry: []policy.Policy{&sharedKeyLitePolicy{account: a}},
	}, &policy.ClientOptions{Transport: HTTPClient(a.TableEndpoint, base)})
	return &TableReader{pl: pl, endpoint: a.TableEndpoint, account: a}
}

// TimestampFilter returns the OData filter "Timestamp ge datetime'…'".
func TimestampFilter(since time.Time) string {
	return "Timestamp ge datetime'" + since.UTC().Format("2006-01-02T15:04:05.0000000Z") + "'"
}

// ReadPage reads one page of table starting at from. A row whose keys are
// readable but whose properties are not comes back with its keys and
// Row.DecodeError set (transform dead-letters it); any other error returns
// nothing. A failed request returns a *ResourceError naming the table (a
// missing table: 404 with ErrorCode TableNotFound); no error contains
// credentials.
func (r *TableReader) ReadPage(ctx context.Context, table string, q Query, from Continuation) (Page, error) {
	body, next, err := r.query(ctx, table, q, from)
	if err != nil {
		return Page{}, err
	}
	raws, err := splitValue(body)
	if err != nil {
		return Page{}, fmt.Errorf("table %s: %w", table, err)
	}
	rows := make([]transform.Row, 0, len(raws))
	for _, raw := range raws {
		row, err := transform.DecodeEntity(table, raw)
		if err != nil {
			if row.PartitionKey == "" && row.RowKey == "" {
				// Not even the keys: nothing to dead-letter the row under.
				return Page{}, fmt.Errorf("table %s: %w", table, err)
			}
			// A value that does not match its annotation: the row goes on
			// with its keys and the reason, to be dead-lettered.
			row.DecodeError = err.Error()
		}
		rows = append(rows, row)
	}
	return Page{Rows: rows, Next: next}, nil
}

// Count returns the number of rows matching filter, reading keys only
// ($select=PartitionKey,RowKey) page by page.
func (r *TableReader) Count(ctx context.Context, table, filter string) (int64, error) {
	var n int64
	q := Query{Filter: filter, Select: []string{"PartitionKey", "RowKey"}}
	err := r.Scan(ctx, table, q, Continuation{}, func(p Page) error {
		n += int64(len(p.Rows))
		return nil
	})
	return n, err
}

// Exists reports whether the table exists.
func (r *TableReader) Exists(ctx context.Context, table string) (bool, error) {
	_, _, err := r.query(ctx, table, Query{Top: 1, Select: []string{"PartitionKey"}}, Continuation{})
	if err == nil {
		return true, nil
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return false, nil
	}
	return false, err
}

// fail wraps a failed request about table in a *ResourceError.
func (r *TableReader) fail(table string, err error) error {
	return &ResourceError{
		Resource: Resource{Service: ServiceTables, Kind: KindTable, Name: table, Endpoint: r.endpoint},
		Op:       "table " + table,
		Err:      err,
	}
}

func (r *TableReader) query(ctx context.Context, table string, q Query, from Continuation) ([]byte, Continuation, error) {
	u := r.endpoint + "/" + url.PathEscape(table) + "()"
	req, err := runtime.NewRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, Continuation{}, fmt.Errorf("table %s: %w", table, err)
	}
	v := url.Values{}
	top := q.Top
	if top <= 0 || top > PageSize {
		top = PageSize
	}
	v.Set("$top", strconv.Itoa(top))
	if q.Filter != "" {
		v.Set("$filter", q.Filter)
	}
	if len(q.Select) > 0 {
		v.Set("$select", strings.Join(q.Select, ","))
	}
	if from.NextPartitionKey != "" {
		v.Set("NextPartitionKey", from.NextPartitionKey)
	}
	if from.NextRowKey != "" {
		v.Set("NextRowKey", from.NextRowKey)
	}
	raw := v.Encode()
	if r.account.SAS != "" {
		raw += "&" + r.account.SAS
	}
	req.Raw().URL.RawQuery = raw
	req.Raw().Header.Set("Accept", "application/json;odata=minimalmetadata")
	req.Raw().Header.Set("DataServiceVersion", "3.0")
	req.Raw().Header.Set("MaxDataServiceVersion", "3.0;NetFx")
	resp, err := r.pl.Do(req)
	if err != nil {
		return nil, Continuation{}, r.fail(table, ScrubError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, Continuation{}, r.fail(table, runtime.NewResponseError(resp))
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, Continuation{}, fmt.Errorf("table %s: read page: %w", table, err)
	}
	next := Continuation{
		NextPartitionKey: resp.Header.Get("x-ms-continuation-NextPartitionKey"),
		NextRowKey:       resp.Header.Get("x-ms-continuation-NextRowKey"),
	}
	return body, next, nil
}

// splitValue returns the raw entities of a query response {"value":[...]}.
func splitValue(body []byte) ([]json.RawMessage, error) {
	var resp struct {
		Value []json.RawMessage `json:"value"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&resp); err != nil {
		return nil, fmt.Errorf("decode page: %w", err)
	}
	return resp.Value, nil
}

// sharedKeyLitePolicy signs Table service requests (SharedKeyLite:
// x-ms-date + "\n" + canonicalized resource).
type sharedKeyLitePolicy struct{ account StorageAccount }

func (p *sharedKeyLitePolicy) Do(req *policy.Request) (*http.Response, error) {
	h := req.Raw().Header
	h.Set("x-ms-version", tablesAPIVersion)
	date := time.Now().UTC().Format(http.TimeFormat)
	h.Set("x-ms-date", date)
	if p.account.Key != "" {
		key, err := base64.StdEncoding.DecodeString(p.account.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: AccountKey is not valid base64", ErrBadConnection)
		}
		resource := "/" + p.account.Name + req.Raw().URL.EscapedPath()
		if comp := req.Raw().URL.Query().Get("comp"); comp != "" {
			resource += "?comp=" + comp
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(date + "\n" + resource))
		h.Set("Authorization", "SharedKeyLite "+p.account.Name+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return req.Next()
}

// Scan reads table from `from` to the end, calling fn for each page in key
// order, including empty pages that still carry a continuation. It stops at
// the first error, from the service or from fn.
func (r *TableReader) Scan(ctx context.Context, table string, q Query, from Continuation, fn func(Page) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := r.ReadPage(ctx, table, q, from)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if page.Next.IsZero() {
			return nil
		}
		from = page.Next
	}
}
