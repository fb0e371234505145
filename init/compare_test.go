package provision

import (
	"slices"
	"testing"
)

func TestDiffIgnoresOrderCaseDefaultsAndEtag(t *testing.T) {
	want := validContainer()
	cur := validContainer()
	cur.IndexingPolicy = IndexingPolicy{
		IndexingMode:  "Consistent",
		Automatic:     ptr(true),
		IncludedPaths: []Path{{"/startedAt/?"}, {"/status/*"}},
		ExcludedPaths: []Path{{`/"_etag"/?`}, {"/*"}},
		CompositeIndexes: [][]CompositePath{
			{{Path: "/workspace_id"}, {Path: "/startedAt", Order: "Descending"}},
		},
	}
	if d := Diff(cur, want); len(d) != 0 {
		t.Errorf("Diff of equivalent policies = %q, want none", d)
	}
}

func TestDiffLines(t *testing.T) {
	want := validContainer()
	want.IndexingPolicy.CompositeIndexes = append(want.IndexingPolicy.CompositeIndexes,
		[]CompositePath{{Path: "/status", Order: "ascending"}, {Path: "/startedAt", Order: "descending"}})
	cur := validContainer()
	cur.DefaultTTL = ptr[int64](604800)
	cur.IndexingPolicy.Automatic = ptr(false)
	cur.IndexingPolicy.IncludedPaths = []Path{{"/status/*"}, {"/formId/*"}}
	cur.IndexingPolicy.ExcludedPaths = []Path{{"/*"}, {"/result/*"}}
	// The order inside a composite index matters: it is the ORDER BY order.
	cur.IndexingPolicy.CompositeIndexes = [][]CompositePath{
		{{Path: "/startedAt", Order: "descending"}, {Path: "/workspace_id", Order: "ascending"}},
	}
	got := Diff(cur, want)
	wantLines := []string{
		"defaultTtl: 604800 -> 1209600",
		"indexingPolicy.automatic: false -> true",
		"indexingPolicy.includedPaths: - /formId/*",
		"indexingPolicy.includedPaths: + /startedAt/?",
		"indexingPolicy.excludedPaths: - /result/*",
		"indexingPolicy.compositeIndexes: - [/startedAt descending, /workspace_id ascending]",
		"indexingPolicy.compositeIndexes: + [/status ascending, /startedAt descending]",
		"indexingPolicy.compositeIndexes: + [/workspace_id ascending, /startedAt descending]",
	}
	if !slices.Equal(got, wantLines) {
		t.Errorf("Diff:\n%q\nwant\n%q", got, wantLines)
	}

	cur, want = validContainer(), validContainer()
	want.DefaultTTL = nil
	if got := Diff(cur, want); !slices.Equal(got, []string{"defaultTtl: 1209600 -> off"}) {
		t.Errorf("TTL removal: %q", got)
	}
	cur.DefaultTTL, cur.IndexingPolicy.IndexingMode = nil, "none"
	if got := Diff(cur, want); !slices.Equal(got, []string{"indexingPolicy.indexingMode: none -> consistent"}) {
		t.Errorf("mode: %q", got)
	}
}

func TestSamePartitionKey(t *testing.T) {
	def := PartitionKey{Paths: []string{"/scope"}}
	for _, tc := range []struct {
		cur  PartitionKey
		same bool
	}{
		{PartitionKey{Paths: []string{"/scope"}, Kind: "Hash", Version: 2}, true},
		{PartitionKey{Paths: []string{"/scope"}, Kind: "Hash"}, false}, // read without version: v1
		{PartitionKey{Paths: []string{"/scope"}, Kind: "Hash", Version: 1}, false},
		{PartitionKey{Paths: []string{"/tenant"}, Kind: "Hash", Version: 2}, false},
		{PartitionKey{Paths: []string{"/scope", "/id"}, Kind: "MultiHash", Version: 2}, false},
	} {
		if got := SamePartitionKey(tc.cur, def); got != tc.same {
			t.Errorf("SamePartitionKey(%+v, %+v) = %t, want %t", tc.cur, def, got, tc.same)
		}
	}
}
