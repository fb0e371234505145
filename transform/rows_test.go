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

// TestParseIndex: the key fields of each index kind; user ids and
// workflow names may contain ':', the execution id is the last field and
// a workflowexec partition the one before it.
func TestParseIndex(t *testing.T) {
	for _, c := range []struct {
		rk   string
		want IndexRow
		ok   bool
	}{
		{"userexec:alice@contoso.example:e1", IndexRow{Kind: "userexec", Key: "alice@contoso.example", ExecutionID: "e1"}, true},
		{"userexec:system:scheduler:e2", IndexRow{Kind: "userexec", Key: "system:scheduler", ExecutionID: "e2"}, true},
		{"userexec::e2", IndexRow{Kind: "userexec", Key: "", ExecutionID: "e2"}, true},
		{"workflowexec:sync_users:7c9e6679:e3", IndexRow{Kind: "workflowexec", Key: "sync_users", Partition: "7c9e6679", ExecutionID: "e3"}, true},
		{"workflowexec:sync_users:org-7c9e6679:e3", IndexRow{Kind: "workflowexec", Key: "sync_users", Partition: "org-7c9e6679", ExecutionID: "e3"}, true},
		{"workflowexec:wf:a:b:GLOBAL:e3", IndexRow{Kind: "workflowexec", Key: "wf:a:b", Partition: "GLOBAL", ExecutionID: "e3"}, true},
		{"formexec:f1:e4", IndexRow{Kind: "formexec", Key: "f1", ExecutionID: "e4"}, true},
		{"status:CompletedWithErrors:e-5", IndexRow{Kind: "status", Key: "CompletedWithErrors", ExecutionID: "e-5"}, true},
		{"workflowexec:wf:e3", IndexRow{}, false},
		{"status:Pending:", IndexRow{}, false},
		{"userexec:e1", IndexRow{}, false},
		{"userexec", IndexRow{}, false},
		{"userperm:u:o", IndexRow{}, false},
	} {
		got, ok := ParseIndex(c.rk)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseIndex(%q) = %+v, %v; want %+v, %v", c.rk, got, ok, c.want, c.ok)
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
