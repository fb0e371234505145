package azure

import (
	"net/http"
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
