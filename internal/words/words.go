// Package words says values and counts in the tool's messages: a value
// the user gave, quoted and cut short (Quote), and a count with its noun
// in agreement (Count), a count with thousands separators (Thousands)
// and a fraction as a percentage (Percent). It is a leaf: cmd, init,
// migrate and verify use it.
package words

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// QuoteLimit is how many characters of a value Quote shows.
const QuoteLimit = 64

// Quote returns s as a Go-quoted string, like %q, with at most
// QuoteLimit characters of it: a longer s is cut there and "…" follows
// the closing quote, so that a message about a bad value stays one short
// line whatever its size (a 1 MB container id, a whole file given as a
// flag's value).
func Quote(s string) string {
	if short, cut := Cut(s, QuoteLimit); cut {
		return strconv.Quote(short) + "…"
	}
	return strconv.Quote(s)
}

// Cut returns the first limit characters of s and true, or s and false
// when it has no more than limit; it never cuts inside a character.
func Cut(s string, limit int) (string, bool) {
	if utf8.RuneCountInString(s) <= limit {
		return s, false
	}
	n := 0
	for i := range s {
		if n == limit {
			return s[:i], true
		}
		n++
	}
	return s, false
}

// Count returns n and the noun that agrees with it: "1 row", "0 rows",
// "2 rows" (one is the singular, many the plural).
func Count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// Thousands writes n with a comma between each group of three digits:
// "20,000", "-1,234", "7".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Percent writes the fraction f as a percentage to six significant
// digits, with no trailing zeros, no exponent and a space before the
// sign: 0.01 is "1 %", 0.005 "0.5 %", 0.07 "7 %" (not 7.000000000000001).
func Percent(f float64) string {
	p, _ := strconv.ParseFloat(strconv.FormatFloat(f*100, 'g', 6, 64), 64)
	return strconv.FormatFloat(p, 'f', -1, 64) + " %"
}
