package numfmt

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567",
		-5: "-5", -123: "-123", -1234: "-1,234", -123456: "-123,456",
	} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
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
