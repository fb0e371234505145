package cmd

import (
	"context"
	"strings"
	"testing"
)

func TestRUDuration(t *testing.T) {
	for _, c := range []struct {
		ru    int64
		maxRU float64
		want  string
	}{
		{720000, 1000, "≈ 12 min at 1,000 RU/s"},
		{50, 1000, "≈ 1 s at 1,000 RU/s"},
		{36_000_000, 5000, "≈ 2 h 00 min at 5,000 RU/s"},
		{45_000_000, 4000, "≈ 3 h 08 min at 4,000 RU/s"},
		{1000, 2.5, "≈ 7 min at 2.5 RU/s"},
		{1000, 0, "pass --max-ru N to see how long that takes at N RU/s"},
	} {
		if got := ruDuration(c.ru, c.maxRU); got != c.want {
			t.Errorf("ruDuration(%d, %g) = %q, want %q", c.ru, c.maxRU, got, c.want)
		}
	}
}

func TestMaxRUMustBePositive(t *testing.T) {
	for _, v := range []string{"0", "-5", "+Inf"} {
		f, _, errOut := newTestFactory(nil)
		code := Execute(context.Background(), f, []string{"run", "--max-ru", v})
		want := "bifrost-migrate: --max-ru \"" + v + "\": want a positive number of request units per second\n"
		if code != ExitUsage || !strings.HasPrefix(errOut.String(), want) {
			t.Errorf("--max-ru %s: exit %d, stderr %q; want 2 and %q…", v, code, errOut, want)
		}
	}
}
