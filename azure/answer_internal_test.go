package azure

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestAnswerReader: a query's answer, read whole and a byte at a time,
// hands on each doc exactly as the service wrote it, whatever its
// strings and brackets hold and whatever the answer's other members
// are; an answer that is not a page of docs is unreadable, and one that
// ends early is io.ErrUnexpectedEOF, as a dropped connection.
func TestAnswerReader(t *testing.T) {
	big := `{"id":"big","t":"` + strings.Repeat(`x\"]}{[`, 20000) + `"}`
	docs := []string{
		`{"id":"a","n":1}`,
		`{ "id" : "b" , "s":"]}\\", "q":"\"", "e":"\\\"]", "a":[1,[2,{"x":null}],"}"], "u":"\u00e9\n" }`,
		`{}`, `[]`, `3`, `-1.5e3`, `true`, `null`, `"a string, with ] and }"`, big,
	}
	page := " {\"_rid\":\"coll\", \"x\":{\"Documents\":[1,\"]\"]},\n\"Documents\" : [ " + strings.Join(docs, " ,\n") + " ] , \"_count\":10, \"n\":7}"
	for _, r := range []io.Reader{strings.NewReader(page), iotest.OneByteReader(strings.NewReader(page)), iotest.DataErrReader(strings.NewReader(page))} {
		var got []string
		s := &querySink{fn: func(doc []byte) error { got = append(got, string(doc)); return nil }}
		if err := s.read(r); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(docs, "\n") {
			t.Fatalf("docs:\n%.500s\nwant:\n%.500s", strings.Join(got, "\n"), strings.Join(docs, "\n"))
		}
	}
	for _, c := range []struct{ answer, err string }{
		{`<html>busy</html>`, `the query's answer is not a page of docs: '<' where { belongs`},
		{`["not","a","page"]`, `the query's answer is not a page of docs: [ where { belongs`},
		{`{"Documents":[{"a":1]}]}`, `the query's answer is not a page of docs: ] where } belongs`},
		{`{"Documents":[{"a":1} {"b":2}]}`, `the query's answer is not a page of docs: { where , belongs`},
		{`{"Documents":[,]}`, `the query's answer is not a page of docs: , where value belongs`},
		{`{"Documents" []}`, `the query's answer is not a page of docs: [ where : belongs`},
		{`{"Documents":{}}`, `the query's answer is not a page of docs: { where [ belongs`},
		{`{7:[]}`, `the query's answer is not a page of docs: number where string belongs`},
		{`{"a":1 "Documents":[]}`, `the query's answer is not a page of docs: string where , belongs`},
	} {
		s := &querySink{fn: func([]byte) error { return nil }}
		err := s.read(strings.NewReader(c.answer))
		var u *unreadableAnswerError
		if !errors.As(err, &u) || err.Error() != c.err || !Unreadable(err) {
			t.Errorf("answer %s: error %v, want unreadable %q", c.answer, err, c.err)
		}
	}
	for _, cut := range []string{``, `{`, `{"Docu`, `{"Documents":[`, `{"Documents":[{"a":"x`, `{"Documents":[{"a":1},`, `{"Documents":[1`, `{"Documents":[{"a":1}]`} {
		s := &querySink{fn: func([]byte) error { return nil }}
		err := s.read(strings.NewReader(cut))
		if !errors.Is(err, io.ErrUnexpectedEOF) || Unreadable(err) || TransportOf(err).Failure != ConnClosed {
			t.Errorf("answer cut at %q: error %v, want io.ErrUnexpectedEOF, a closed connection", cut, err)
		}
	}
	broken := errors.New("connection reset by the test")
	s := &querySink{fn: func([]byte) error { return nil }}
	if err := s.read(io.MultiReader(strings.NewReader(`{"Documents":[{"a":`), iotest.ErrReader(broken))); err != broken {
		t.Errorf("a body that fails: %v, want its error", err)
	}
}

// BenchmarkAnswerReader reads a page of 1,000 execution docs as the
// service answers a query (docs/performance.md, "verify").
func BenchmarkAnswerReader(b *testing.B) {
	doc := `{"id":"00000000-0001-4ae9-8463-216f3ed463ae","type":"execution","scope":"org-x","executionId":"00000000-0001-4ae9-8463-216f3ed463ae",` +
		`"workflowName":"add_to_group","formId":"79804f12-5715-4c9f-a30f-961a0d56dc47","executedBy":"bob.dubois0@tenant01.example","executedByName":"Bob Dubois",` +
		`"status":"Success","inputData":{"correlationId":"00000000-5554-4474-8c63-eac6cf4c6347","field0":"domain license quota archive","notes":"license license risk account alias mailbox connector policy","requestedBy":"bob.dubois0@tenant01.example"},` +
		`"result":{"items":[{"count":1123,"id":"00000000-0010-4432-8ae8-5c2fdcfae843","name":"policy token licence","ok":true},{"count":3382,"id":"00000000-0011-416d-8c6f-3ef7523c6f16","name":"owner risk consent","ok":false}],"summary":"mailbox group application","user":"bob.dubois0@tenant01.example","workflow":"add_to_group"},` +
		`"resultType":"json","resultInBlob":false,"resultSize":1184,"resultBlobPath":null,"errorMessage":null,"durationMs":4467,"startedAt":"2026-11-28T14:15:33.4150000Z","completedAt":"2026-11-28T14:15:37.8820000Z",` +
		`"logsBlobPath":null,"variablesBlobPath":null,"snapshotBlobPath":null,"ttl":1208421,"_migration":{"table":"Entities","partitionKey":"x","rowKey":"execution:8204124666584_00000000-0001-4ae9-8463-216f3ed463ae","timestamp":"2026-11-28T14:34:46.0012345Z","hash":"4b80cd448cd8c12d75f3dc71d325ff04d45f4f4ac93b48f7e445fa193ee08b81"},` +
		`"_rid":"AAAAAA==","_self":"dbs/AA==/colls/AA==/docs/AAAAAA==/","_etag":"\"0000-0000\"","_attachments":"attachments/","_ts":1764000000}`
	docs := make([]string, 1000)
	for i := range docs {
		docs[i] = doc
	}
	page := `{"_rid":"coll","Documents":[` + strings.Join(docs, ",") + `],"_count":1000}`
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		s := &querySink{fn: func([]byte) error { return nil }}
		if err := s.read(strings.NewReader(page)); err != nil {
			b.Fatal(err)
		}
	}
}
