// Package numfmt writes numbers as the tool's output shows them to an
// operator: counts with thousands separators ("20,000") and fractions as
// percentages ("1 %", "0.5 %").
package numfmt

import (
	"strconv"
	"strings"
)

// Count writes n with a comma between each group of three digits:
// "20,000", "-1,234", "7".
func Count(n int64) string {
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
