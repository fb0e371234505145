package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The seed corpora run with plain go test; go test -fuzz=FuzzX explores.

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{
		"2025-11-20T14:03:12.345678", "2025-11-20T14:03:12", "2025-11-20 14:03", "2025-11-20T14:03:12Z",
		"2025-11-20T14:03:12.1234567+05:30", "2025-11-20T00:30:00-0800", "2025-11-20T23:30:00-01",
		"0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59.999999999-23:59:59", "2024-02-29T00:00:00",
		"", "yesterday", "2025-13-45T25:61:00", "2025-11-20T14:03:12.", "2025-11-20T14:03:12+",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, ok := ParseTimestamp(s)
		if !ok {
			return
		}
		if tm.Location() != time.UTC || tm.Nanosecond()%100 != 0 {
			t.Fatalf("ParseTimestamp(%q) = %v: not UTC at 100 ns", s, tm)
		}
		out := FormatTimestamp(tm)
		if len(out) != len(TimestampLayout) {
			t.Fatalf("FormatTimestamp(ParseTimestamp(%q)) = %q", s, out)
		}
		back, ok := ParseTimestamp(out)
		if !ok || !back.Equal(tm) || FormatTimestamp(back) != out {
			t.Fatalf("round trip of %q: %q → %v, %v", s, out, back, ok)
		}
	})
}

func FuzzDecodeJSONField(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,false,null],"c":"\u00e9\ud83d\ude00\n"}`, `[]`, ` 3.25e-2 `, `"\ud800x"`, `"\ud800\u0041"`,
		`{"a":1,"a":2}`, `12345678901234567890`, `1e400`, `-0`, `{"x":{"y":[[[]]]}}`, "\"\xff\"",
		`{'a': 1}`, `NaN`, `[1,]`, `{"a"}`, `01`, `1.`, `"\x"`, `tru`, ``, `  `, `{"a":1}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, _, err := decodeJSONField(s)
		valid := json.Valid([]byte(s))
		if errors.Is(err, errNumberRange) || (err != nil && strings.Contains(err.Error(), "nested deeper")) {
			return // stricter than encoding/json on purpose
		}
		if (err == nil) != valid {
			t.Fatalf("decodeJSONField(%q) error %v, but json.Valid = %v", s, err, valid)
		}
		if err != nil {
			return
		}
		// Same value as encoding/json decodes.
		var std any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", s, err)
		}
		got, err1 := Canonical(v)
		want, err2 := Canonical(std)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: canonical %s (%v), encoding/json's %s (%v)", s, got, err1, want, err2)
		}
		// The doc encoding of the value reads back to the same value.
		js, err := appendValue(nil, v)
		if err != nil || !utf8.Valid(js) {
			t.Fatalf("%q: encode %v", s, err)
		}
		v2, _, err := decodeJSONField(string(js))
		if err != nil {
			t.Fatalf("%q: re-decode %s: %v", s, js, err)
		}
		if again, _ := Canonical(v2); !bytes.Equal(again, got) {
			t.Fatalf("%q: round trip %s ≠ %s", s, again, got)
		}
	})
}

func FuzzEncodeID(f *testing.F) {
	for _, s := range []string{
		"config-smtp-host", "a/b\\c?d#e%f", "100%25", "%", "\x00\x1f\x7f", "zoë/müller", "\xff\xfe",
		strings.Repeat("/", 100), strings.Repeat("é", 200), strings.Repeat("a%", 130),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := EncodeID(s)
		back, err := DecodeID(enc)
		if err != nil || back != s {
			t.Fatalf("DecodeID(EncodeID(%q)) = %q, %v", s, back, err)
		}
		for i := 0; i < len(enc); i++ {
			if c := enc[i]; c == '/' || c == '\\' || c == '?' || c == '#' || c < 0x20 || c == 0x7f {
				t.Fatalf("EncodeID(%q) = %q keeps byte %#x", s, enc, c)
			}
		}
		id, encoded, truncated := SanitizeID(s)
		if len(id) > MaxIDBytes {
			t.Fatalf("SanitizeID(%q) is %d bytes", s, len(id))
		}
		if encoded != (enc != s) || truncated != (len(enc) > MaxIDBytes) {
			t.Fatalf("SanitizeID(%q) flags %v %v", s, encoded, truncated)
		}
		if !truncated && id != enc {
			t.Fatalf("SanitizeID(%q) = %q, want %q", s, id, enc)
		}
		if truncated {
			prefix, _, _ := strings.Cut(id, "~")
			if !strings.HasPrefix(enc, prefix) || len(prefix) > idTruncatedPrefix {
				t.Fatalf("SanitizeID(%q) = %q: prefix is not the encoded id's", s, id)
			}
			if _, err := DecodeID(prefix); err != nil {
				t.Fatalf("SanitizeID(%q) = %q splits an escape", s, id)
			}
		}
		if utf8.ValidString(s) && !utf8.ValidString(id) {
			t.Fatalf("SanitizeID(%q) = %q is not valid UTF-8", s, id)
		}
	})
}

func TestDecodeJSONField(t *testing.T) {
	tests := []struct {
		in, want, err string
		big           bool
	}{
		{in: `{"b":1,"a":[true,null,"x"]}`, want: `{"b":1,"a":[true,null,"x"]}`},
		{in: ` {"a":1,"b":2,"a":3} `, want: `{"a":3,"b":2}`},
		{in: `1.50`, want: `1.50`},
		{in: `-0`, want: `-0`},
		{in: `"\u00e9\ud83d\ude00\/\t"`, want: "\"é😀/\\t\""},
		{in: `"\ud800"`, want: "\"\uFFFD\""},
		{in: `"\ud800\u0041"`, want: "\"\uFFFDA\""},
		{in: `9007199254740992`, want: `9007199254740992`},
		{in: `9007199254740993`, want: `9007199254740993`, big: true},
		{in: `[-12345678901234567890]`, want: `[-12345678901234567890]`, big: true},
		{in: `1e400`, err: "number out of range"},
		{in: `NaN`, err: "invalid JSON at offset 0"},
		{in: `{"a":1,}`, err: "invalid JSON at offset 7"},
		{in: `[1 2]`, err: "invalid JSON at offset 3"},
		{in: `"a` + "\n" + `"`, err: "invalid JSON at offset 2"},
		{in: `{"a":1} x`, err: "invalid JSON at offset 8"},
		{in: ``, err: "invalid JSON at offset 0"},
		{in: strings.Repeat("[", 10001), err: "invalid JSON: nested deeper than 10000"},
	}
	for _, tt := range tests {
		v, big, err := decodeJSONField(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%.20q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		js, _ := appendValue(nil, v)
		if err != nil || string(js) != tt.want || big != tt.big {
			t.Errorf("%q: %s, big %v, %v; want %s, big %v", tt.in, js, big, err, tt.want, tt.big)
		}
	}
}
