package cmd

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/transform"
)

// TransformFlags are the flags that change what a doc looks like, as
// parsed: nothing writes them after parsing. run uses them as they are;
// verify, replay and reverse take the migration's from the state
// directory for those not given (migration, migration.go).
type TransformFlags struct {
	ExecutionTTL  string
	BlobThreshold int
	Relationships string
	Strict        bool
	// forRun chooses help that describes the choice (run) rather than
	// asking for run's choice (verify, replay, reverse).
	forRun bool
	// fs is the flag set the flags are bound to (which were given);
	// target is where the command works as run's state names it
	// (target.fingerprint), "" when it cannot be told before connecting.
	fs     *pflag.FlagSet
	target string
	// parsed are the options the flags give, parsed once by validate.
	parsed transform.Options
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

// validate parses the flags' values into the transform options they give
// (parsed, without the clock, which is the command's when it starts); a
// usage error names the flag that is wrong.
func (t *TransformFlags) validate() error {
	var prefix string
	for _, key := range []string{"blob-threshold", "execution-ttl", "relationships", "strict"} {
		value := t.value(key)
		if want, ok := setOption(&t.parsed, &prefix, key, value); !ok {
			return badValue("--"+key, value, want)
		}
	}
	return nil
}

// value is the value of the flag key (one of runOptions but
// table-prefix) as a user gives it.
func (t *TransformFlags) value(key string) string {
	switch key {
	case "blob-threshold":
		return strconv.Itoa(t.BlobThreshold)
	case "execution-ttl":
		return t.ExecutionTTL
	case "relationships":
		return t.Relationships
	}
	return strconv.FormatBool(t.Strict)
}

// setOption parses value as the migration's option key (a flag's name,
// runOptions) into o, or for --table-prefix into prefix: the one place a
// transform option is parsed and checked, for a flag as for the value a
// run's state holds. When value is not one the option takes, it returns
// what the option takes, and false.
func setOption(o *transform.Options, prefix *string, key, value string) (want string, ok bool) {
	switch key {
	case "blob-threshold":
		n, err := strconv.Atoi(value)
		if err != nil || n <= 0 {
			return "a positive number of bytes", false
		}
		o.BlobThreshold = n
	case "execution-ttl":
		if m := transform.TTLMode(value); !m.Valid() {
			return joinOr(names(transform.TTLModes())), false
		}
		o.ExecutionTTL = transform.TTLMode(value)
	case "relationships":
		if m := transform.RelationshipsMode(value); !m.Valid() {
			return joinOr(names(transform.RelationshipsModes())), false
		}
		o.Relationships = transform.RelationshipsMode(value)
	case "strict":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return "true or false", false
		}
		o.Strict = b
	case "table-prefix":
		*prefix = value
	}
	return "", true
}

// names returns the names of modes, for a sentence.
func names[S ~string](modes []S) []string {
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = string(m)
	}
	return out
}
