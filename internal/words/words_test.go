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
