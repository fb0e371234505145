package faultproxy

import (
	"strings"
	"testing"
)

// TestReadDocs: each doc of an answer comes as its own bytes, with its
// system members, whatever members come around and inside it.
func TestReadDocs(t *testing.T) {
	body := `{"_rid":"coll","Documents":[ {"id":"a","nested":{"_ts":1,"id":"x"},"_rid":"r1","_etag":"\"e1\"","_ts":17},
{"list":[1,{"id":"y"}],"id":"b\u002fc","_rid":"r2","_etag":"\"e2\"","_ts":18}],"_count":2}`
	var raws []string
	var metas []docMeta
	err := readDocs([]byte(body), func(raw []byte, d docMeta) {
		raws = append(raws, string(raw))
		metas = append(metas, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []docMeta{{RID: "r1", ID: "a", ETag: `"e1"`, TS: 17}, {RID: "r2", ID: "b/c", ETag: `"e2"`, TS: 18}}
	// null leaves a member unset, as encoding/json does.
	if err := readDocs([]byte(`{"Documents":[{"id":"n","_rid":null,"_ts":null}]}`), func(_ []byte, d docMeta) {
		if d != (docMeta{ID: "n"}) {
			t.Errorf("with nulls: %+v, want only the id", d)
		}
	}); err != nil {
		t.Errorf("with nulls: %v", err)
	}
	if len(metas) != 2 || metas[0] != want[0] || metas[1] != want[1] {
		t.Errorf("docs %+v, want %+v", metas, want)
	}
	if len(raws) != 2 || !strings.HasPrefix(raws[0], `{"id":"a"`) || !strings.HasSuffix(raws[0], `"_ts":17}`) ||
		!strings.HasPrefix(raws[1], `{"list"`) || !strings.HasSuffix(raws[1], `"_ts":18}`) {
		t.Errorf("raw docs %q", raws)
	}
	for _, bad := range []string{`{"Documents":[{"id":"a",}]}`, `{"Documents":[{"_ts":"17"}]}`, `{"Documents":[{"_rid":7}]}`, `{"Documents":[{"_etag":{}}]}`, `{"Documents":[{"id":"a"}`, `[]`} {
		if err := readDocs([]byte(bad), func([]byte, docMeta) {}); err == nil {
			t.Errorf("readDocs(%s): no error", bad)
		}
	}
}

// TestDocID: the "id" member at the top of a doc, not one nested in it.
func TestDocID(t *testing.T) {
	for body, want := range map[string]string{
		`{"id":"a","x":1}`:                 "a",
		`{"x":{"id":"nested"},"id":"top"}`: "top",
		`{"x":1}`:                          "",
		`not json`:                         "",
		`{"id":7}`:                         "",
	} {
		if got := docID([]byte(body)); got != want {
			t.Errorf("docID(%s) = %q, want %q", body, got, want)
		}
	}
}

// TestFeedAnswer: the page's docs with their "_lsn", and their count.
func TestFeedAnswer(t *testing.T) {
	got := string(feedAnswer([]*feedEntry{{lsn: 3, body: []byte(`{"id":"a"}`)}, {lsn: 9, body: []byte(`{}`)}}))
	if want := `{"Documents":[{"id":"a","_lsn":3},{"_lsn":9}],"_count":2}`; got != want {
		t.Errorf("feed answer %s, want %s", got, want)
	}
}
