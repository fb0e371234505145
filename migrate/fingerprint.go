package migrate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bifrost/bifrost-migrate/transform"
)

// ErrTooManyDeadLetters is returned (wrapped) when --max-errors stops a
// run.
var ErrTooManyDeadLetters = errors.New("too many dead letters")

// FingerprintError is returned when a saved state was written with other
// options than the run's. Saved and Wanted are the two fingerprints
// (State.Fingerprint); Differences names the options that differ.
type FingerprintError struct {
	Dir           string
	Saved, Wanted string
}

// Error names the differing options as key=value (keys as in
// Differences), or, if none can be told apart, the two fingerprints.
func (e *FingerprintError) Error() string {
	diffs := e.Differences()
	if len(diffs) == 0 {
		return fmt.Sprintf("the saved run in %s used other options (%s) than this one (%s); run with the saved options to resume, or use --restart to start over", e.Dir, e.Saved, e.Wanted)
	}
	saved := make([]string, len(diffs))
	wanted := make([]string, len(diffs))
	for i, d := range diffs {
		saved[i] = d.Key + "=" + d.Saved
		wanted[i] = d.Key + "=" + d.Wanted
	}
	return fmt.Sprintf("the saved run in %s used %s, this run %s; run with the saved options to resume, or use --restart to start over", e.Dir, strings.Join(saved, " "), strings.Join(wanted, " "))
}

// Differences returns the options whose values differ between the saved
// fingerprint and this run's, in the order of this run's fingerprint,
// then those only the saved one has.
func (e *FingerprintError) Differences() []SettingDiff {
	return DiffFingerprints(e.Saved, e.Wanted)
}

// Setting is one option recorded in a run's fingerprint.
type Setting struct {
	// Key is the option's name: a transform option (blob-threshold,
	// execution-ttl, relationships, strict, as run's flags name them),
	// tables, table-prefix, or "target." followed by a part of
	// RunOptions.Target (e.g. target.database).
	Key   string
	Value string
}

// SettingDiff is an option whose value differs between two fingerprints;
// a value is empty where its fingerprint lacks the key.
type SettingDiff struct {
	Key           string
	Saved, Wanted string
}

// fingerprint is the text saved in State.Fingerprint: the transform
// options, the tables, the table prefix and the target. Its format is
// that of every state.json written so far; ParseFingerprint reads it.
func fingerprint(topts transform.Options, tables []string, tablePrefix, target string) string {
	return fmt.Sprintf("%s;tables=%s;table-prefix=%s;target=%s", topts.Fingerprint(), strings.Join(tables, ","), tablePrefix, target)
}

// ParseFingerprint splits a fingerprint into its settings, in order.
// Parts are "key=value" separated by ';'; everything after "target=" is
// the target, itself "key=value" parts (cosmos=…;database=…), returned
// with the key prefixed by "target.". A part without '=' is kept as a key
// with an empty value.
func ParseFingerprint(fp string) []Setting {
	var out []Setting
	inTarget := false
	for _, part := range strings.Split(fp, ";") {
		k, v, _ := strings.Cut(part, "=")
		switch {
		case inTarget:
			k = "target." + k
		case k == "target":
			inTarget = true
			if tk, tv, ok := strings.Cut(v, "="); ok {
				k, v = "target."+tk, tv
			}
		}
		out = append(out, Setting{Key: k, Value: v})
	}
	return out
}

// DiffFingerprints returns the settings whose values differ between the
// fingerprints saved and wanted (see FingerprintError.Differences).
func DiffFingerprints(saved, wanted string) []SettingDiff {
	s, w := ParseFingerprint(saved), ParseFingerprint(wanted)
	find := func(ss []Setting, key string) (string, bool) {
		for _, x := range ss {
			if x.Key == key {
				return x.Value, true
			}
		}
		return "", false
	}
	var out []SettingDiff
	for _, x := range w {
		if sv, _ := find(s, x.Key); sv != x.Value {
			out = append(out, SettingDiff{Key: x.Key, Saved: sv, Wanted: x.Value})
		}
	}
	for _, x := range s {
		if _, ok := find(w, x.Key); !ok && x.Value != "" {
			out = append(out, SettingDiff{Key: x.Key, Saved: x.Value})
		}
	}
	return out
}
