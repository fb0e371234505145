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
	"github.com/bifrost/bifrost-migrate/transform"
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

// migrationOptions are the options a command judges or writes with: its
// transform options (Now is the command's to set) and table prefix,
// computed once from the flags as parsed and, for those not given, the
// migration's (see above); and what the command says of where they come
// from (say).
type migrationOptions struct {
	Transform   transform.Options
	TablePrefix string
	notes       []note
}

// note is a line a command says of its options: a status line, or a
// warning.
type note struct {
	warning bool
	text    string
}

// say says where the options come from and what differs, in one line
// each; the command calls it once it is at work, after its start-up line:
// a command refused before that prints only its error.
func (m migrationOptions) say(o *ui.Output) {
	for _, n := range m.notes {
		if n.warning {
			o.Warning("%s", n.text)
		} else {
			o.Status("%s", n.text)
		}
	}
}

// noted returns m with a line added.
func (m migrationOptions) noted(warning bool, format string, args ...any) migrationOptions {
	m.notes = append(m.notes, note{warning, fmt.Sprintf(format, args...)})
	return m
}

// migration returns the options the command judges or writes with: the
// flags' (t, parsed by validate, and prefix, --table-prefix's value),
// and for a command other than run, for each flag not given, the value of
// the run whose state is in dir (see above). command names the command in
// sentences; writes says it writes (replay, reverse), which makes a
// differing option a usage error. A state that cannot be read is a
// warning: the flags' values are used. The flags themselves are left as
// they were parsed.
func (t *TransformFlags) migration(command, dir, prefix string, writes bool) (migrationOptions, error) {
	m := migrationOptions{Transform: t.parsed, TablePrefix: prefix}
	if t.forRun || t.fs == nil {
		return m, nil // run's own, or not bound to flags: the caller's
	}
	st, err := migrate.LoadState(dir)
	switch {
	case err != nil:
		why := "it is not a run's state this version reads"
		var pe *fs.PathError
		if errors.As(err, &pe) {
			why = pe.Err.Error()
		}
		return m.noted(true, "%s cannot be read (%s), so %s uses its flags' options, not the migration's: %s",
			filepath.Join(dir, migrate.StateFile), why, command, joinAnd(t.phrases(prefix))), nil
	case st == nil:
		return m.noted(false, "no migration in %s (no %s): %s uses %s; give the run's --state-dir to use its options",
			dir, migrate.StateFile, command, joinAnd(t.phrases(prefix))), nil
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
		return m.noted(true, "the %s migrated another target (%s), so %s uses its flags' options, not that run's", run, joinAnd(other), command), nil
	}
	var taken, differ []string
	for _, key := range runOptions {
		v, ok := saved[key]
		if !ok {
			continue
		}
		if t.fs.Changed(key) {
			if given := t.given(key, prefix); given != v {
				differ = append(differ, fmt.Sprintf("%s where the migration used %s", optionPhrase(key, given), optionPhrase(key, v)))
			}
			continue
		}
		// The flags given are valid (checked before): a value that is
		// not is the state's, and must not be said as a flag's.
		if _, ok := setOption(&m.Transform, &m.TablePrefix, key, v); !ok {
			return m, fmt.Errorf("%s holds %s, which this version cannot use; give the option as a flag", filepath.Join(dir, migrate.StateFile), optionPhrase(key, v))
		}
		if key != "table-prefix" || v != "" {
			taken = append(taken, optionPhrase(key, v))
		}
	}
	if len(taken) > 0 {
		m = m.noted(false, "the migration's options (%s): %s", run, strings.Join(taken, ", "))
	}
	switch {
	case len(differ) == 0:
	case writes:
		return m, UsageError(fmt.Errorf("%s (%s): %s would write in another form than the migration did; leave those flags out to use the migration's, or give the --state-dir of the migration you mean",
			joinAnd(differ), run, command))
	default:
		m = m.noted(true, "%s (%s): this verdict is computed with the options given, not the migration's", joinAnd(differ), run)
	}
	return m, nil
}

// given is the value of the option key (runOptions) the flags give;
// prefix is --table-prefix's.
func (t *TransformFlags) given(key, prefix string) string {
	if key == "table-prefix" {
		return prefix
	}
	return t.value(key)
}

// phrases names the options the flags give (prefix: --table-prefix's
// value), as a user sets them.
func (t *TransformFlags) phrases(prefix string) []string {
	out := make([]string, 0, len(runOptions))
	for _, key := range runOptions {
		if v := t.given(key, prefix); key != "table-prefix" || v != "" {
			out = append(out, optionPhrase(key, v))
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
