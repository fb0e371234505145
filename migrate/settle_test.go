package migrate

import (
	"context"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// refusedRead is the answer of a service that refuses to read one item
// for good (a 400): what ruleReadDoc and ruleReadRow take.
var refusedRead = &store.Fault{Kind: store.Refused, Status: 400, Reason: "400 OutOfRangeInput"}

// refusingDocs is a DocStore whose point read of the doc id is refused.
type refusingDocs struct {
	DocStore
	id string
}

func (d refusingDocs) Read(ctx context.Context, container, scope, id string) ([]byte, string, bool, float64, error) {
	if id == d.id {
		return nil, "", false, 0, refusedRead
	}
	return d.DocStore.Read(ctx, container, scope, id)
}

// refusingRows is the fake tables, whose look-up of the row rk is
// refused (a scan of the table is not).
type refusingRows struct {
	*fakes.Tables
	rk string
}

func (r refusingRows) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	if q.Key != nil && q.Key.RowKey == r.rk {
		return store.Page{}, refusedRead
	}
	return r.Tables.ReadPage(ctx, table, q, from)
}

// TestRefusedReadIsADeadLetter: a read the service refuses for good —
// the doc replay reads before it decides, the row reverse reads before
// it writes, the row and the doc the prunes read before they delete —
// makes that item a dead letter, as a refused write does (SPEC §11
// "other 4xx → dead-letter"; §13 and §15 take run's dead letters): the
// command goes on with the other items and ends with its dead letter in
// the file, nothing of the item written. (reverse and both prunes used
// to stop on it, replay did not.)
func TestRefusedReadIsADeadLetter(t *testing.T) {
	alice := transform.Row{PartitionKey: "GLOBAL", RowKey: revAliceRK, Props: map[string]transform.Value{
		"Email": transform.String("alice@contoso.example"), "DisplayName": transform.String("Alice")}}
	since := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name, file, reason string
		run                func(t *testing.T, dir string) (dead int64, err error)
	}{
		{"replay: the doc", ReplayDeadLetterFile, "Cosmos DB refused to read the doc (400): 400 OutOfRangeInput",
			func(t *testing.T, dir string) (int64, error) {
				tables := fakes.NewTables(fixtures.Tables()...)
				tables.Add(transform.TableEntities, alice)
				s, err := Replay(context.Background(), ReplayOptions{Common: Common{StateDir: dir}, WindowOptions: WindowOptions{Since: since}},
					ReplayDeps{Source: tables, Docs: refusingDocs{fakes.NewDocs(), revAliceID}, Blobs: fakes.NewBlobs(), Env: Env{Now: now}})
				return s.Totals.DeadLetters, err
			}},
		{"replay --prune: the row", ReplayDeadLetterFile,
			"prune entities/GLOBAL/" + revAliceID + ": Table Storage refused to read the row (400): 400 OutOfRangeInput",
			func(t *testing.T, dir string) (int64, error) {
				tables, docs := fakes.NewTables(fixtures.Tables()...), fakes.NewDocs()
				tables.Add(transform.TableEntities, alice)
				if _, err := Run(context.Background(), RunOptions{Common: Common{StateDir: t.TempDir()}}, Deps{Source: tables, Docs: docs, Blobs: fakes.NewBlobs()}); err != nil {
					t.Fatal(err)
				}
				if err := tables.Delete(context.Background(), transform.TableEntities, store.Key{PartitionKey: "GLOBAL", RowKey: revAliceRK}, "*"); err != nil {
					t.Fatal(err)
				}
				s, err := Replay(context.Background(), ReplayOptions{Common: Common{StateDir: dir}, WindowOptions: WindowOptions{Since: since, Prune: true}},
					ReplayDeps{Source: refusingRows{tables, revAliceRK}, Docs: docs, Blobs: fakes.NewBlobs(), Query: docs.Reader(), Env: Env{Now: now}})
				if _, there := docs.Doc(transform.ContainerEntities, "GLOBAL", revAliceID); !there {
					t.Error("the doc was pruned although its row could not be read")
				}
				return s.Totals.DeadLetters, err
			}},
		{"reverse: the row", ReverseDeadLetterFile,
			"look up Entities GLOBAL/" + revAliceRK + ": Table Storage refused to read the row (400): 400 OutOfRangeInput",
			func(t *testing.T, dir string) (int64, error) {
				rows, docs, _ := revSetup(t)
				feed := docs.Reader()
				s, err := Reverse(context.Background(), ReverseOptions{Common: Common{StateDir: dir}, WindowOptions: WindowOptions{Since: since}},
					ReverseDeps{Changes: feed, Position: feed.Since, Rows: refusingRows{rows, revAliceRK}, Docs: docs, Blobs: fakes.NewBlobs(), Env: Env{Now: now}})
				if row, _ := rows.Row(transform.TableEntities, "GLOBAL", revAliceRK); row.Props["DisplayName"].Str != "Alice" {
					t.Errorf("the row was written although it could not be read: %+v", row.Props)
				}
				return s.Totals.DeadLetters, err
			}},
		{"reverse --prune: the doc", ReverseDeadLetterFile,
			"read entities/GLOBAL/" + revAliceID + ": Cosmos DB refused to read the doc (400): 400 OutOfRangeInput",
			func(t *testing.T, dir string) (int64, error) {
				rows, docs := fakes.NewTables(fixtures.Tables()...), fakes.NewDocs()
				rows.Add(transform.TableEntities, alice)
				feed := docs.Reader()
				s, err := Reverse(context.Background(), ReverseOptions{Common: Common{StateDir: dir}, WindowOptions: WindowOptions{Since: time.Now().Add(time.Hour), Prune: true}},
					ReverseDeps{Changes: feed, Position: feed.Since, Rows: rows, Docs: refusingDocs{docs, revAliceID}, Blobs: fakes.NewBlobs(), Query: feed, Env: Env{Now: now}})
				if _, there := rows.Row(transform.TableEntities, "GLOBAL", revAliceRK); !there {
					t.Error("the row was pruned although its doc could not be read")
				}
				return s.Totals.DeadLetters, err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dead, err := tc.run(t, dir)
			if err != nil || dead != 1 {
				t.Fatalf("%d dead letter(s), error %v; want 1 and no error", dead, err)
			}
			dls := readDeadLetters(t, dir, tc.file)
			if len(dls) != 1 || dls[0].Reason != tc.reason || dls[0].Table != transform.TableEntities || dls[0].RowKey != revAliceRK {
				t.Errorf("dead letters %s\nwant alice's: %s", fakes.JSON(dls), tc.reason)
			}
		})
	}
}
