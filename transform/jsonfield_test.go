package transform

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Repeated names keep the last value at the first position, in objects
// of every size and at every depth; Value gives the same tree.
func TestDecodeJSONFieldRepeatedNames(t *testing.T) {
	var large, largeWant strings.Builder
	large.WriteString(`{`)
	largeWant.WriteString(`{`)
	for i := range 20 {
		fmt.Fprintf(&large, `"k%d":%d,`, i, i)
		if i > 0 {
			largeWant.WriteString(`,`)
		}
		v := strconv.Itoa(i)
		if i%3 == 0 {
			v = fmt.Sprintf(`{"again":%d}`, i)
		}
		fmt.Fprintf(&largeWant, `"k%d":%s`, i, v)
	}
	for i := 0; i < 20; i += 3 {
		fmt.Fprintf(&large, `"k%d":{"again":%d},`, i, i)
	}
	large.WriteString(`"k0":{"again":0}}`)
	largeWant.WriteString(`}`)
	tests := []struct{ in, want string }{
		{`{"a":1,"b":{"x":[1],"y":2,"x":{"z":"\u00e9"}},"a":[true]}`, `{"a":[true],"b":{"x":{"z":"é"},"y":2}}`},
		{`[{"a":1,"a":22222,"b":3},{"a":{"a":1,"a":2},"a":"s"}]`, `[{"a":22222,"b":3},{"a":"s"}]`},
		{`{"\u0061":1,"a":2,"b":"\/","b":"x"}`, `{"a":2,"b":"x"}`},
		{large.String(), largeWant.String()},
	}
	for _, tt := range tests {
		v, _, err := decodeJSONField(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		js, err := v.MarshalJSON()
		if err != nil || string(js) != tt.want {
			t.Errorf("%s:\ngot  %s (%v)\nwant %s", tt.in, js, err, tt.want)
		}
		tree, err := appendValue(nil, v.Value())
		if err != nil || string(tree) != tt.want {
			t.Errorf("%s: Value() writes %s (%v), want %s", tt.in, tree, err, tt.want)
		}
	}
}

// The limits: nesting (objects and arrays), numbers beyond a double, long
// integers, and a second value after the first.
func TestDecodeJSONFieldLimits(t *testing.T) {
	tests := []struct {
		in, want, err string
		big           bool
	}{
		{in: strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), want: strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)},
		{in: strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001), err: "invalid JSON: nested deeper than 10000"},
		{in: strings.Repeat("9", 299), want: strings.Repeat("9", 299), big: true},
		{in: strings.Repeat("9", 308), want: strings.Repeat("9", 308), big: true},
		{in: "[" + strings.Repeat("9", 310) + "]", err: "number out of range"},
		{in: `1e-400`, want: `1e-400`},
		{in: `-1E+308`, want: `-1E+308`},
		{in: `{"a":[2e308]}`, err: "number out of range"},
		{in: `1 2`, err: "invalid JSON at offset 2"},
		{in: `"a" "b"`, err: "invalid JSON at offset 4"},
		{in: `{"a":1,"b":2,}`, err: "invalid JSON at offset 13"},
	}
	for _, tt := range tests {
		v, big, err := decodeJSONField(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%.30s: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%.30s: %v", tt.in, err)
			continue
		}
		if js, _ := v.MarshalJSON(); string(js) != tt.want || big != tt.big {
			t.Errorf("%.30s: %.30s, big %v; want %.30s, big %v", tt.in, js, big, tt.want, tt.big)
		}
	}
}
