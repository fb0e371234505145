package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/internal/spill"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// verify --since TIME (SPEC §12, "Incremental proof"; docs/design.md,
// "verify --since"). It judges, by the rules of a full verify, what
// changed since TIME in both directions:
//
//   - every row whose Timestamp is at or after TIME (the Table service
//     filters them, as replay reads them), transformed as run does (the
//     collisions among them found as run finds them) and met with the doc
//     at its place: the doc from the change feed when it changed too, else
//     read (one point read per changed row without a changed doc);
//   - every doc the change feed gives since TIME (as reverse reads it):
//     met with the changed row that expects it, or else with the row its
//     _migration names (or, without _migration, the row it would go back
//     to), read when it did not change: matched, different, an orphan, or
//     the application's own.
//
// A changed row's doc may sit where an unchanged row's doc already is (a
// collision across the two sets): the doc there names that row in its
// _migration, and the row that comes first in read order keeps the place;
// a changed row that comes later is a dead letter, as run would make it.
//
// Deletions are in no change feed and change no Timestamp. A --since at
// or before the start of a clean full verify (Base) counts the docs of
// every scope the full verify read: a scope holds the docs of DocsFile
// that are neither changed since (the feed has them) nor past their ttl,
// plus the changed ones; a scope with fewer is read again (its ids), and
// each doc of DocsFile gone from it is judged against its row: missing
// when the row still expects it there. What --since cannot see: a row
// deleted since TIME whose doc is still there (an orphan; no service
// tells which rows are gone without reading them all), a doc an unchanged
// row expects but the full verify did not find either (it was reported
// then), and a blob deleted since TIME that an unchanged doc names.

// Base is the full verify a --since builds on: one that judged every row
// and found nothing wrong, started at or after --since, of the same
// migration.
type Base struct {
	// Started is when it started.
	Started time.Time
	// DocsFile is the path of the DocsFile it wrote.
	DocsFile string
}

// ChangeSource reads the change feed of the containers (verify --since).
// *azure.DocReader implements it; it is safe for concurrent use.
type ChangeSource interface {
	// Changes calls fn with the latest version of each doc of container
	// changed after position from and returns the position after them.
	// Deletes are not changes it reports; a doc can come twice.
	Changes(ctx context.Context, container, from string, pageSize int, fn func(doc []byte) error) (next string, err error)
}

// The queries of the count of a container's docs, of a scope's, and of
// a scope's ids.
const (
	queryCount        = "SELECT VALUE COUNT(1) FROM c"
	queryCountOfScope = "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope"
	queryIDsOfScope   = "SELECT c.id FROM c WHERE c.scope = @scope"
)

// sinceConcurrency is how many reads a --since sends at once.
const sinceConcurrency = 16

// clockSkew bounds how far the service's clock may be from ours when a
// ttl ends: a doc whose ttl ends within it of a count may or may not be
// counted.
const clockSkew = 2 * time.Second

// extraSeqs are the read orders given to rows a --since judges because a
// changed doc, or a doc gone, names them: after every changed row.
const extraSeqs = uint64(1) << 62

// sinceRun is the state of one --since.
type sinceRun struct {
	*state
	rows *rowIndex
	docs *docIndex
	j    *joiner
	// changed holds the keys of the changed rows, judged those of the
	// rows a changed doc brought in; mu guards them, for the workers.
	mu      sync.Mutex
	changed *spill.KeySet
	judged  *spill.KeySet
	// base is the base's DocsFile, nil without a base; sections are what
	// the change feed said of each of its scopes.
	base     *docsFile
	sections map[[2]string]*sectionFacts
	cursors  map[[2]string]*docsCursor
	extra    uint64
}

// sectionFacts are the changed docs of one scope: how many, and the
// expiry in DocsFile of those that were there at the full verify.
type sectionFacts struct {
	changed int
	known   []int64
}

// isChanged reports whether the row of k is a changed row.
func (sr *sinceRun) isChanged(k key) (bool, error) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.changed.Has(k)
}

// wasJudged reports whether the row of k is a changed row or one that a
// changed doc brought in: judged already.
func (sr *sinceRun) wasJudged(k key) (bool, error) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if found, err := sr.changed.Has(k); found || err != nil {
		return found, err
	}
	return sr.judged.Has(k)
}

// since is the --since path of Run.
func (s *state) since(ctx context.Context) (joined, error) {
	if s.v.Changes == nil || s.v.Position == nil {
		return joined{}, errors.New("verify --since needs the change feed (Verifier.Changes and Position)")
	}
	sr := &sinceRun{state: s, rows: newRowIndex(s.work), docs: newDocIndex(s.blobs, s.work), sections: map[[2]string]*sectionFacts{},
		cursors: map[[2]string]*docsCursor{}}
	sr.docs.feed = true
	sr.changed = s.work.keySet("changed", s.work.z.idMemoryKeys, s.work.z.idFilterBytes)
	sr.judged = s.work.keySet("judged", s.work.z.idMemoryKeys, s.work.z.idFilterBytes)
	sr.rows.changed = sr.changed
	if b := s.opts.Base; b != nil {
		d, err := openDocsFile(b.DocsFile)
		if err != nil {
			return joined{}, err
		}
		defer d.Close()
		sr.base = d
	}
	g, gctx := errgroup.WithContext(ctx)
	fed := make(chan struct{}) // the change feed is read
	g.Go(func() error {
		defer close(fed)
		return sr.readChanges(gctx)
	})
	g.Go(func() error {
		rr := rowReader{rows: s.v.Rows, opts: s.opts, blobs: s.blobs, progress: s.v.Progress, work: s.work, q: store.Query{Since: s.opts.Since}}
		if err := rr.read(gctx, sr.rows); err != nil {
			return err
		}
		select {
		case <-fed:
		default: // the progress names what is still read, not the last table
			s.v.Progress.Step(sr.feedStep() + " (the tables' changes are read)")
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return joined{}, err
	}
	s.v.Progress.Step("comparing")
	j := newJoiner(sr.rows, sr.docs, s.work, s.opts.Tables, s.opts.Sample, MaxRecheck)
	j.unread, j.untaken = s.work.sorter("unread"), s.work.sorter("untaken")
	j.isChanged = sr.isChanged
	j.manifest = sr.noteChanged
	sr.j = j
	if err := j.byPlace(newStream(sr.rows.exp), newStream(sr.docs.act)); err != nil {
		return joined{}, fmt.Errorf("verify's sorted runs: %w", err)
	}
	if err := sr.resolve(ctx); err != nil {
		return joined{}, err
	}
	if err := j.byRow(newStream(j.unplaced), newStream(j.free), newStream(sr.rows.seen)); err != nil {
		return joined{}, fmt.Errorf("verify's sorted runs: %w", err)
	}
	var base time.Time
	if sr.base != nil {
		if err := sr.deletions(ctx); err != nil {
			return joined{}, err
		}
		base = s.opts.Base.Started
	}
	out := j.finish()
	out.r.AccessPatterns = AccessPatterns{Findings: []Finding{}}
	out.rowsRead = sr.rows.read + int(sr.extra)
	out.docsJudged = sr.docs.seqs()
	out.base = base
	return out, nil
}

// feedStep is the progress step of reading the change feed.
func (sr *sinceRun) feedStep() string {
	return "reading the changes of containers " + strings.Join(containers, ", ") + " since " + sr.opts.Since.UTC().Format(time.RFC3339)
}

// readChanges reads the change feed of every container since --since.
func (sr *sinceRun) readChanges(ctx context.Context) error {
	sr.v.Progress.Step(sr.feedStep())
	from := sr.v.Position(sr.opts.Since)
	for _, c := range containers {
		_, err := sr.v.Changes.Changes(ctx, c, from, min(sr.opts.PageSize, FeedPageSize), func(raw []byte) error { return sr.docs.add(c, raw) })
		if err != nil {
			return err
		}
	}
	return nil
}

// noteChanged hears every changed doc in place order: what the base's
// DocsFile knew of it, for the counts of its scope.
func (sr *sinceRun) noteChanged(a *actualDoc) error {
	if sr.base == nil {
		return nil
	}
	k := [2]string{a.ref.Container, a.ref.Scope}
	f := sr.sections[k]
	if f == nil {
		f = &sectionFacts{}
		sr.sections[k] = f
		sr.cursors[k] = sr.base.cursor(sr.base.section(a.ref.Container, a.ref.Scope))
	}
	f.changed++
	e, ok, err := sr.cursors[k].seek(a.ref.ID)
	if err != nil {
		return err
	}
	if ok && e.id == a.ref.ID {
		f.known = append(f.known, e.expiry)
	}
	return nil
}

// An outcome of resolving a row or a doc the join could not judge alone.
type resolution struct {
	// judge: e against a (moved: a is elsewhere); extra: e is a row the
	// changed docs brought in, not a changed row.
	judge       bool
	e           expectedDoc
	a           actualDoc
	moved       bool
	extra       bool
	unplaced    bool           // e has no doc at its place: step 2
	collision   *DeadLetterRow // e collides with an unchanged row that comes first
	free        bool           // a names a changed row: step 2
	orphan      string         // a is an orphan, for this reason
	appWritten  bool           // a is the application's
	expiredHere bool           // e (extra, expired) still has its doc a
}

// resolve reads what the join could not judge from the changes alone:
// the docs at the places of changed rows that the feed did not give, and
// the rows named by changed docs that no changed row took.
func (sr *sinceRun) resolve(ctx context.Context) error {
	j := sr.j
	out := make(chan resolution, sinceConcurrency)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(out)
		w, wctx := errgroup.WithContext(gctx)
		w.SetLimit(sinceConcurrency)
		if err := each(j.unread, func(r *recReader) expectedDoc { return r.expected(false) }, func(e expectedDoc) {
			w.Go(func() error { return sr.resolveRow(wctx, e, out) })
		}); err != nil {
			return err
		}
		if err := each(j.untaken, func(r *recReader) actualDoc { return r.actual(false) }, func(a actualDoc) {
			w.Go(func() error { return sr.resolveDoc(wctx, a, out) })
		}); err != nil {
			return err
		}
		return w.Wait()
	})
	g.Go(func() error {
		for res := range out {
			if err := sr.apply(res); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// each decodes every record of s with read, in order, and calls fn with
// the entry; read must copy what the entry keeps of the record.
func each[E any](s *spill.Sorter, read func(*recReader) E, fn func(E)) error {
	st := newStream(s)
	for st.ok {
		r := recReader{b: st.cur}
		e := read(&r)
		if r.err != nil {
			return r.err
		}
		fn(e)
		st.advance()
	}
	return st.err
}

// send hands a resolution to the loop that applies them.
func send(ctx context.Context, out chan<- resolution, r resolution) error {
	select {
	case out <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resolveRow reads the doc at the place of changed row e, which the feed
// did not give (or gave naming another row).
func (sr *sinceRun) resolveRow(ctx context.Context, e expectedDoc, out chan<- resolution) error {
	raw, found, err := sr.v.Docs.Read(ctx, e.ref.Container, e.ref.Scope, e.ref.ID)
	if err != nil {
		return err
	}
	if !found {
		return send(ctx, out, resolution{unplaced: true, e: e})
	}
	a, err := sr.docs.entry(e.ref.Container, raw)
	if err != nil {
		return err
	}
	if a.hasMig && a.src() != keyOf(e.ref.Table, e.ref.PartitionKey, e.ref.RowKey) {
		changed, err := sr.isChanged(a.src())
		if err != nil {
			return err
		}
		if !changed {
			dl, err := sr.collision(ctx, e, a)
			if err != nil {
				return err
			}
			if dl != nil {
				return send(ctx, out, resolution{collision: dl, e: e})
			}
		}
	}
	return send(ctx, out, resolution{judge: true, e: e, a: a})
}

// collision reports whether changed row e is a dead letter because the
// unchanged row that doc a (at e's place) names comes first in read order
// and still takes the place; it returns e's dead letter then.
func (sr *sinceRun) collision(ctx context.Context, e expectedDoc, a actualDoc) (*DeadLetterRow, error) {
	if !before(a.ref, e.ref) {
		return nil, nil
	}
	row, found, err := sr.lookup(ctx, a.ref)
	if err != nil || !found {
		return nil, err
	}
	o := sr.transformRow(row)
	if o.Disposition != transform.DispositionDoc || o.Container != e.ref.Container || o.Scope != e.ref.Scope || o.ID != e.ref.ID {
		return nil, nil
	}
	mine, found, err := sr.lookup(ctx, e.ref)
	if err != nil || !found {
		return nil, err
	}
	return &DeadLetterRow{Table: mine.Table, PartitionKey: mine.PartitionKey, RowKey: mine.RowKey, Kind: transform.Kind(mine.RowKey),
		Reason: transform.CollisionReason(o.Container, o.Scope, o.ID), Row: transform.EncodeEntity(transform.RedactRow(mine))}, nil
}

// before reports whether row a comes before row b in read order (tables
// in order, then keys).
func before(a, b DocRef) bool {
	if ta, tb := transform.TableOrder(a.Table), transform.TableOrder(b.Table); ta != tb {
		return ta < tb
	}
	return transform.CompareKeys(a.PartitionKey, a.RowKey, b.PartitionKey, b.RowKey) < 0
}

// lookup reads the row ref names.
func (sr *sinceRun) lookup(ctx context.Context, ref DocRef) (transform.Row, bool, error) {
	row, found, err := store.Lookup(ctx, sr.v.Rows, sr.opts.TablePrefix, ref.Table, store.Key{PartitionKey: ref.PartitionKey, RowKey: ref.RowKey})
	row.Table = ref.Table
	return row, found, err
}

func (sr *sinceRun) transformRow(row transform.Row) transform.Outcome {
	return rowReader{opts: sr.opts, blobs: sr.blobs}.transform(row)
}

// selected reports whether the row ref names is in the selection.
func (sr *sinceRun) selected(ref DocRef) bool {
	return slices.Contains(sr.opts.Tables, ref.Table) && sampledKey(keyOf(ref.Table, ref.PartitionKey, ref.RowKey), sr.opts.Sample)
}

// resolveDoc judges changed doc a, which no changed row expects at its
// place, against the row it names (its _migration, or the row it would
// go back to without one).
func (sr *sinceRun) resolveDoc(ctx context.Context, a actualDoc, out chan<- resolution) error {
	if a.ref.Table == "" {
		return send(ctx, out, resolution{appWritten: true, a: a})
	}
	changed, err := sr.isChanged(a.src())
	if err != nil {
		return err
	}
	if changed {
		if a.hasMig {
			return send(ctx, out, resolution{free: true, a: a})
		}
		return send(ctx, out, resolution{appWritten: true, a: a})
	}
	row, found, err := sr.lookup(ctx, a.ref)
	if err != nil {
		return err
	}
	if !found {
		if a.hasMig {
			return send(ctx, out, resolution{orphan: "its row no longer exists", a: a})
		}
		return send(ctx, out, resolution{appWritten: true, a: a})
	}
	o := sr.transformRow(row)
	here := o.Container == a.ref.Container && o.Scope == a.ref.Scope && o.ID == a.ref.ID
	switch {
	case o.Disposition == transform.DispositionDoc && here, o.Disposition == transform.DispositionExpired && here:
		e, err := expectedOf(row, o)
		if err != nil {
			return err
		}
		if e.expired {
			return send(ctx, out, resolution{expiredHere: true, extra: true, e: e, a: a})
		}
		return send(ctx, out, resolution{judge: true, extra: true, e: e, a: a})
	case !a.hasMig:
		return send(ctx, out, resolution{appWritten: true, a: a})
	case o.Disposition == transform.DispositionDoc:
		// Its row's doc belongs elsewhere: is it there?
		_, there, err := sr.v.Docs.Read(ctx, o.Container, o.Scope, o.ID)
		if err != nil {
			return err
		}
		if there {
			return send(ctx, out, resolution{orphan: "a second doc of a row whose doc is elsewhere", a: a})
		}
		e, err := expectedOf(row, o)
		if err != nil {
			return err
		}
		return send(ctx, out, resolution{judge: true, moved: true, extra: true, e: e, a: a})
	}
	return send(ctx, out, resolution{orphan: "its row's disposition is now " + string(o.Disposition), a: a})
}

// apply counts one resolution (on the join's goroutine).
func (sr *sinceRun) apply(res resolution) error {
	j := sr.j
	if res.extra {
		sr.mu.Lock()
		_, err := sr.judged.Add(keyOf(res.e.ref.Table, res.e.ref.PartitionKey, res.e.ref.RowKey))
		sr.mu.Unlock()
		if err != nil {
			return err
		}
		sr.extra++
		res.e.seq = extraSeqs + sr.extra
		res.e.kind = j.counts.kind(res.e.ref.Table, transform.Kind(res.e.ref.RowKey))
		c := &j.counts.kinds[res.e.kind]
		c.Rows++
		if res.e.expired {
			c.Expired++
		} else {
			c.ExpectedDocs++
		}
	}
	switch {
	case res.judge:
		j.judge(&res.e, &res.a, res.moved)
	case res.expiredHere:
		j.counts.kinds[res.e.kind].ExpiredPresent++
	case res.unplaced:
		j.rec.expected(&res.e, true)
		return j.unplaced.Add(j.rec.b)
	case res.collision != nil:
		c := &j.counts.kinds[res.e.kind]
		c.ExpectedDocs--
		c.DeadLetter++
		if len(j.r.DeadLetters) < MaxDeadLetters {
			j.r.DeadLetters = append(j.r.DeadLetters, *res.collision)
		}
	case res.free:
		j.rec.actual(&res.a, true)
		return j.free.Add(j.rec.b)
	case res.orphan != "":
		if !sr.selected(res.a.ref) {
			j.r.NotJudged++
			break
		}
		j.counts.kinds[j.counts.kind(res.a.ref.Table, transform.Kind(res.a.ref.RowKey))].Orphans++
		j.r.Orphans = append(j.r.Orphans, Orphan{DocRef: res.a.ref, Reason: res.orphan})
	case res.appWritten:
		j.r.AppWritten[res.a.ref.Container]++
	}
	return nil
}

// deletions finds the docs of the base's DocsFile that are gone. Each
// container's docs are counted first: when the count is what DocsFile
// and the changes explain, none of its docs is gone. Otherwise (or when
// the service cannot count a container in one query), the docs of every
// scope the full verify read are counted, and a scope with fewer than
// DocsFile and the changes explain is read again, its ids compared with
// DocsFile's.
//
// A container's count settles the question as surely as its scopes'
// counts would: every doc there now is a doc of DocsFile that did not
// change since (and whose ttl has not ended) or a changed doc, which the
// change feed gave — the assumption the scopes' counts rest on too — so
// no scope holds more than its share of the expected count, and a total
// equal to the sum of those shares leaves every scope at its own. A doc
// deleted beside one created in the same scope or another is found: the
// created one is in the change feed, so the expected count counts it.
func (sr *sinceRun) deletions(ctx context.Context) error {
	sr.v.Progress.Step(fmt.Sprintf("counting the docs of the containers that the full verify of %s read, and of their scopes where the count falls short",
		sr.opts.Base.Started.UTC().Format(time.RFC3339)))
	type gone struct {
		section *docsSection
		after   int64 // a doc whose ttl ends after this must be there
	}
	var drill []gone
	var mu sync.Mutex
	settled, err := sr.settledContainers(ctx)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sinceConcurrency)
	for i := range sr.base.index.Sections {
		sec := &sr.base.index.Sections[i]
		if settled[sec.Container] {
			continue
		}
		facts := sr.facts(sec.Container, sec.Scope)
		g.Go(func() error {
			sent := sr.now()
			n, err := sr.count(gctx, sec.Container, queryCountOfScope, []store.QueryParam{{Name: "@scope", Value: sec.Scope}})
			if err != nil {
				return err
			}
			recv := sr.now()
			mustAfter, mayAfter := recv.Add(clockSkew).Unix(), sent.Add(-clockSkew).Unix()
			hi, err := sr.present(sec, facts, mayAfter)
			if err != nil {
				return err
			}
			if n < hi {
				mu.Lock()
				drill = append(drill, gone{sec, mustAfter})
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, d := range drill {
		if err := sr.drill(ctx, d.section, d.after); err != nil {
			return err
		}
	}
	return nil
}

// facts are what the change feed said of the scope of container (none:
// zero facts).
func (sr *sinceRun) facts(container, scope string) *sectionFacts {
	if f := sr.sections[[2]string{container, scope}]; f != nil {
		return f
	}
	return &sectionFacts{}
}

// settledContainers counts the docs of each container the full verify
// read, in one query each, and returns those whose count is what
// DocsFile and the changes explain: none of their docs is gone. A
// container the service will not count in one query (a cross-partition
// aggregate, which the gateway of an account of several physical
// partitions refuses: 400) is not settled; its scopes are counted.
func (sr *sinceRun) settledContainers(ctx context.Context) (map[string]bool, error) {
	var names []string
	for _, sec := range sr.base.index.Sections {
		if !slices.Contains(names, sec.Container) {
			names = append(names, sec.Container)
		}
	}
	settled := map[string]bool{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range names {
		g.Go(func() error {
			sent := sr.now()
			n, err := sr.count(gctx, c, queryCount, nil)
			if store.KindOf(err) == store.Refused {
				return nil
			}
			if err != nil {
				return err
			}
			hi, err := sr.expected(c, sent.Add(-clockSkew).Unix())
			if err != nil || n != hi {
				return err
			}
			mu.Lock()
			settled[c] = true
			mu.Unlock()
			return nil
		})
	}
	return settled, g.Wait()
}

// expected is how many docs container should hold now if none was
// deleted: the sum of present over the scopes the full verify read, and
// the changed docs of the scopes it did not.
func (sr *sinceRun) expected(container string, after int64) (int, error) {
	n := 0
	for i := range sr.base.index.Sections {
		sec := &sr.base.index.Sections[i]
		if sec.Container != container {
			continue
		}
		k, err := sr.present(sec, sr.facts(sec.Container, sec.Scope), after)
		if err != nil {
			return 0, err
		}
		n += k
	}
	for k, f := range sr.sections {
		if k[0] == container && sr.base.section(k[0], k[1]) == nil {
			n += f.changed
		}
	}
	return n, nil
}

// count asks how many docs query (a count, of params) finds in
// container now. A count that comes in parts (a cross-partition count
// that the service answers partition by partition) is their sum.
func (sr *sinceRun) count(ctx context.Context, container, query string, params []store.QueryParam) (int, error) {
	n, parts := 0, 0
	err := sr.v.Docs.QueryAll(ctx, container, query, params, 0, func(raw []byte) error {
		v, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			return fmt.Errorf("container %s: the count of %s is not a number: %.40q", container, countOf(params), raw)
		}
		n, parts = n+v, parts+1
		return nil
	})
	if err == nil && parts == 0 {
		err = fmt.Errorf("container %s: no count of %s", container, countOf(params))
	}
	return n, err
}

// countOf names what a count of params counts, for errors.
func countOf(params []store.QueryParam) string {
	if len(params) == 0 {
		return "its docs"
	}
	return fmt.Sprintf("scope %q", params[0].Value)
}

// present is how many docs section should hold now if none was deleted:
// the docs of DocsFile there whose ttl ends after after and that did not
// change, plus the changed docs of the scope.
func (sr *sinceRun) present(sec *docsSection, facts *sectionFacts, after int64) (int, error) {
	n := 0
	c := sr.base.cursor(sec)
	for b := range sec.Blocks {
		blk := sec.Blocks[b]
		if blk.MinExpiry > after {
			n += blk.Docs
			continue
		}
		es, err := c.d.block(blk)
		if err != nil {
			return 0, err
		}
		for _, e := range es {
			if e.expiry > after {
				n++
			}
		}
	}
	for _, exp := range facts.known {
		if exp > after {
			n--
		}
	}
	return n + facts.changed, nil
}

// drill reads the ids of a section's scope now and judges each doc of
// DocsFile gone from it whose ttl ends after after: missing when its row,
// not a changed row, still expects it there.
func (sr *sinceRun) drill(ctx context.Context, sec *docsSection, after int64) error {
	sr.v.Progress.Step(fmt.Sprintf("reading the ids of scope %q of container %s: fewer docs than the full verify and the changes explain", sec.Scope, sec.Container))
	now := sr.work.sorter("ids-" + strconv.Itoa(int(sr.extra)) + "-" + sec.Container + "-" + strconv.Itoa(len(sec.Scope)))
	var w recWriter
	err := sr.v.Docs.QueryAll(ctx, sec.Container, queryIDsOfScope, []store.QueryParam{{Name: "@scope", Value: sec.Scope}}, sr.opts.PageSize, func(raw []byte) error {
		m, err := transform.DecodeDoc(raw)
		if err != nil {
			return fmt.Errorf("container %s: an id of scope %q: %w", sec.Container, sec.Scope, err)
		}
		w.reset()
		w.key(str(m["id"]))
		return now.Add(w.b)
	})
	if err != nil {
		return err
	}
	ids := newStream(now)
	var gone []docsEntry
	for b := range sec.Blocks {
		es, err := sr.base.block(sec.Blocks[b])
		if err != nil {
			return err
		}
		for _, e := range es {
			w.reset()
			w.key(e.id)
			for ids.ok && string(ids.cur) < string(w.b) {
				ids.advance()
			}
			if ids.ok && string(ids.cur) == string(w.b) || e.expiry <= after || !e.hasMig {
				continue
			}
			gone = append(gone, e)
		}
	}
	if ids.err != nil {
		return ids.err
	}
	out := make(chan resolution, sinceConcurrency)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(out)
		w, wctx := errgroup.WithContext(gctx)
		w.SetLimit(sinceConcurrency)
		for _, e := range gone {
			ref := DocRef{Table: e.table, PartitionKey: e.partitionKey, RowKey: e.rowKey, Container: sec.Container, Scope: sec.Scope, ID: e.id}
			w.Go(func() error { return sr.resolveGone(wctx, ref, out) })
		}
		return w.Wait()
	})
	g.Go(func() error {
		for res := range out {
			sr.extra++
			res.e.seq = extraSeqs + sr.extra
			res.e.kind = sr.j.counts.kind(res.e.ref.Table, transform.Kind(res.e.ref.RowKey))
			c := &sr.j.counts.kinds[res.e.kind]
			c.Rows++
			c.ExpectedDocs++
			c.Missing++
			sr.j.missing = append(sr.j.missing, res.e)
		}
		return nil
	})
	return g.Wait()
}

// resolveGone judges a doc of DocsFile that is gone: missing when its row
// was not judged already (a changed row, or one a changed doc named) and
// still expects it there (sent), else nothing.
func (sr *sinceRun) resolveGone(ctx context.Context, ref DocRef, out chan<- resolution) error {
	if !sr.selected(ref) {
		return nil
	}
	judged, err := sr.wasJudged(keyOf(ref.Table, ref.PartitionKey, ref.RowKey))
	if err != nil || judged {
		return err
	}
	row, found, err := sr.lookup(ctx, ref)
	if err != nil || !found {
		return err
	}
	o := sr.transformRow(row)
	if o.Disposition != transform.DispositionDoc || o.Container != ref.Container || o.Scope != ref.Scope || o.ID != ref.ID {
		return nil
	}
	e, err := expectedOf(row, o)
	if err != nil {
		return err
	}
	return send(ctx, out, resolution{e: e})
}
