package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// The migration's options (SPEC §12). verify, replay and reverse judge
// and write with the transform options of the run whose state is in
// --state-dir: a flag not given takes the run's value, and the command
// says so in one line; a flag given with another value than the run's is
// a warning that names both (verify: the verdict is then computed with
// it, and says so) or a usage error (replay, reverse: they would write
// docs or rows in another form than the migration's). A run of another
// target (other Cosmos DB account, database, tables or blob container)
// lends nothing, and that is said too.

// runOptions are the settings of a run's fingerprint that the other
// commands take from it, as their flags name them.
var runOptions = []string{"execution-ttl", "blob-threshold", "relationships", "strict", "table-prefix"}

// adopt applies the options of the run in dir to the flags t was bound
// to (see above), before the command connects (the table prefix names
// the tables it checks). command names the command in sentences; writes
// says it writes (replay, reverse), which makes a differing option an
// error. A state that cannot be read is a warning: the flags' values are
// used. What it has to say (where the options come from, what differs)
// is said by say, which the command calls once it is at work, after its
// start-up line: a command refused before that prints only its error.
func (t *TransformFlags) adopt(o *ui.Output, command, dir string, writes bool) (say func(), err error) {
	var lines []func()
	say = func() {
		for _, l := range lines {
			l()
		}
	}
	status := func(format string, args ...any) { lines = append(lines, func() { o.Status(format, args...) }) }
	warning := func(format string, args ...any) { lines = append(lines, func() { o.Warning(format, args...) }) }
	if t.fs == nil {
		return say, nil // not bound to flags: the options are the caller's
	}
	st, err := migrate.LoadState(dir)
	switch {
	case err != nil:
		why := "it is not a run's state this version reads"
		var pe *fs.PathError
		if errors.As(err, &pe) {
			why = pe.Err.Error()
		}
		warning("%s cannot be read (%s), so %s uses its flags' options, not the migration's: %s",
			filepath.Join(dir, migrate.StateFile), why, command, joinAnd(t.phrases()))
		return say, nil
	case st == nil:
		status("no migration in %s (no %s): %s uses %s; give the run's --state-dir to use its options",
			dir, migrate.StateFile, command, joinAnd(t.phrases()))
		return say, nil
	}
	saved := map[string]string{}
	var other []string
	for _, s := range migrate.ParseFingerprint(st.Fingerprint) {
		saved[s.Key] = s.Value
	}
	for _, s := range migrate.ParseFingerprint("target=" + t.target) {
		if t.target != "" && !sameTarget(saved[s.Key], s.Value) {
			other = append(other, optionPhrase(s.Key, saved[s.Key]))
		}
	}
	run := fmt.Sprintf("run %s in %s", st.RunID, dir)
	if len(other) > 0 {
		warning("the %s migrated another target (%s), so %s uses its flags' options, not that run's", run, joinAnd(other), command)
		return say, nil
	}
	var taken, differ []string
	for _, key := range runOptions {
		v, ok := saved[key]
		f := t.fs.Lookup(key)
		if !ok || f == nil {
			continue
		}
		if t.fs.Changed(key) {
			if given := f.Value.String(); given != v {
				differ = append(differ, fmt.Sprintf("%s where the migration used %s", optionPhrase(key, given), optionPhrase(key, v)))
			}
			continue
		}
		// The flags given are valid (checked before): a value that is
		// not is the state's, and must not be said as a flag's.
		if t.fs.Set(key, v) != nil || t.validate() != nil {
			return say, fmt.Errorf("%s holds %s, which this version cannot use; give the option as a flag", filepath.Join(dir, migrate.StateFile), optionPhrase(key, v))
		}
		if key != "table-prefix" || v != "" {
			taken = append(taken, optionPhrase(key, v))
		}
	}
	if len(taken) > 0 {
		status("the migration's options (%s): %s", run, strings.Join(taken, ", "))
	}
	switch {
	case len(differ) == 0:
	case writes:
		return say, UsageError(fmt.Errorf("%s (%s): %s would write in another form than the migration did; leave those flags out to use the migration's, or give the --state-dir of the migration you mean",
			joinAnd(differ), run, command))
	default:
		warning("%s (%s): this verdict is computed with the options given, not the migration's", joinAnd(differ), run)
	}
	return say, nil
}

// phrases names the transform options the flags hold now, as a user sets
// them.
func (t *TransformFlags) phrases() []string {
	out := make([]string, 0, len(runOptions))
	for _, key := range runOptions {
		if f := t.fs.Lookup(key); f != nil && (key != "table-prefix" || f.Value.String() != "") {
			out = append(out, optionPhrase(key, f.Value.String()))
		}
	}
	return out
}

// sameTarget reports whether two values of a target setting name the
// same place: endpoints compared by scheme-less host, without the port,
// and path (an account reached by a connection string and by an Entra ID
// endpoint, or through a local proxy, is the same account); names as
// they are.
func sameTarget(a, b string) bool {
	return a == b || endpointKey(a) == endpointKey(b)
}

// endpointKey is the host (lower case, no port) and path of an endpoint,
// and what follows a "/" it is joined to (a blob container); a value that
// is not a URL is itself.
func endpointKey(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	return strings.ToLower(u.Hostname()) + strings.TrimSuffix(u.Path, "/")
}
