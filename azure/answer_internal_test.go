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
