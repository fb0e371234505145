package migrate

import (
	"encoding/json"
	"testing"
)

// TestCountsAddEveryField: the Add of each count type adds every field
// (it is written out field by field): a count with every JSON field 1,
// added to itself, has every field 2. A field added to the type and not
// to its Add fails here.
func TestCountsAddEveryField(t *testing.T) {
	check := func(name string, zero any, add func(ones []byte) (any, error)) {
		t.Helper()
		raw, err := json.Marshal(zero)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]int64
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatal(err)
		}
		for k := range fields {
			fields[k] = 1
		}
		ones, _ := json.Marshal(fields)
		sum, err := add(ones)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ = json.Marshal(sum)
		var got map[string]int64
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		for k := range fields {
			if got[k] != 2 {
				t.Errorf("%s.Add: %s is %d, want 2", name, k, got[k])
			}
		}
	}
	check("ReplayCounts", ReplayCounts{}, func(ones []byte) (any, error) {
		var c ReplayCounts
		err := json.Unmarshal(ones, &c)
		c.Add(c)
		return c, err
	})
	check("ReverseCounts", ReverseCounts{}, func(ones []byte) (any, error) {
		var c ReverseCounts
		err := json.Unmarshal(ones, &c)
		c.Add(c)
		return c, err
	})
}
