package cmd

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/transform"
)

// TransformFlags are the flags that change what a doc looks like. run sets
// them; verify, replay and reverse take run's from the state directory
// (adopt, migration.go) unless given.
type TransformFlags struct {
	ExecutionTTL  string
	BlobThreshold int
	Relationships string
	Strict        bool
	// forRun chooses help that describes the choice (run) rather than
	// asking for run's choice (verify, replay, reverse).
	forRun bool
	// fs is the flag set the flags are bound to (adopt: which were
	// given); target is where the command works as run's state names it
	// (target.fingerprint), "" when it cannot be told before connecting.
	fs     *pflag.FlagSet
	target string
}

// bind adds the flags to fl.
func (t *TransformFlags) bind(fl *pflag.FlagSet) {
	t.fs = fl
	help := [4]string{
		"the inline result limit run used, in `bytes` (without it: the run's in --state-dir)",
		"the ttl mode run used: remaining, full or none (without it: the run's in --state-dir)",
		"the relationships mode run used: keep or migrate (without it: the run's in --state-dir)",
		"run used --strict: unknown kinds were dead-lettered (without it: the run's in --state-dir)",
	}
	if t.forRun {
		help = [4]string{
			"inline results longer than this many `bytes` move to a blob",
			"execution ttl: remaining, full or none",
			"non-index relationships: keep (in Table Storage) or migrate",
			"dead-letter rows of unknown kinds instead of migrating them",
		}
	}
	fl.IntVar(&t.BlobThreshold, "blob-threshold", transform.DefaultBlobThreshold, help[0])
	fl.StringVar(&t.ExecutionTTL, "execution-ttl", string(transform.TTLRemaining), help[1])
	fl.StringVar(&t.Relationships, "relationships", string(transform.RelationshipsKeep), help[2])
	fl.BoolVar(&t.Strict, "strict", false, help[3])
}

// validate checks the flags' values: options at any time fails only for
// them (the clock is the command's, given to options when it starts).
func (t *TransformFlags) validate() error {
	_, err := t.options(time.Unix(0, 0))
	return err
}

// options returns the transform options at now, or a usage error naming
// the flag that is wrong.
func (t TransformFlags) options(now time.Time) (transform.Options, error) {
	switch ttl, rel := transform.TTLMode(t.ExecutionTTL), transform.RelationshipsMode(t.Relationships); {
	case t.BlobThreshold <= 0:
		return transform.Options{}, badValue("--blob-threshold", t.BlobThreshold, "a positive number of bytes")
	case !ttl.Valid():
		return transform.Options{}, badValue("--execution-ttl", t.ExecutionTTL, joinOr(names(transform.TTLModes())))
	case !rel.Valid():
		return transform.Options{}, badValue("--relationships", t.Relationships, joinOr(names(transform.RelationshipsModes())))
	}
	o := transform.Options{
		Now:           now.UTC(),
		BlobThreshold: t.BlobThreshold,
		ExecutionTTL:  transform.TTLMode(t.ExecutionTTL),
		Relationships: transform.RelationshipsMode(t.Relationships),
		Strict:        t.Strict,
	}
	// What else Validate checks (the clock) is the command's, not a flag's.
	if err := o.Validate(); err != nil {
		return transform.Options{}, err
	}
	return o, nil
}

// names returns the names of modes, for a sentence.
func names[S ~string](modes []S) []string {
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = string(m)
	}
	return out
}
