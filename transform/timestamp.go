package transform

import "time"

// TimestampLayout is the doc timestamp format (SPEC §2): UTC, fixed width,
// seven fractional digits, so that timestamps sort lexically.
const TimestampLayout = "2006-01-02T15:04:05.0000000Z"

// FormatTimestamp formats t in TimestampLayout after converting it to UTC.
// Precision below 100 ns is truncated. A time whose UTC year is outside
// 0001–9999 cannot be written in the format; FormatTimestamp then returns
// "" (ParseTimestamp never returns such a time).
func FormatTimestamp(t time.Time) string {
	var buf [28]byte
	return string(appendTimestamp(buf[:0], t))
}

// appendTimestamp appends FormatTimestamp(t) to b.
func appendTimestamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return b
	}
	// By hand rather than with AppendFormat: this runs for several
	// properties of every row.
	var buf [28]byte
	putDateTime(buf[:], t)
	buf[19] = '.'
	putDigits(buf[20:27], t.Nanosecond()/100)
	buf[27] = 'Z'
	return append(b, buf[:]...)
}

// putDateTime writes t's date and time of day, YYYY-MM-DDTHH:MM:SS, into
// buf[:19].
func putDateTime(buf []byte, t time.Time) {
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	putDigits(buf[0:4], year)
	buf[4] = '-'
	putDigits(buf[5:7], int(month))
	buf[7] = '-'
	putDigits(buf[8:10], day)
	buf[10] = 'T'
	putDigits(buf[11:13], hour)
	buf[13] = ':'
	putDigits(buf[14:16], minute)
	buf[16] = ':'
	putDigits(buf[17:19], sec)
}

// putDigits writes v's last len(buf) decimal digits into buf, padded with
// zeros.
func putDigits(buf []byte, v int) {
	for j := len(buf) - 1; j >= 0; j-- {
		buf[j] = byte('0' + v%10)
		v /= 10
	}
}

// ParseTimestamp parses a timestamp as Bifrost writes it and reports
// whether it could. It accepts Python's isoformat():
//
//	YYYY-MM-DD[T| ]HH:MM[:SS[.f…]][Z|±HH[:MM[:SS]]|±HHMM]
//
// with 1 to 9 fractional digits (digits beyond the 7th, i.e. below 100 ns,
// are truncated). A time without an offset is UTC; one with an offset is
// converted to UTC. Field ranges are checked (no February 30th, no hour 24,
// no leap second), and a time whose UTC year falls outside 0001–9999 is
// rejected because it cannot be written in TimestampLayout.
func ParseTimestamp(s string) (time.Time, bool) {
	p := tsParser{s: s}
	year, ok1 := p.digits(4)
	ok2 := p.byte('-')
	month, ok3 := p.digits(2)
	ok4 := p.byte('-')
	day, ok5 := p.digits(2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || p.i >= len(s) || (s[p.i] != 'T' && s[p.i] != 't' && s[p.i] != ' ') {
		return time.Time{}, false
	}
	p.i++
	hour, ok1 := p.digits(2)
	ok2 = p.byte(':')
	minute, ok3 := p.digits(2)
	if !(ok1 && ok2 && ok3) {
		return time.Time{}, false
	}
	sec, nsec := 0, 0
	if p.peek(':') {
		p.i++
		var ok bool
		if sec, ok = p.digits(2); !ok {
			return time.Time{}, false
		}
		if p.peek('.') || p.peek(',') {
			p.i++
			n := 0
			for p.i < len(s) && s[p.i] >= '0' && s[p.i] <= '9' {
				if n < 9 {
					nsec = nsec*10 + int(s[p.i]-'0')
				}
				n++
				p.i++
			}
			if n == 0 || n > 9 {
				return time.Time{}, false
			}
			for range 9 - n {
				nsec *= 10
			}
		}
	}
	offset := 0
	switch {
	case p.i == len(s):
	case s[p.i] == 'Z' || s[p.i] == 'z':
		p.i++
	case s[p.i] == '+' || s[p.i] == '-':
		sign := 1
		if s[p.i] == '-' {
			sign = -1
		}
		p.i++
		oh, ok := p.digits(2)
		if !ok || oh > 23 {
			return time.Time{}, false
		}
		om, os := 0, 0
		colon := p.peek(':')
		if colon {
			p.i++
		}
		if p.i < len(s) {
			if om, ok = p.digits(2); !ok || om > 59 {
				return time.Time{}, false
			}
			if colon && p.peek(':') {
				p.i++
				if os, ok = p.digits(2); !ok || os > 59 {
					return time.Time{}, false
				}
			}
		} else if colon {
			return time.Time{}, false
		}
		offset = sign * (oh*3600 + om*60 + os)
	default:
		return time.Time{}, false
	}
	if p.i != len(s) {
		return time.Time{}, false
	}
	if year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC).
		Add(-time.Duration(offset) * time.Second).
		Truncate(100 * time.Nanosecond)
	if y := t.Year(); y < 1 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

type tsParser struct {
	s string
	i int
}

func (p *tsParser) digits(n int) (int, bool) {
	if len(p.s)-p.i < n {
		return 0, false
	}
	v := 0
	for _, c := range []byte(p.s[p.i : p.i+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v, true
}

func (p *tsParser) byte(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *tsParser) peek(c byte) bool {
	return p.i < len(p.s) && p.s[p.i] == c
}
