package azure

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// A query's answer read doc by doc (docs/design.md, "verify"). The SDK
// (azcosmos v1.5.0) reads a page's whole body, unmarshals its docs and
// marshals each again: some five times the page's bytes at once. Here
// the SDK still builds, signs (account key or Microsoft Entra ID),
// routes, retries and paces the query's requests, through the same
// pipeline as every other request of the client; only the answer is
// read differently. A policy of that pipeline, the last before the
// transport, asks azcore not to download the body of a query whose
// context carries a querySink (DocReader.QueryAll), reads the answer's
// "Documents" array as it arrives (answerReader), hands each doc to the
// sink as soon as it is whole, and gives the SDK the answer's status and
// headers (the continuation among them) with an empty page. A page then
// costs about a doc's bytes and the reader's buffer, whatever its size.
// A failure while the body is read (a dropped connection, an attempt
// that ran out of time) is the attempt's failure, retried by the retry
// rule (retry.go) like a failure to get an answer; the attempt that
// reads the page again hands on only the docs after those the sink has
// had.

// querySinkKey is the context key of a *querySink.
type querySinkKey struct{}

// querySink is where the docs of one query's pages go.
type querySink struct {
	fn func(doc []byte) error
	// handed counts the docs of the page being read that fn has had,
	// over every attempt at that page; newPage resets it.
	handed int
	// err is fn's error, which ends the query.
	err error
}

// errSinkStopped is the failed attempt of a query whose sink returned an
// error: no retry rule retries it, and QueryAll returns the sink's
// error in its place.
var errSinkStopped = errors.New("the reader of the query's docs stopped")

// withQuerySink returns ctx carrying s: the answers of the queries sent
// in it are handed to s doc by doc.
func withQuerySink(ctx context.Context, s *querySink) context.Context {
	return context.WithValue(ctx, querySinkKey{}, s)
}

// newPage readies s for the next page of its query.
func (s *querySink) newPage() { s.handed = 0 }

// emptyPage is the body the SDK gets in place of a page read doc by doc.
const emptyPage = `{"Documents":[]}`

// queryStreamPolicy reads the answers of the queries whose context
// carries a querySink (see the top of this file); it leaves every other
// request alone. It is safe for concurrent use; a querySink is not.
type queryStreamPolicy struct{}

func (queryStreamPolicy) Do(req *policy.Request) (*http.Response, error) {
	s, ok := req.Raw().Context().Value(querySinkKey{}).(*querySink)
	if class, _ := requestClass(req.Raw()); !ok || class != "query" {
		return req.Next()
	}
	runtime.SkipBodyDownload(req) // azcore downloads an error's body anyway
	resp, err := req.Next()
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	err = s.read(resp.Body)
	if cerr := resp.Body.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader([]byte(emptyPage)))
	resp.ContentLength = int64(len(emptyPage))
	resp.Header.Set("Content-Length", strconv.Itoa(len(emptyPage)))
	return resp, nil
}

// read reads a query's answer from body (answerReader) and hands each
// doc of its "Documents" array to s.fn, but for the first s.handed, which
// fn had from an earlier attempt. Docs are handed on as the service sent
// them, each in a slice of its own. It returns the body's error
// (io.ErrUnexpectedEOF in its chain for a body that ends early), an
// *unreadableAnswerError for an answer that is not a page of docs, or
// errSinkStopped when fn failed.
func (s *querySink) read(body io.Reader) error {
	ar := newAnswerReader(body)
	if err := ar.take('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		if c, ok := ar.next(); ok && c == '}' {
			return nil
		}
		if !first {
			if err := ar.take(','); err != nil {
				return err
			}
		}
		name, err := ar.name()
		if err != nil {
			return err
		}
		if err := ar.take(':'); err != nil {
			return err
		}
		if name == "Documents" {
			err = s.readDocs(ar)
		} else {
			_, err = ar.value()
		}
		if err != nil {
			return err
		}
	}
}

// readDocs reads the array of docs that ar is at.
func (s *querySink) readDocs(ar *answerReader) error {
	if err := ar.take('['); err != nil {
		return err
	}
	for i := 0; ; i++ {
		if c, ok := ar.next(); ok && c == ']' {
			ar.off++
			return nil
		}
		if i > 0 {
			if err := ar.take(','); err != nil {
				return err
			}
		}
		doc, err := ar.value()
		if err != nil {
			return err
		}
		if i < s.handed {
			continue
		}
		s.handed++
		if err := s.fn(bytes.Clone(doc)); err != nil {
			s.err = err
			return errSinkStopped
		}
	}
}

// unreadableAnswerError is a query's answer that is not a page of docs:
// got stands where want belongs.
type unreadableAnswerError struct{ want, got string }

func (e *unreadableAnswerError) Error() string {
	return "the query's answer is not a page of docs: " + e.got + " where " + e.want + " belongs"
}
