package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// TestEveryFaultThroughEveryEngine drives each fault kind through each
// engine — run, replay, reverse and the two prunes — as the command runs
// it, over the checked fakes: the first write of the engine's kind is
// answered with the fault as the adapter of its service makes it
// (faultOf), and the command ends as the kind says:
//
//	F  the engine stops: exit 1, the kind kept to cmd's sentence
//	   (errorText), which says "run it again" for a retryable kind
//	   (transient);
//	R  the item is dead-lettered: exit 3, its dead letter in the file;
//	A  the item is read and decided again: exit 0, a start-over counted
//	   (reverse's prune leaves the row to the next prune);
//	G  the doc was deleted meanwhile: what the prune wanted (exit 0).
//
// Adding a kind adds a column here (docs/engine.md, "Faults").
func TestEveryFaultThroughEveryEngine(t *testing.T) {
	kinds := store.FaultKinds()
	for _, e := range []faultEngine{
		//                           throttled, transient, unreachable, exists, changed, not found, refused, auth, fatal
		{name: "run", ops: []string{"upsert"}, want: "FFFFFFRFF"},
		{name: "replay", ops: []string{"create", "replace"}, want: "FFFAAARFF"},
		{name: "replay --prune", ops: []string{"delete"}, want: "FFFAAGRFF"},
		{name: "reverse", ops: []string{"insert", "replace"}, want: "FFFAAARFF", tables: true},
		{name: "reverse --prune", ops: []string{"delete"}, want: "FFFAAARFF", tables: true},
	} {
		if len(e.want) != len(kinds) {
			t.Fatalf("%s: %d outcomes for %d kinds", e.name, len(e.want), len(kinds))
		}
		for i, kind := range kinds {
			t.Run(e.name+"/"+kind.String(), func(t *testing.T) {
				w := newFaultWorld(t, e.name)
				var answered atomic.Bool
				hook := func(_ context.Context, op fakes.Op) error {
					if slices.Contains(e.ops, op.Name) && answered.CompareAndSwap(false, true) {
						return faultOf(t, kind, e.tables)
					}
					return nil
				}
				if e.tables {
					w.tables.BeforeWrite = hook
				} else {
					w.docs.BeforeWrite = hook
				}
				code, stdout, msg, err := w.run(t, e.name)
				if !answered.Load() {
					t.Fatalf("the engine made no %v write: exit %d, %s", e.ops, code, msg)
				}
				w.check(t, e.name, kind, e.want[i], code, stdout, msg, err)
			})
		}
	}
}

// faultEngine is an engine as TestEveryFaultThroughEveryEngine drives it:
// the writes whose first answer is the fault (ops, of the tables when
// tables, else of the docs) and the outcome for each kind.
type faultEngine struct {
	name   string
	ops    []string
	want   string
	tables bool
}

// faultWorld is the services of one case: one user row, alice, in the
// tables, and what the engine under test needs besides.
type faultWorld struct {
	tables *fakes.Tables
	docs   *fakes.Docs
	blobs  *fakes.Blobs
	dir    string
	since  string
}

const (
	faultAliceRK = "user:alice@contoso.example"
	faultAliceID = "user-alice@contoso.example"
)

func newFaultWorld(t *testing.T, engine string) *faultWorld {
	t.Helper()
	w := &faultWorld{tables: fakes.NewTables(fixtures.Tables()...), docs: fakes.NewDocs(), blobs: fakes.NewBlobs(),
		dir: t.TempDir(), since: "2025-01-01T00:00:00Z"}
	alice := transform.Row{PartitionKey: "GLOBAL", RowKey: faultAliceRK, Props: map[string]transform.Value{
		"Email": transform.String("alice@contoso.example"), "DisplayName": transform.String("Alice")}}
	w.tables.Add(transform.TableEntities, alice)
	switch engine {
	case "replay --prune":
		// Migrated, then its row deleted from the tables.
		if _, err := migrate.Run(context.Background(), migrate.RunOptions{Common: migrate.Common{StateDir: t.TempDir()}},
			migrate.Deps{Source: w.tables, Docs: w.docs, Blobs: w.blobs}); err != nil {
			t.Fatal(err)
		}
		if err := w.tables.Delete(context.Background(), transform.TableEntities, store.Key{PartitionKey: "GLOBAL", RowKey: faultAliceRK}, "*"); err != nil {
			t.Fatal(err)
		}
	case "reverse":
		// The application renamed her in Cosmos DB.
		row, _ := w.tables.Row(transform.TableEntities, "GLOBAL", faultAliceRK)
		o := transform.Transform(row, transform.BlobFacts{}, transform.Options{Now: row.Timestamp})
		var doc map[string]any
		if err := json.Unmarshal(o.DocJSON, &doc); err != nil {
			t.Fatal(err)
		}
		doc["displayName"] = "Alice Renamed"
		b, _ := json.Marshal(doc)
		w.docs.Put(transform.ContainerEntities, b)
	case "reverse --prune":
		// Her doc is gone; her row was last written before --since.
		w.since = "2026-06-01T00:00:00Z"
	}
	return w
}

// run runs the engine as its command does, over w's services, with
// --output json; it returns the exit status, stdout, and the message
// Execute would print on stderr.
func (w *faultWorld) run(t *testing.T, engine string) (code int, stdout, msg string, err error) {
	t.Helper()
	f, out, errOut := newTestFactory(nil)
	f.Global.Output = "json"
	var c *cobra.Command
	args := []string{"--state-dir", w.dir}
	switch engine {
	case "run":
		c = NewCmdRun(f, func(ctx context.Context, o *RunOptions) error {
			o.Connect = func(context.Context) (runServices, error) {
				return runServices{deps: migrate.Deps{Source: w.tables, Docs: w.docs, Blobs: w.blobs, Env: o.env(f)}}, nil
			}
			return runRun(ctx, o)
		})
	case "replay", "replay --prune":
		c = NewCmdReplay(f, func(ctx context.Context, o *ReplayOptions) error {
			o.Connect = func(context.Context) (replayServices, error) {
				return replayServices{deps: migrate.ReplayDeps{Source: w.tables, Docs: w.docs, Blobs: w.blobs, Query: w.docs.Reader(), Env: o.env(f)}}, nil
			}
			return replayRun(ctx, o)
		})
	default:
		c = NewCmdReverse(f, func(ctx context.Context, o *ReverseOptions) error {
			o.Connect = func(context.Context) (reverseServices, error) {
				feed := w.docs.Reader()
				return reverseServices{deps: migrate.ReverseDeps{Changes: feed, Position: feed.Since, Rows: w.tables,
					Docs: w.docs, Blobs: w.blobs, Query: feed, Env: o.env(f)}}, nil
			}
			return reverseRun(ctx, o)
		})
	}
	if engine != "run" {
		args = append(args, "--since", w.since)
	}
	if strings.HasSuffix(engine, "--prune") {
		args = append(args, "--prune")
	}
	c.SetArgs(args)
	c.SetOut(out)
	c.SetErr(errOut)
	c.SilenceUsage, c.SilenceErrors = true, true // as under the root command
	err = c.ExecuteContext(context.Background())
	code = exitCode(err, false)
	if err != nil {
		msg = strings.TrimSuffix(strings.TrimPrefix(errorText(f, err, code), "bifrost-migrate: "), "\n")
	}
	return code, out.String(), msg, err
}

// check checks the outcome of kind in engine against want (F, R, A, G).
func (w *faultWorld) check(t *testing.T, engine string, kind store.FaultKind, want byte, code int, stdout, msg string, err error) {
	t.Helper()
	switch want {
	case 'F':
		if code != ExitFatal || store.KindOf(err) != kind || msg != faultSentence(kind, engine) || transient(err) != kind.Retryable() {
			t.Errorf("exit %d, kind %s, transient %v: %s\nwant exit 1, kind %s, transient %v: %s",
				code, store.KindOf(err), transient(err), msg, kind, kind.Retryable(), faultSentence(kind, engine))
		}
	case 'R':
		file, what := migrate.DeadLetterFile, "row(s)"
		switch {
		case strings.HasPrefix(engine, "replay"):
			file = migrate.ReplayDeadLetterFile
		case strings.HasPrefix(engine, "reverse"):
			file, what = migrate.ReverseDeadLetterFile, "doc(s)"
		}
		path := filepath.Join(w.dir, file)
		b, rerr := os.ReadFile(path)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var dl migrate.DeadLetter
		if rerr == nil {
			rerr = json.Unmarshal([]byte(lines[0]), &dl)
		}
		if want := fmt.Sprintf("1 %s dead-lettered; see %s", what, path); code != ExitPartial || msg != want {
			t.Errorf("exit %d: %s\nwant exit 3: %s", code, msg, want)
		}
		if rerr != nil || len(lines) != 1 || dl.RowKey != faultAliceRK || !strings.Contains(dl.Reason, " (400): ") {
			t.Errorf("dead letters %q (%v), want alice's, refused with its status", b, rerr)
		}
	case 'A', 'G':
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, msg)
		}
		got := w.startOvers(t, engine, kind, stdout)
		if got != 1 {
			t.Errorf("%d start-over(s) of kind %s counted, want 1:\n%s", got, kind, stdout)
		}
		w.checkDone(t, engine, want)
	default:
		t.Fatalf("outcome %c", want)
	}
}

// startOvers returns the start-overs the summary counts for kind.
func (w *faultWorld) startOvers(t *testing.T, engine string, kind store.FaultKind, stdout string) int64 {
	t.Helper()
	if strings.HasPrefix(engine, "reverse") {
		return lastSummary[migrate.ReverseSummary](t, stdout, "").Totals.StartOvers
	}
	c := lastSummary[migrate.ReplaySummary](t, stdout, "").Totals
	switch kind {
	case store.Exists:
		return c.CreateConflicts
	case store.Changed:
		return c.PreconditionFailed
	}
	return c.DocVanished
}

// checkDone checks what the engine left after a start-over (A) or a
// doc deleted meanwhile (G).
func (w *faultWorld) checkDone(t *testing.T, engine string, want byte) {
	t.Helper()
	_, doc := w.docs.Doc(transform.ContainerEntities, "GLOBAL", faultAliceID) // whether it is there
	row, _ := w.tables.Row(transform.TableEntities, "GLOBAL", faultAliceRK)
	var ok bool
	switch engine {
	case "replay":
		ok = doc // created at the next attempt
	case "replay --prune":
		ok = !doc == (want == 'A') // pruned at the next attempt; G: the fault deleted nothing
	case "reverse":
		ok = row.Props["DisplayName"].Str == "Alice Renamed"
	case "reverse --prune":
		ok = row.RowKey == faultAliceRK // left to the next prune
	}
	if !ok {
		t.Errorf("after the start-over: doc there %v, row %+v", doc, row)
	}
}

// The resources the faults are about, as the adapters name them.
var (
	faultContainer = azure.Resource{Service: azure.ServiceCosmos, Kind: azure.KindContainer, Name: "bifrost/entities", Endpoint: cosmosEP}
	faultTable     = azure.Resource{Service: azure.ServiceTables, Kind: azure.KindTable, Name: "Entities", Endpoint: tablesEP}
)

// faultOf is a fault of kind as the adapter of Table Storage (tables) or
// of Cosmos DB returns it for a write: the answer classified
// (azure.FaultOf), in a *ResourceError where the adapter wraps it, and
// wrapping store.ErrRetriesExhausted for a retryable kind, which the
// adapter retried until --retry-timeout.
func faultOf(t *testing.T, kind store.FaultKind, tables bool) error {
	res, url, code := faultContainer, cosmosEP+"dbs/bifrost/colls/entities/docs", ""
	if tables {
		res, url = faultTable, tablesEP+"/Entities"
	}
	answer := func(status int, code string) error { return responseError(t, "PUT", url, status, code, "") }
	exhausted := func(last error) error {
		return &azure.ResourceError{Resource: res, Err: fmt.Errorf("%s PUT: %w after 30 attempts in 10m0s: %w", res.Service, store.ErrRetriesExhausted, azure.FaultOf(last))}
	}
	switch kind {
	case store.Throttled:
		return exhausted(answer(429, ""))
	case store.Transient:
		return exhausted(answer(503, ""))
	case store.Unreachable:
		return exhausted(refused(url))
	case store.Auth:
		return &azure.ResourceError{Resource: res, Err: azure.FaultOf(answer(403, "AuthorizationFailure"))}
	case store.Fatal:
		if tables {
			return &azure.ResourceError{Resource: res, Err: azure.FaultOf(answer(404, "TableNotFound"))}
		}
		return &azure.ResourceError{Resource: res, Op: "upsert", Err: azure.FaultOf(&json.SyntaxError{Offset: 1})}
	}
	status := map[store.FaultKind]int{store.Exists: 409, store.Changed: 412, store.NotFound: 404, store.Refused: 400}[kind]
	if tables {
		code = map[store.FaultKind]string{store.Exists: "EntityAlreadyExists", store.Changed: "UpdateConditionNotSatisfied",
			store.NotFound: "ResourceNotFound", store.Refused: "PropertyValueTooLarge"}[kind]
		f := azure.FaultOf(answer(status, code))
		f.Reason = fmt.Sprintf("%d %s (%s)", status, http.StatusText(status), code) // as TableWriter says it
		return &azure.ResourceError{Resource: res, Op: "table Entities: write", Err: f}
	}
	f := azure.FaultOf(answer(status, code))
	f.Reason = fmt.Sprintf("cosmos write: %d", status)
	return f
}

// faultSentence is cmd's sentence for a fault of kind that stopped engine.
func faultSentence(kind store.FaultKind, engine string) string {
	where, res, advice := "Cosmos DB "+cosmosEP, "container bifrost/entities", `give the identity a Cosmos DB data-plane role such as "Cosmos DB Built-in Data Contributor", or use the account's current key in the Cosmos DB connection`
	if strings.HasPrefix(engine, "reverse") {
		where, res, advice = "Table Storage "+tablesEP, "table Entities", `give the identity the role "Storage Table Data Reader" ("Storage Table Data Contributor" to write), or use a valid account key or SAS in the tables connection`
	}
	failing := func(last string) string {
		return where + " kept failing for " + res + " after every retry (last: " + last + "): the service is unavailable or overloaded; try again later, or let the command wait longer with --retry-timeout"
	}
	switch kind {
	case store.Throttled:
		if strings.HasPrefix(engine, "reverse") {
			return where + " kept answering 429 Too Many Requests for " + res + " after every retry: the account is throttling; let the command wait longer with --retry-timeout, or run it when the account is less busy"
		}
		return where + " kept answering 429 Too Many Requests for " + res + " after every retry: the account's request units are exhausted; cap what this command uses with --max-ru, or let it wait longer with --retry-timeout"
	case store.Transient:
		return failing("503 Service Unavailable")
	case store.Unreachable:
		return failing("connect: connection refused")
	case store.Auth:
		return where + " refused access to " + res + " (403 Forbidden, AuthorizationFailure): " + advice
	case store.Fatal:
		if strings.HasPrefix(engine, "reverse") {
			return "source table Entities does not exist in " + tablesEP + "; check the tables connection, or choose tables with --tables"
		}
		return where + " answered about " + res + " in a form that is not the service's: check that the Cosmos DB connection points at the service (run with --verbose for the details)"
	}
	// An outcome the write does not expect (run's upsert never gets one
	// from the adapter, which makes it a refusal).
	return fmt.Sprintf("the service answered %d %s (run with --verbose for its whole answer)",
		map[store.FaultKind]int{store.Exists: 409, store.Changed: 412, store.NotFound: 404}[kind],
		map[store.FaultKind]string{store.Exists: "Conflict", store.Changed: "Precondition Failed", store.NotFound: "Not Found"}[kind])
}
