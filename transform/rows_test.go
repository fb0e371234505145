package transform

import (
	"slices"
	"testing"
	"unicode/utf16"
)

func TestCompareUTF16MatchesUTF16Encoding(t *testing.T) {
	samples := []string{"", "a", "b", "ab", "a\x00", "é", "\uE000", "\uFFFD", "\uFFFF", "😀", "😀a", "\U00010000",
		"𝄞", "z\uE000", "z😀", "org-1", "org-10", "\xff", "a\xffb", "ä", "Ä"}
	for _, a := range samples {
		for _, b := range samples {
			want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
			if got := CompareUTF16(a, b); got != want {
				t.Errorf("CompareUTF16(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func FuzzCompareUTF16(f *testing.F) {
	f.Add("\uE000", "😀")
	f.Add("abc", "abd")
	f.Fuzz(func(t *testing.T, a, b string) {
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := CompareUTF16(a, b); got != want {
			t.Errorf("CompareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}

func TestCompareKeysAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { CompareKeys("org-😀", "user:a", "org-\uE000", "user:b") }); n != 0 {
		t.Errorf("CompareKeys allocates %v times", n)
	}
}

func TestSelectTables(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []string
		err  string
	}{
		{nil, []string{"Config", "Entities", "Relationships"}, ""},
		{[]string{"Relationships", "Config", "Relationships"}, []string{"Config", "Relationships"}, ""},
		{[]string{"Users"}, nil, `unknown table "Users" (want Config, Entities or Relationships)`},
	} {
		got, err := SelectTables(c.in)
		if (err != nil) != (c.err != "") || (err != nil && err.Error() != c.err) || !slices.Equal(got, c.want) {
			t.Errorf("SelectTables(%v) = %v, %v; want %v, %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestExecutionIDs(t *testing.T) {
	row := Row{RowKey: "execution:8205514467878_a-1", Props: map[string]Value{"ExecutionId": {Type: EdmString, Str: "b-2"}}}
	if p, k := ExecutionIDs(row); p != "b-2" || k != "a-1" || ExecutionID(row) != "b-2" {
		t.Errorf("ExecutionIDs = %q, %q; ExecutionID %q", p, k, ExecutionID(row))
	}
	delete(row.Props, "ExecutionId")
	if ExecutionID(row) != "a-1" {
		t.Errorf("without the property: %q", ExecutionID(row))
	}
	if p, k := ExecutionIDs(Row{RowKey: "user:x"}); p != "" || k != "" {
		t.Errorf("a user row: %q, %q", p, k)
	}
	s := ExecutionSet{}
	s.AddRow(Row{RowKey: "execution:1_a", Props: map[string]Value{"ExecutionId": {Type: EdmString, Str: "b"}}})
	if !s.Has("a") || !s.Has("b") || s.Has("c") {
		t.Errorf("ExecutionSet: a %v, b %v, c %v", s.Has("a"), s.Has("b"), s.Has("c"))
	}
}

func TestBlobIndex(t *testing.T) {
	idx := BlobIndex{}
	for _, n := range []string{"e1/result.json", "e1/logs.json", "e2/result.txt", "e3/other.bin", "e4/x/result.json", "loose.json"} {
		if err := idx.Add(n, 7); err != nil {
			t.Fatal(err)
		}
	}
	if !idx.Exists("e1/result.json") || !idx.Exists("e1/logs.json") || idx.Exists("e1/result.txt") || idx.Exists("e3/other.bin") ||
		idx.Exists("e4/x/result.json") || len(idx) != 2 {
		t.Errorf("index of %d executions: %v", len(idx), idx)
	}
	if f := idx.Facts("e2"); !f.Exists(BlobResultText) || idx.Facts("").Exists(BlobResultText) {
		t.Errorf("facts of e2: %+v", f)
	}
}
