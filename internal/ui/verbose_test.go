package ui

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// --verbose prints every request without query strings (a SAS), headers
// or bodies.
func TestVerboseTransportPrintsRequestsWithoutSecrets(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	v := &VerboseTransport{
		Next: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPut {
				return nil, &url.Error{Op: "Put", URL: req.URL.String(), Err: errors.New("connection refused")}
			}
			return &http.Response{StatusCode: 404, Status: "404 Not Found", Body: http.NoBody, Request: req}, nil
		}),
		W:   &out,
		Now: func() time.Time { return clock },
	}
	for _, m := range []string{http.MethodGet, http.MethodPut} {
		req, _ := http.NewRequest(m, "https://acct.blob.core.windows.net/execution-data/a%2Fb?sv=2020&sig=SECRETSIG", nil)
		req.Header.Set("Authorization", "SharedKey acct:SECRETAUTH")
		resp, _ := v.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
	}
	want := "http: GET https://acct.blob.core.windows.net/execution-data/a%2Fb → 404 Not Found (0s)\n" +
		"http: PUT https://acct.blob.core.windows.net/execution-data/a%2Fb → error: Put \"https://acct.blob.core.windows.net/execution-data/a%2Fb\": connection refused (0s)\n"
	if out.String() != want {
		t.Errorf("verbose output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// roundTripFunc is a RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
