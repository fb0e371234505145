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
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// tablesAPIVersion is the Table service REST version the reader speaks.
const tablesAPIVersion = "2019-02-02"

// TableReader reads Table Storage through the service's annotated JSON and
// decodes it itself (transform.DecodeEntity), so numbers stay exact. It is
// safe for concurrent use.
type TableReader struct {
	pl       runtime.Pipeline
	endpoint string
	account  StorageAccount
}

// NewTableReader returns a reader for the account's table endpoint, whose
// requests travel and are retried as o says.
func NewTableReader(a StorageAccount, o Options) *TableReader {
	co := o.client(a.TableEndpoint, "Table Storage")
	perRetry := []policy.Policy{&sharedKeyLitePolicy{account: a}}
	if a.Auth() == "Entra ID" {
		perRetry = append(perRetry, runtime.NewBearerTokenPolicy(o.credential(), []string{storageScope}, nil))
	}
	pl := runtime.NewPipeline("bifrost-migrate", "v1", runtime.PipelineOptions{PerRetry: perRetry}, &co)
	return &TableReader{pl: pl, endpoint: a.TableEndpoint, account: a}
}

// filter returns the OData $filter of q: its Timestamp bound, its keys
// and its key bounds (store.Query.Match is the same filter in memory),
// joined with "and"; "" for every row.
func filter(q store.Query) string {
	var parts []string
	if !q.Since.IsZero() {
		parts = append(parts, "Timestamp ge datetime'"+q.Since.UTC().Format("2006-01-02T15:04:05.0000000Z")+"'")
	}
	if q.Key != nil {
		parts = append(parts, "PartitionKey eq '"+odataQuote(q.Key.PartitionKey)+"' and RowKey eq '"+odataQuote(q.Key.RowKey)+"'")
	}
	if q.From != nil {
		parts = append(parts, keyBound(*q.From, "gt", "ge"))
	}
	if q.To != nil {
		parts = append(parts, keyBound(*q.To, "lt", "lt"))
	}
	if q.After != nil {
		parts = append(parts, keyBound(*q.After, "gt", "gt"))
	}
	return strings.Join(parts, " and ")
}

// keyBound is the filter of the keys on one side of k: PartitionKey pkOp
// k's, or the same PartitionKey with RowKey rkOp k's; an empty RowKey in a
// "ge" or "lt" bound bounds by the PartitionKey alone.
func keyBound(k store.Key, pkOp, rkOp string) string {
	pk := "'" + odataQuote(k.PartitionKey) + "'"
	if k.RowKey == "" && (rkOp == "ge" || rkOp == "lt") {
		return "PartitionKey " + rkOp + " " + pk
	}
	return "(PartitionKey " + pkOp + " " + pk + " or (PartitionKey eq " + pk + " and RowKey " + rkOp + " '" + odataQuote(k.RowKey) + "'))"
}

// odataQuote doubles the single quotes of a string literal.
func odataQuote(s string) string { return strings.ReplaceAll(s, "'", "''") }

// ReadPage reads one page of table starting at from. A row whose keys are
// readable but whose properties are not comes back with its keys and
// Row.DecodeError set (transform dead-letters it); any other error returns
// nothing. A failed request returns a *ResourceError naming the table (a
// missing table: 404 with ErrorCode TableNotFound); no error contains
// credentials.
//
// A query of one row by its keys alone (Query.Key, no other bound) is a
// point read, the cheapest request the service has: it reads that row
// and no other, where a filter may scan a partition.
func (r *TableReader) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	var raws []json.RawMessage
	var next store.Cursor
	if pointRead(q) {
		raw, found, err := r.getRow(ctx, table, *q.Key, q.Select)
		if err != nil || !found {
			return store.Page{}, err
		}
		raws = []json.RawMessage{raw}
	} else {
		body, cur, err := r.query(ctx, table, q, from)
		if err != nil {
			return store.Page{}, err
		}
		if raws, err = splitValue(body); err != nil {
			return store.Page{}, fmt.Errorf("table %s: %w", table, err)
		}
		next = cur
	}
	rows := make([]transform.Row, 0, len(raws))
	for _, raw := range raws {
		row, err := transform.DecodeEntity(table, raw)
		if err != nil {
			if row.PartitionKey == "" && row.RowKey == "" {
				// Not even the keys: nothing to dead-letter the row under.
				return store.Page{}, fmt.Errorf("table %s: %w", table, err)
			}
			// A value that does not match its annotation: the row goes on
			// with its keys and the reason, to be dead-lettered.
			row.DecodeError = err.Error()
		}
		rows = append(rows, row)
	}
	return store.Page{Rows: rows, Next: next}, nil
}

// Count returns the number of rows q selects, reading keys only
// ($select=PartitionKey,RowKey) page by page.
func (r *TableReader) Count(ctx context.Context, table string, q store.Query) (int64, error) {
	var n int64
	q.Select = []string{"PartitionKey", "RowKey"}
	err := store.Scan(ctx, r, "", table, q, store.Cursor{}, func(p store.Page) error {
		n += int64(len(p.Rows))
		return nil
	})
	return n, err
}

// Exists reports whether the table exists.
func (r *TableReader) Exists(ctx context.Context, table string) (bool, error) {
	_, _, err := r.query(ctx, table, store.Query{Top: 1, Select: []string{"PartitionKey"}}, store.Cursor{})
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
		Err:      withFault(err),
	}
}

func (r *TableReader) query(ctx context.Context, table string, q store.Query, from store.Cursor) ([]byte, store.Cursor, error) {
	v := url.Values{}
	top := q.Top
	if top <= 0 || top > store.PageSize {
		top = store.PageSize
	}
	v.Set("$top", strconv.Itoa(top))
	if f := filter(q); f != "" {
		v.Set("$filter", f)
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
	resp, err := r.get(ctx, table, r.endpoint+"/"+url.PathEscape(table)+"()", v)
	if err != nil {
		return nil, store.Cursor{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, store.Cursor{}, r.fail(table, runtime.NewResponseError(resp))
	}
	// The pipeline read the body already (a connection broken while
	// reading it is retried there): no copy of a page of megabytes.
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil, store.Cursor{}, fmt.Errorf("table %s: read page: %w", table, err)
	}
	next := store.Cursor{
		NextPartitionKey: resp.Header.Get("x-ms-continuation-NextPartitionKey"),
		NextRowKey:       resp.Header.Get("x-ms-continuation-NextRowKey"),
	}
	return body, next, nil
}

// pointRead reports whether q reads one row by its keys and nothing else
// bounds it. Empty keys, which the service allows but some emulators do
// not address, go through a query.
func pointRead(q store.Query) bool {
	return q.Key != nil && q.Key.PartitionKey != "" && q.Key.RowKey != "" &&
		q.Since.IsZero() && q.From == nil && q.To == nil && q.After == nil
}

// get sends a GET of u (a query or an entity of table) with the query
// parameters v and the account's SAS, asking for JSON with minimal
// metadata. A request that gets no answer is a ResourceError naming table.
func (r *TableReader) get(ctx context.Context, table, u string, v url.Values) (*http.Response, error) {
	req, err := runtime.NewRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", table, err)
	}
	raw := v.Encode()
	if r.account.SAS != "" {
		raw = strings.TrimPrefix(raw+"&"+r.account.SAS, "&")
	}
	req.Raw().URL.RawQuery = raw
	req.Raw().Header.Set("Accept", "application/json;odata=minimalmetadata")
	req.Raw().Header.Set("DataServiceVersion", "3.0")
	req.Raw().Header.Set("MaxDataServiceVersion", "3.0;NetFx")
	resp, err := r.pl.Do(req)
	if err != nil {
		return nil, r.fail(table, ScrubError(err))
	}
	return resp, nil
}

// getRow reads the row of table at key (Get Entity); found is false on
// 404.
func (r *TableReader) getRow(ctx context.Context, table string, key store.Key, sel []string) (raw json.RawMessage, found bool, err error) {
	v := url.Values{}
	if len(sel) > 0 {
		v.Set("$select", strings.Join(sel, ","))
	}
	resp, err := r.get(ctx, table, r.endpoint+"/"+url.PathEscape(table)+"(PartitionKey='"+url.PathEscape(odataQuote(key.PartitionKey))+
		"',RowKey='"+url.PathEscape(odataQuote(key.RowKey))+"')", v)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		if notFound := runtime.NewResponseError(resp); isTableMissing(notFound) {
			return nil, false, r.fail(table, notFound)
		}
		return nil, false, nil
	default:
		return nil, false, r.fail(table, runtime.NewResponseError(resp))
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil, false, fmt.Errorf("table %s: read row: %w", table, err)
	}
	return body, true, nil
}

// isTableMissing reports whether a 404 says the table does not exist (not
// merely the row).
func isTableMissing(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.ErrorCode == "TableNotFound"
}

// splitValue returns the raw entities of a query response {"value":[...]}:
// slices of body, which it checks but does not copy or decode (each
// entity is decoded once, by DecodeEntity).
func splitValue(body []byte) ([]json.RawMessage, error) {
	var raws []json.RawMessage
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	err := func() error {
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			return errors.Join(err, errors.New("not a JSON object"))
		}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			if tok.String() != "value" || dec.PeekKind() != '[' {
				if err := dec.SkipValue(); err != nil {
					return err
				}
				continue
			}
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			for dec.PeekKind() != ']' {
				start := dec.InputOffset()
				if err := dec.SkipValue(); err != nil {
					return err
				}
				raws = append(raws, bytes.TrimLeft(body[start:dec.InputOffset()], ", \t\r\n"))
			}
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		if _, err := dec.ReadToken(); err != io.EOF {
			return errors.Join(err, errors.New("more after the page"))
		}
		return nil
	}()
	if err != nil {
		return nil, fmt.Errorf("decode page: %w", err)
	}
	return raws, nil
}

// sharedKeyLitePolicy sets the version and date of Table service requests
// and, for an account with a key, signs them (SharedKeyLite: x-ms-date +
// "\n" + canonicalized resource).
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
