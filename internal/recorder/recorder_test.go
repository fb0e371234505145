package recorder

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
)

func TestRecorderCountsByMethodAndPath(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	rec := New(nil)
	client := &http.Client{Transport: rec}

	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(srv.URL + "/dbs/a?x=1")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/dbs/a/colls/b", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	if got := rec.Count(http.MethodGet); got != 20 {
		t.Errorf("Count(GET) = %d, want 20", got)
	}
	if got := rec.CountPath(http.MethodGet, "/dbs/a"); got != 20 {
		t.Errorf("CountPath(GET, /dbs/a) = %d, want 20", got)
	}
	if got := rec.CountPath(http.MethodPut, "/dbs/a"); got != 0 {
		t.Errorf("CountPath(PUT, /dbs/a) = %d, want 0", got)
	}
	if got, want := rec.ByMethod(), map[string]int{"GET": 20, "PUT": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("ByMethod() = %v, want %v", got, want)
	}
	if got, want := rec.Writes(), []Request{{Method: "PUT", Path: "/dbs/a/colls/b"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Writes() = %v, want %v", got, want)
	}
	if got := len(rec.Requests()); got != 21 {
		t.Errorf("len(Requests()) = %d, want 21", got)
	}
	rec.Reset()
	if got := len(rec.Requests()); got != 0 {
		t.Errorf("after Reset, len(Requests()) = %d, want 0", got)
	}
}

func TestRecorderRecordsFailedRequests(t *testing.T) {
	rec := New(nil)
	client := &http.Client{Transport: rec}
	if _, err := client.Post("http://127.0.0.1:1/nothing", "text/plain", nil); err == nil {
		t.Fatal("POST to port 1 succeeded")
	}
	if got := rec.Count(http.MethodPost); got != 1 {
		t.Errorf("Count(POST) = %d, want 1", got)
	}
}
