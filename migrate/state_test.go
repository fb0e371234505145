package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCheckDeadLetters: the dead-letter file a resume finds is refused
// when it is shorter than the checkpoint's length or its bytes up to that
// length have another digest; a checkpoint without a digest (an earlier
// build's) checks the length only.
func TestCheckDeadLetters(t *testing.T) {
	const file = "state/dead-letter.jsonl"
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	const (
		shorter = "dead letters: state/dead-letter.jsonl is shorter (3 bytes) than the checkpoint says (5); restore the file, or use --restart to start over"
		differs = "dead letters: state/dead-letter.jsonl is not the file the checkpoint recorded (its first 5 bytes differ); restore the file, or use --restart to start over"
	)
	for _, tc := range []struct {
		name       string
		have, want deadLetterMark
		err        string
	}{
		{"new run", deadLetterMark{0, sum("")}, deadLetterMark{}, ""},
		{"the same bytes", deadLetterMark{5, sum("abcde")}, deadLetterMark{5, sum("abcde")}, ""},
		{"other bytes of the same length", deadLetterMark{5, sum("xxxxx")}, deadLetterMark{5, sum("abcde")}, differs},
		{"shorter", deadLetterMark{3, sum("abc")}, deadLetterMark{5, sum("abcde")}, shorter},
		{"shorter, no digest saved", deadLetterMark{3, sum("abc")}, deadLetterMark{5, ""}, shorter},
		{"no digest saved: the length only", deadLetterMark{5, sum("xxxxx")}, deadLetterMark{5, ""}, ""},
	} {
		err := checkDeadLetters(file, tc.have, tc.want)
		if got := errText(err); got != tc.err {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.err)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestLoadStateRefusesAMalformedState: a state.json of the wrong shape
// (a field every run saves missing, a table that is not one, a negative
// count, a digest that is not one) is "not valid", naming the file and
// --restart; the states runs write, version 1 included, are read.
func TestLoadStateRefusesAMalformedState(t *testing.T) {
	const (
		head   = `"runId":"r1","fingerprint":"f","started":"2026-11-20T12:00:00Z","updated":"2026-11-20T13:00:00Z"`
		config = `{"table":"Config","rows":0,"done":false}`
	)
	for _, tc := range []struct {
		name, state, why string
	}{
		{"version only", `{"version":2}`, "it has no runId, fingerprint, started, updated or tables"},
		{"empty object", `{}`, "it has no version, runId, fingerprint, started, updated or tables"},
		{"null", `null`, "it has no version, runId, fingerprint, started, updated or tables"},
		{"no fingerprint", `{"version":2,"runId":"r1","started":"2026-11-20T12:00:00Z","updated":"2026-11-20T13:00:00Z","tables":[` + config + `]}`, "it has no fingerprint"},
		{"no tables", `{"version":2,` + head + `,"tables":[]}`, "it has no tables"},
		{"unknown table", `{"version":2,` + head + `,"tables":[{"table":"Users"}]}`, `table "Users" is not one bifrost-migrate reads`},
		{"table twice", `{"version":2,` + head + `,"tables":[` + config + `,` + config + `]}`, "table Config is listed twice"},
		{"negative rows", `{"version":2,` + head + `,"tables":[{"table":"Config","rows":-1,"done":true}]}`, "table Config has -1 rows"},
		{"negative dead-letter length", `{"version":2,` + head + `,"deadLetterBytes":-4,"tables":[` + config + `]}`, "deadLetterBytes is -4"},
		{"digest not hex", `{"version":2,` + head + `,"deadLetterSha256":"zz","tables":[` + config + `]}`, `deadLetterSha256 "zz" is not a SHA-256 digest in hex`},
		{"digest too short", `{"version":2,` + head + `,"deadLetterSha256":"abcd","tables":[` + config + `]}`, `deadLetterSha256 "abcd" is not a SHA-256 digest in hex`},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, StateFile)
		if err := os.WriteFile(file, []byte(tc.state), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := LoadState(dir)
		want := "state " + file + " is not valid (" + tc.why + "); use --restart to start over"
		if st != nil || errText(err) != want {
			t.Errorf("%s: %v, %q\nwant %q", tc.name, st, errText(err), want)
		}
	}
	for _, state := range []string{
		`{"version":2,` + head + `,"tables":[` + config + `]}`,
		`{"version":1,` + head + `,"deadLetterBytes":12,"tables":[{"table":"Entities","rows":3,"done":true},{"table":"Relationships","rows":2,"lastPartitionKey":"p","lastRowKey":"r"}]}`,
		`{"version":2,` + head + `,"deadLetterBytes":0,"deadLetterSha256":"` + strings.Repeat("0f", 32) + `","tables":[` + config + `]}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(state), 0o600); err != nil {
			t.Fatal(err)
		}
		if st, err := LoadState(dir); err != nil || st == nil || st.Version != stateVersion {
			t.Errorf("%s: %+v, %v; want it read", state, st, err)
		}
	}
}

// stoppedWithDeadLetters runs the fixtures until --max-errors 3 stops the
// run, and returns the saved state, which records some dead letters.
func stoppedWithDeadLetters(t *testing.T, e *env) *State {
	t.Helper()
	opts := e.opts()
	opts.MaxErrors = 3
	if _, err := e.run(context.Background(), opts); !errors.Is(err, ErrTooManyDeadLetters) {
		t.Fatalf("err %v, want ErrTooManyDeadLetters", err)
	}
	st, err := LoadState(e.dir)
	if err != nil || st == nil || st.DeadLetterBytes == 0 || st.Done {
		t.Fatalf("state after --max-errors: %+v, %v; want dead letters before its checkpoint", st, err)
	}
	return st
}

// TestRunResumeRefusesAGarbledDeadLetterFile (issue 37): a dead-letter
// file overwritten with other bytes, as long as the checkpoint's length
// or longer, is refused on resume in one line naming the file, and left
// as it is; with the file restored the run resumes and ends as an
// uninterrupted run.
func TestRunResumeRefusesAGarbledDeadLetterFile(t *testing.T) {
	ref := newEnv(t, 5)
	if _, err := ref.run(context.Background(), ref.opts()); err != nil {
		t.Fatal(err)
	}
	refDL, _ := os.ReadFile(filepath.Join(ref.dir, DeadLetterFile))

	e := newEnv(t, 5)
	st := stoppedWithDeadLetters(t, e)
	file := filepath.Join(e.dir, DeadLetterFile)
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(saved[:st.DeadLetterBytes]); st.DeadLetterSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("state's digest %q is not that of the file's first %d bytes", st.DeadLetterSHA256, st.DeadLetterBytes)
	}
	for _, garbage := range [][]byte{
		bytes.Repeat([]byte("x"), int(st.DeadLetterBytes)),
		append(bytes.Repeat([]byte("y"), int(st.DeadLetterBytes)), "more\n"...),
		// One line of the checkpoint's length that is valid JSON, but not the rows.
		append(append([]byte(`{"table":"Config","reason":"`), bytes.Repeat([]byte("z"), int(st.DeadLetterBytes)-31)...), "\"}\n"...),
	} {
		if err := os.WriteFile(file, garbage, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := e.run(context.Background(), e.opts())
		want := "dead letters: " + file + " is not the file the checkpoint recorded (its first " + strconv.FormatInt(st.DeadLetterBytes, 10) + " bytes differ); restore the file, or use --restart to start over"
		if errText(err) != want {
			t.Errorf("resume over %d bytes of garbage: err %q, want %q", len(garbage), errText(err), want)
		}
		if got, _ := os.ReadFile(file); !bytes.Equal(got, garbage) {
			t.Errorf("the refused file was changed: %d bytes, want the %d it had", len(got), len(garbage))
		}
		if now, err := LoadState(e.dir); err != nil || !reflect.DeepEqual(now, st) {
			t.Errorf("state.json changed by the refused resume (%v)", err)
		}
	}
	if err := os.WriteFile(file, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := e.run(context.Background(), e.opts())
	if err != nil || !s.Resumed || !s.Complete {
		t.Fatalf("resume with the file restored: %+v, %v", s, err)
	}
	if dl, _ := os.ReadFile(file); !bytes.Equal(dl, refDL) {
		t.Errorf("dead-letter file after the resume:\n%s\nwant\n%s", dl, refDL)
	}
}

// A state saved before digests (no deadLetterSha256) resumes with the
// length checked only, and says so; its next checkpoint has a digest.
func TestRunResumeOfAStateWithoutDigest(t *testing.T) {
	e := newEnv(t, 5)
	st := stoppedWithDeadLetters(t, e)
	st.DeadLetterSHA256 = ""
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, StateFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := e.run(context.Background(), e.opts())
	if err != nil || !s.Resumed || !s.Complete || s.DeadLetters != 6 {
		t.Fatalf("resume: %+v, %v", s, err)
	}
	if want := "state.json was saved by an earlier bifrost-migrate, without a digest of dead-letter.jsonl: only the file's length is checked"; !strings.Contains(e.progress.text(), want) {
		t.Errorf("progress does not say %q:\n%s", want, e.progress.text())
	}
	if now, err := LoadState(e.dir); err != nil || len(now.DeadLetterSHA256) != 64 {
		t.Errorf("state after the resume: %+v, %v; want a digest", now, err)
	}
}

// failingStore saves through dirStore until its failAt-th save, which
// fails as a full disk would, and so do all after it.
type failingStore struct {
	dirStore
	saves, failAt int
}

func (f *failingStore) Save(s *State) error {
	if f.saves++; f.saves >= f.failAt {
		return errors.New("save state: write state.json.tmp: no space left on device")
	}
	return f.dirStore.Save(s)
}

// TestRunSaveFailed (issue 37): a checkpoint that cannot be saved stops
// the run with a summary that says so — not complete, and the checkpoint
// state.json still holds — and a rerun resumes from that one and ends as
// an uninterrupted run.
func TestRunSaveFailed(t *testing.T) {
	// work runs e's run with its saves through store.
	work := func(e *env, store *failingStore) (Summary, error) {
		deps := Deps{Source: e.src, Docs: e.docs, Blobs: e.blobs, Env: Env{Progress: e.progress, Now: func() time.Time { return goldenNow }}}
		r, err := newRunner(e.opts(), deps)
		if err != nil {
			t.Fatal(err)
		}
		r.store = store
		release, err := LockStateDir(e.dir, "run", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.work(context.Background())
		if rerr := release(); rerr != nil {
			t.Fatal(rerr)
		}
		return s, err
	}
	ref := newEnv(t, 4)
	all := &failingStore{dirStore: dirStore{dir: ref.dir}, failAt: 1 << 30}
	refSummary, err := work(ref, all)
	if err != nil || all.saves < 6 {
		t.Fatalf("uninterrupted run: %d saves, %v", all.saves, err)
	}
	// The 1st save is the new state's, then one per page, the last one
	// the final save; failing at each leaves the one before.
	for _, failAt := range []int{2, 3, all.saves / 2, all.saves} {
		e := newEnv(t, 4)
		store := &failingStore{dirStore: dirStore{dir: e.dir}, failAt: failAt}
		s, err := work(e, store)
		if errText(err) != "save state: write state.json.tmp: no space left on device" {
			t.Fatalf("fail at save %d: err %v", failAt, err)
		}
		if store.saves != failAt {
			t.Fatalf("fail at save %d: the run went on to save %d", failAt, store.saves)
		}
		onDisk, err := LoadState(e.dir)
		if err != nil || onDisk == nil {
			t.Fatalf("fail at save %d: state on disk %v, %v", failAt, onDisk, err)
		}
		if want := onDisk.checkpoint(); !s.SaveFailed || s.Complete || s.LastSaved == nil || *s.LastSaved != want {
			t.Errorf("fail at save %d: summary says save failed %v, complete %v, last saved %+v; want true, false, %+v", failAt, s.SaveFailed, s.Complete, s.LastSaved, want)
		}
		s, err = e.run(context.Background(), e.opts())
		if err != nil || !s.Resumed || !s.Complete || s.SaveFailed || s.LastSaved != nil {
			t.Fatalf("fail at save %d: rerun %+v, %v", failAt, s, err)
		}
		if !reflect.DeepEqual(s.Kinds(), refSummary.Kinds()) || !reflect.DeepEqual(e.docs.Snapshot(), ref.docs.Snapshot()) {
			t.Errorf("fail at save %d: the resumed run differs from an uninterrupted one", failAt)
		}
	}
}
