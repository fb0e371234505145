package fakes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Tables is a Table Storage account in memory, with the methods of
// azure.TableReader (migrate.RowSource, verify.RowSource) and
// azure.TableWriter (fixtures.TableWriter and the conditional writes of
// migrate.RowStore).
//
// As in the service, every write stamps the row with a Timestamp and an
// ETag that carries it; Replace and Delete answer If-Match; rows come in
// key order (transform.CompareKeys), a page at a time with a continuation
// naming the next row; a table that does not exist is an error that is
// none of store's outcomes (404 TableNotFound).
//
// Tables is safe for concurrent use; set its fields before first use.
type Tables struct {
	// PageSize, when > 0, is the most rows a page holds (below the
	// query's Top), so that tests can read small tables in many pages.
	PageSize int
	// BeforeWrite, when set, runs before each Insert, Replace and Delete
	// and before each row of UpsertBatch.
	BeforeWrite BeforeWrite
	// Now stamps the rows' Timestamps; nil means the fakes' own clock (a
	// second later at each write).
	Now func() time.Time

	clock  clock
	mu     sync.Mutex
	tables map[string][]transform.Row // in key order; a table with no rows exists
	writes int
}

// NewTables returns an account holding the named tables, empty.
func NewTables(tables ...string) *Tables {
	f := &Tables{tables: map[string][]transform.Row{}}
	for _, t := range tables {
		f.tables[t] = []transform.Row{}
	}
	return f
}

// ErrNoTable is wrapped by the error of a request about a table that does
// not exist.
var ErrNoTable = errors.New("404 Not Found (TableNotFound)")

func noTable(table string) error { return fmt.Errorf("table %s: %w", table, ErrNoTable) }

// stamp gives row the next Timestamp and its ETag, as the service's
// W/"datetime'…'" (the caller holds f.mu).
func (f *Tables) stamp(row *transform.Row) {
	row.Timestamp = f.clock.now(f.Now)
	row.ETag = etagOf(row.Timestamp)
}

func etagOf(ts time.Time) string {
	return `W/"datetime'` + url.QueryEscape(ts.UTC().Format("2006-01-02T15:04:05.0000000Z")) + `'"`
}

// find returns where the row with keys pk, rk is or would be in rows, and
// whether it is there.
func find(rows []transform.Row, pk, rk string) (int, bool) {
	return slices.BinarySearchFunc(rows, store.Key{PartitionKey: pk, RowKey: rk}, func(r transform.Row, k store.Key) int {
		return transform.CompareKeys(r.PartitionKey, r.RowKey, k.PartitionKey, k.RowKey)
	})
}

// set stores row in table, replacing the row with its keys (the caller
// holds f.mu and has checked that table exists).
func (f *Tables) set(table string, row transform.Row) {
	rows := f.tables[table]
	row.Table = table
	if i, ok := find(rows, row.PartitionKey, row.RowKey); ok {
		rows[i] = row
	} else {
		f.tables[table] = slices.Insert(rows, i, row)
	}
}

// copyRow returns row for a caller: its own Props, only those of sel
// when sel is not empty.
func copyRow(row transform.Row, sel []string) transform.Row {
	if len(sel) == 0 {
		row.Props = maps.Clone(row.Props)
		return row
	}
	props := map[string]transform.Value{}
	for _, name := range sel {
		if v, ok := row.Props[name]; ok {
			props[name] = v
		}
	}
	row.Props = props
	return row
}

// CreateTable creates table unless it exists.
func (f *Tables) CreateTable(ctx context.Context, table string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.create(table)
	return nil
}

// create creates table unless it exists (the caller holds mu).
func (f *Tables) create(table string) {
	if f.tables == nil {
		f.tables = map[string][]transform.Row{}
	}
	if _, ok := f.tables[table]; !ok {
		f.tables[table] = []transform.Row{}
	}
}

// DeleteTable deletes table; a missing table is not an error.
func (f *Tables) DeleteTable(ctx context.Context, table string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tables, table)
	return nil
}

// Exists reports whether table exists.
func (f *Tables) Exists(ctx context.Context, table string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.tables[table]
	return ok, nil
}

// Add stores rows in table (created if missing) as they are, replacing
// rows with their keys: seeding, which the service cannot do. A row with
// no Timestamp gets one, as every stored row has; every row gets the ETag
// of its Timestamp. It is not a write of the tool's and runs no
// BeforeWrite.
func (f *Tables) Add(table string, rows ...transform.Row) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.create(table)
	for _, r := range rows {
		r = copyRow(r, nil)
		if r.Timestamp.IsZero() {
			f.stamp(&r)
		}
		r.ETag = etagOf(r.Timestamp)
		f.set(table, r)
	}
}

// Rows returns the rows of table in key order (nil when it does not
// exist).
func (f *Tables) Rows(table string) []transform.Row {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]transform.Row, 0, len(f.tables[table]))
	for _, r := range f.tables[table] {
		out = append(out, copyRow(r, nil))
	}
	return out
}

// Row returns the row of table with keys pk, rk.
func (f *Tables) Row(table, pk, rk string) (transform.Row, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rows := f.tables[table]
	if i, ok := find(rows, pk, rk); ok {
		return copyRow(rows[i], nil), true
	}
	return transform.Row{}, false
}

// Writes returns the number of writes that succeeded (Insert, Replace,
// Delete, and each row of UpsertBatch).
func (f *Tables) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// ReadPage reads one page of the rows of table that q selects (q.Match;
// q.Select limits the properties), from the continuation from, as
// azure.TableReader.ReadPage: at most q.Top rows (0: store.PageSize), and
// PageSize when that is less.
func (f *Tables) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	if err := ctx.Err(); err != nil {
		return store.Page{}, fmt.Errorf("table %s: %w", table, err)
	}
	top := q.Top
	if top <= 0 || top > store.PageSize {
		top = store.PageSize
	}
	if f.PageSize > 0 {
		top = min(top, f.PageSize)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rows, ok := f.tables[table]
	if !ok {
		return store.Page{}, noTable(table)
	}
	i := 0
	if !from.IsZero() {
		i, _ = find(rows, from.NextPartitionKey, from.NextRowKey)
	}
	var p store.Page
	for ; i < len(rows); i++ {
		r := rows[i]
		if !q.Match(r.PartitionKey, r.RowKey, r.Timestamp) {
			continue
		}
		if len(p.Rows) == top {
			p.Next = store.Cursor{NextPartitionKey: r.PartitionKey, NextRowKey: r.RowKey}
			break
		}
		p.Rows = append(p.Rows, copyRow(r, q.Select))
	}
	return p, nil
}

// Count counts the rows q selects.
func (f *Tables) Count(ctx context.Context, table string, q store.Query) (int64, error) {
	var n int64
	q.Select = []string{"PartitionKey", "RowKey"}
	err := store.Scan(ctx, f, "", table, q, store.Cursor{}, func(p store.Page) error {
		n += int64(len(p.Rows))
		return nil
	})
	return n, err
}

// rowWhere names a row in errors, as azure.TableWriter does.
func rowWhere(table string, key store.Key, op string) string {
	return fmt.Sprintf("table %s PartitionKey %q RowKey %q: %s", table, key.PartitionKey, key.RowKey, op)
}

// decode decodes entity for a write, runs BeforeWrite and checks that
// table exists (the caller does not hold f.mu).
func (f *Tables) decode(ctx context.Context, op, table string, entity []byte) (transform.Row, error) {
	row, err := transform.DecodeEntity(table, entity)
	if err != nil && row.PartitionKey == "" && row.RowKey == "" {
		return row, fmt.Errorf("table %s: the entity is not a JSON object with string keys: %w", table, err)
	}
	key := store.Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey}
	if err := f.before(ctx, op, table, key); err != nil {
		return row, err
	}
	if err != nil {
		return row, fault(store.Refused, http.StatusBadRequest, "%s: 400 Bad Request (InvalidInput)", rowWhere(table, key, op))
	}
	return row, nil
}

// before runs BeforeWrite and checks the context.
func (f *Tables) before(ctx context.Context, op, table string, key store.Key) error {
	if f.BeforeWrite != nil {
		if err := f.BeforeWrite(ctx, Op{Name: op, Container: table, Partition: key.PartitionKey, ID: key.RowKey}); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", rowWhere(table, key, op), err)
	}
	return nil
}

// Insert inserts the row entity (annotated JSON) holds and returns its
// ETag; a row that exists gives a fault of kind store.Exists (409).
func (f *Tables) Insert(ctx context.Context, table string, entity []byte) (string, error) {
	row, err := f.decode(ctx, "insert", table, entity)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rows, ok := f.tables[table]
	if !ok {
		return "", noTable(table)
	}
	if _, ok := find(rows, row.PartitionKey, row.RowKey); ok {
		return "", fault(store.Exists, http.StatusConflict, "%s: 409 Conflict (EntityAlreadyExists)", rowWhere(table, store.Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey}, "insert"))
	}
	f.stamp(&row)
	f.set(table, row)
	f.writes++
	return row.ETag, nil
}

// check answers If-Match as the service does (the caller holds f.mu): an
// empty ifMatch is refused, "*" matches any row, a missing row is 404
// (store.NotFound) and another ETag 412 (store.Changed).
func (f *Tables) check(table string, key store.Key, op, ifMatch string) (int, error) {
	where := rowWhere(table, key, op)
	if ifMatch == "" {
		return 0, fmt.Errorf(`%s: no ETag to match (use "*" to match any)`, where)
	}
	rows, ok := f.tables[table]
	if !ok {
		return 0, noTable(table)
	}
	i, ok := find(rows, key.PartitionKey, key.RowKey)
	switch {
	case !ok:
		return 0, fault(store.NotFound, http.StatusNotFound, "%s: 404 Not Found (ResourceNotFound)", where)
	case ifMatch != "*" && ifMatch != rows[i].ETag:
		return 0, fault(store.Changed, http.StatusPreconditionFailed, "%s: 412 Precondition Failed (UpdateConditionNotSatisfied)", where)
	}
	return i, nil
}

// Replace replaces the row with entity's keys by entity (every property)
// if its ETag is ifMatch ("*": any) and returns its new ETag, as
// azure.TableWriter.Replace.
func (f *Tables) Replace(ctx context.Context, table string, entity []byte, ifMatch string) (string, error) {
	row, err := f.decode(ctx, "replace", table, entity)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.check(table, store.Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey}, "replace", ifMatch); err != nil {
		return "", err
	}
	f.stamp(&row)
	f.set(table, row)
	f.writes++
	return row.ETag, nil
}

// Delete deletes the row with key if its ETag is ifMatch ("*": any), with
// the errors of Replace.
func (f *Tables) Delete(ctx context.Context, table string, key store.Key, ifMatch string) error {
	if err := f.before(ctx, "delete", table, key); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i, err := f.check(table, key, "delete", ifMatch)
	if err != nil {
		return err
	}
	f.tables[table] = slices.Delete(f.tables[table], i, i+1)
	f.writes++
	return nil
}

// UpsertBatch inserts or replaces entities, all of PartitionKey
// partitionKey, as azure.TableWriter.UpsertBatch (fixtures.Load).
func (f *Tables) UpsertBatch(ctx context.Context, table, partitionKey string, entities [][]byte, rowKeys []string) error {
	if len(entities) > 100 || len(rowKeys) != len(entities) {
		return fmt.Errorf("table %s PartitionKey %q: a batch of %d entities and %d row keys", table, partitionKey, len(entities), len(rowKeys))
	}
	for _, e := range entities {
		row, err := f.decode(ctx, "upsert", table, e)
		if err != nil {
			return err
		}
		if row.PartitionKey != partitionKey {
			return fmt.Errorf("table %s PartitionKey %q: the batch holds PartitionKey %q", table, partitionKey, row.PartitionKey)
		}
		f.mu.Lock()
		_, ok := f.tables[table]
		if ok {
			f.stamp(&row)
			f.set(table, row)
			f.writes++
		}
		f.mu.Unlock()
		if !ok {
			return noTable(table)
		}
	}
	return nil
}
