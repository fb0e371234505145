package transform

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The vectors in testdata/python were written by Python 3.11 (gen.py
// there); these tests compare the Go encoders with them.

// readVectors decodes every line of testdata/python/<name> into a new T.
func readVectors[T any](t *testing.T, name string) []T {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "python", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("%s: only %d vectors", name, len(out))
	}
	return out
}

func TestPythonJSONVectors(t *testing.T) {
	for _, v := range readVectors[struct{ In, Out string }](t, "json.jsonl") {
		dv, _, err := decodeJSONField(v.In)
		if err != nil {
			t.Errorf("decodeJSONField(%q): %v", v.In, err)
			continue
		}
		got, err := pythonJSON(dv)
		if err != nil || got != v.Out {
			t.Errorf("json.dumps(json.loads(%q))\ngot  %q (%v)\nwant %q", v.In, got, err, v.Out)
		}
		// The plain Go tree (Doc, []any, json.Number) encodes the same.
		if got2, err := pythonJSON(dv.Value()); err != nil || got2 != v.Out {
			t.Errorf("%q via Value(): %q (%v)", v.In, got2, err)
		}
	}
}

func TestPythonFloatVectors(t *testing.T) {
	for _, v := range readVectors[struct{ Bits, Repr string }](t, "floats.jsonl") {
		raw, err := hex.DecodeString(v.Bits)
		if err != nil || len(raw) != 8 {
			t.Fatalf("bad bits %q", v.Bits)
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(raw))
		if got := string(appendPythonFloat(nil, f)); got != v.Repr {
			t.Errorf("repr(%v) = %q, want %q", f, got, v.Repr)
		}
		// json.loads of the repr text, dumped again, is the same text.
		if got, err := pythonJSON(json.Number(v.Repr)); err != nil || got != v.Repr {
			t.Errorf("json.dumps(json.loads(%q)) = %q (%v)", v.Repr, got, err)
		}
	}
}

func TestPythonTimeVectors(t *testing.T) {
	for _, v := range readVectors[struct {
		T, ISO    string
		ReverseTs int64
	}](t, "times.jsonl") {
		tm, err := time.Parse(time.RFC3339Nano, v.T)
		if err != nil {
			t.Fatal(err)
		}
		if got := pythonISOFormat(tm); got != v.ISO {
			t.Errorf("isoformat(%s) = %q, want %q", v.T, got, v.ISO)
		}
		if got := pythonReverseTs(tm); got != v.ReverseTs {
			t.Errorf("reverse timestamp of %s = %d, want %d", v.T, got, v.ReverseTs)
		}
		// A seventh fractional digit (100 ns) changes neither.
		tm7 := tm.Add(700 * time.Nanosecond)
		if pythonISOFormat(tm7) != v.ISO || pythonReverseTs(tm7) != v.ReverseTs {
			t.Errorf("%s + 700 ns: %q %d", v.T, pythonISOFormat(tm7), pythonReverseTs(tm7))
		}
	}
}

func TestPythonJSONErrors(t *testing.T) {
	for _, v := range []any{map[string]any{"a": 1}, json.Number("1.2.3"), json.Number(""), struct{}{}, []any{int32(1)}} {
		if s, err := pythonJSON(v); err == nil {
			t.Errorf("pythonJSON(%#v) = %q, want an error", v, s)
		}
	}
	// Go integers and doubles as Python types them; invalid UTF-8 as U+FFFD.
	for _, c := range []struct {
		in   any
		want string
	}{
		{int64(-7), "-7"}, {7, "7"}, {float64(7), "7.0"}, {math.Inf(-1), "-Infinity"}, {math.NaN(), "NaN"},
		{"a\xffb", `"a\ufffdb"`}, {Doc{{"k", []any{nil, true}}}, `{"k": [null, true]}`},
	} {
		if got, err := pythonJSON(c.in); err != nil || got != c.want {
			t.Errorf("pythonJSON(%#v) = %q (%v), want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzPythonJSON: whatever the forward decoder accepts, json.dumps form
// is pure ASCII, decodes (by the forward decoder) to the same value, and
// is a fixed point: encoding its decoding gives the same bytes.
func FuzzPythonJSON(f *testing.F) {
	for _, s := range []string{
		`{"a": 1, "b": [true, false, null], "c": "\u00e9\ud83d\ude00\n"}`, `[1.50, 1E5, -0, -0.0, 5e-324]`,
		`"\u007f\u0000/\\\""`, `{"a":1,"a":2}`, `12345678901234567890`, `1e-400`, "\"\xff\xfe\"", `"\ud800x"`,
		`{"z":{"y":[[{}]]}}`, `0.0001`, `1e16`, `123456789012345678.0`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, _, err := decodeJSONField(s)
		if err != nil {
			return
		}
		out, err := pythonJSON(v)
		if err != nil {
			t.Fatalf("pythonJSON(%q): %v", s, err)
		}
		for i := 0; i < len(out); i++ {
			if out[i] < ' ' || out[i] > '~' {
				t.Fatalf("%q: output %q has byte %#x outside ' '…'~'", s, out, out[i])
			}
		}
		back, _, err := decodeJSONField(out)
		if err != nil {
			t.Fatalf("%q: output %q does not decode: %v", s, out, err)
		}
		c1, err1 := Canonical(v)
		c2, err2 := Canonical(back)
		if err1 != nil || err2 != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("%q → %q: value changed\n%s (%v)\n%s (%v)", s, out, c1, err1, c2, err2)
		}
		again, err := pythonJSON(back)
		if err != nil || again != out {
			t.Fatalf("%q: not a fixed point\n%q\n%q (%v)", s, out, again, err)
		}
		if !utf8.ValidString(s) && !strings.Contains(out, `\ufffd`) {
			t.Fatalf("%q: invalid UTF-8 in, no U+FFFD out: %q", s, out)
		}
	})
}
