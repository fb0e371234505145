package words

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	long := strings.Repeat("a", QuoteLimit)
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"bad/db", `"bad/db"`},
		{"tab\there", `"tab\there"`},
		{long, `"` + long + `"`},
		{long + "b", `"` + long + `"…`},
		{strings.Repeat("x", 1<<20), `"` + strings.Repeat("x", QuoteLimit) + `"…`},
		// Cut at a character, never inside one.
		{strings.Repeat("é", QuoteLimit+1), `"` + strings.Repeat("é", QuoteLimit) + `"…`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.80q) = %.100s, want %.100s", tc.in, got, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 rows"}, {1, "1 row"}, {2, "2 rows"}, {-1, "-1 rows"}, {1000, "1000 rows"},
	} {
		if got := Count(tc.n, "row", "rows"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Count(1, "index row deleted", "index rows deleted"); got != "1 index row deleted" {
		t.Errorf("Count(1, index row deleted) = %q", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567",
		-5: "-5", -123: "-123", -1234: "-1,234", -123456: "-123,456",
	} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPercent(t *testing.T) {
	for f, want := range map[float64]string{
		1: "100 %", 0.5: "50 %", 0.05: "5 %", 0.07: "7 %", 0.01: "1 %", 0.005: "0.5 %",
		0.001: "0.1 %", 0.123456789: "12.3457 %", 1e-7: "0.00001 %", 0.29: "29 %",
	} {
		if got := Percent(f); got != want {
			t.Errorf("Percent(%g) = %q, want %q", f, got, want)
		}
	}
}
