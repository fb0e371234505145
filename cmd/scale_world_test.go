package cmd_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bifrost/bifrost-migrate/transform"
)

// The scale benchmark's source (TestScaleBenchmark): a Bifrost deployment
// of any number of executions whose rows are computed, not stored, so
// that the Table service before the tool (scaleTables) can serve millions
// of them in key order without holding them. Every table is a sequence of
// segments whose keys increase: row i of a table is computed from i alone,
// and a key is found by binary search over the positions. Execution n
// (0 ≤ n < N) belongs to organization n mod O; its user, form, workflow
// and status are functions of n modulo small numbers, so that the rows of
// one index group (a user's executions, a workflow's in one organization,
// …) are the executions of a few residues modulo that number, in the
// order of n, and execution ids increase with n.

const (
	scaleOrgs          = 16 // organizations (O)
	scaleUsersPerOrg   = 6
	scaleFormsPerOrg   = 4
	scaleWorkflowSkip  = 7 // workflow of n: (n / (O·7)) mod W
	scaleStatusPattern = 100
)

var scaleWorkflows = []string{
	"add_to_group", "assign_licence", "audit_mfa_status", "create_ticket", "export_audit_log", "generate_mailbox_report",
	"get_user_licenses", "offboard_user", "onboard_user", "purge_old_mailboxes", "reset_user_password", "sync_users_from_entra",
}

// scaleStatuses are the statuses of n mod 100, with Bifrost-like
// frequencies.
var scaleStatuses = func() [scaleStatusPattern]string {
	var s [scaleStatusPattern]string
	for i := range s {
		switch r := (i * 37) % scaleStatusPattern; {
		case r < 70:
			s[i] = "Success"
		case r < 82:
			s[i] = "Failed"
		case r < 87:
			s[i] = "CompletedWithErrors"
		case r < 90:
			s[i] = "Timeout"
		case r < 93:
			s[i] = "Cancelled"
		case r < 96:
			s[i] = "Running"
		case r < 98:
			s[i] = "Pending"
		default:
			s[i] = "Cancelling"
		}
	}
	return s
}()

// scaleWorld is the deployment: N executions and the small rows around
// them. It is read-only once built, but for the application's writes
// (change), and safe for concurrent use.
type scaleWorld struct {
	n      int
	orgs   []string // PartitionKeys (UUIDs), by org number
	users  [][]scaleUser
	forms  [][]string
	base   time.Time // StartedAt of execution 0; later n start earlier
	step   time.Duration
	stamp  time.Time // every row's Timestamp
	tables map[string]*scaleTable

	// dups are the executions of org 0 that the partition "org-" + its
	// id repeats (same RowKey): each repetition collides with the
	// execution's doc (SPEC §3, §10). dangling are execution ids that
	// index rows name and no execution has.
	dups     []int
	dangling []string

	// changes are the application's writes after the world's stamp
	// (change): nil until it writes.
	changes atomic.Pointer[scaleChanges]
}

// scaleChanges are rows the application wrote again after the world's
// stamp, as it does when an execution ends: an execution's row, its
// Status now "Cancelled", and its status index row, both written at
// stamp (same keys).
type scaleChanges struct {
	stamp time.Time
	execs map[int]bool
	// rows are the positions of the rows written again, by table, in
	// key order: the rows a Timestamp filter after the world's stamp
	// selects (scaleServers.serveTables).
	rows map[string][]int
}

// change makes the application write k executions spread over the world
// again at time at (2·k rows: each one's row and status index row) and
// returns them. Their rows are then served with their new Timestamp; the
// docs run wrote for them (scaleDocs) stay as they were.
func (w *scaleWorld) change(k int, at time.Time) []int {
	ch := &scaleChanges{stamp: at, execs: map[int]bool{}}
	var ns []int
	for i := range k {
		// Spread over the executions and the organizations; never a
		// repeated one (org 0's dups), whose doc is the first row's.
		n := i*(w.n/k) + i%scaleOrgs
		if n >= w.n || ch.execs[n] || slices.Contains(w.dups, n) {
			continue
		}
		ch.execs[n] = true
		ns = append(ns, n)
	}
	ch.rows = w.positions(ns)
	w.changes.Store(ch)
	return ns
}

// positions are where the rows of executions ns lie in each table, in
// key order: each one's row (Entities) and status index row
// (Relationships).
func (w *scaleWorld) positions(ns []int) map[string][]int {
	out := map[string][]int{}
	at := func(table, pk, rk string) {
		tb := w.tables[table]
		p := tb.Seek(pk, rk)
		if p == tb.total {
			panic(fmt.Sprintf("%s has no row %s/%s", table, pk, rk))
		}
		if kp, kr := tb.Key(p); kp != pk || kr != rk {
			panic(fmt.Sprintf("%s has no row %s/%s", table, pk, rk))
		}
		out[table] = append(out[table], p)
	}
	for _, n := range ns {
		at(transform.TableEntities, w.orgs[w.org(n)], w.execRowKey(n))
		at(transform.TableRelationships, "GLOBAL", "status:"+w.status(n)+":"+execID(n))
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// changedAt is when the application wrote execution n again, if it did.
func (w *scaleWorld) changedAt(n int) (time.Time, bool) {
	ch := w.changes.Load()
	if ch == nil || !ch.execs[n] {
		return time.Time{}, false
	}
	return ch.stamp, true
}

type scaleUser struct{ email, name string }

// Expected findings of a world (besides its docs).
func (w *scaleWorld) collisions() int      { return len(w.dups) }
func (w *scaleWorld) danglingIndexes() int { return len(w.dangling) }

// newScaleWorld builds the world of n executions, with its collisions.
func newScaleWorld(n int) *scaleWorld { return buildScaleWorld(n, true) }

// buildScaleWorld builds the world of n executions; without collisions
// a full verify of what run writes for it is in sync (the base a verify
// --since builds on).
func buildScaleWorld(n int, collisions bool) *scaleWorld {
	r := rand.New(rand.NewPCG(29, 1))
	w := &scaleWorld{n: n}
	w.base = time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	// The rows were written after the latest execution started, and
	// before anything the benchmark runs: a full verify's start, the
	// application's later writes. Relative to now, so that the docs' ttl
	// (14 days from the stamp, their _ts) never ends during a benchmark.
	w.stamp = w.base.Truncate(time.Second).Add(30*time.Second + 1234567)
	w.step = max(time.Millisecond, (13 * 24 * time.Hour / time.Duration(max(n, 1))).Truncate(time.Millisecond))
	first := []string{"Alice", "Bob", "Chloé", "Dmitri", "Eva", "Farah", "Gustav", "Hiroshi", "Ines", "Jürgen"}
	last := []string{"Anderson", "Brown", "Çelik", "Dubois", "Evans", "Fischer", "García", "Hughes"}
	for o := range scaleOrgs {
		w.orgs = append(w.orgs, scaleUUID(r))
		var us []scaleUser
		for u := range scaleUsersPerOrg {
			f, l := first[(o+u)%len(first)], last[(o*3+u)%len(last)]
			us = append(us, scaleUser{email: fmt.Sprintf("%s.%s%d@tenant%02d.example", strings.ToLower(f), strings.ToLower(l), u, o), name: f + " " + l})
		}
		w.users = append(w.users, us)
		var fs []string
		for range scaleFormsPerOrg {
			fs = append(fs, scaleUUID(r))
		}
		w.forms = append(w.forms, fs)
	}
	for i := range 8 {
		if !collisions {
			break
		}
		// Spread over org 0's executions, so that the earlier row is long
		// behind when its repetition is read.
		if k := i * (n / scaleOrgs / 8); k*scaleOrgs < n {
			w.dups = append(w.dups, k*scaleOrgs)
		}
	}
	w.dups = slices.Compact(w.dups)
	w.dangling = []string{"dddddddd-0000-4000-8000-000000000001", "dddddddd-0000-4000-8000-000000000002", "dddddddd-0000-4000-8000-000000000003"}
	w.tables = map[string]*scaleTable{
		"Config":        newScaleTable(w.configSegments()),
		"Entities":      newScaleTable(w.entitySegments()),
		"Relationships": newScaleTable(w.relationshipSegments()),
	}
	return w
}

func scaleUUID(r *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// execID is the id of execution n: UUID-shaped, increasing with n.
func execID(n int) string {
	h := uint64(n)*0x9e3779b97f4a7c15 ^ 0xbf58476d1ce4e5b9
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", n>>16, n&0xffff, (h>>12)&0xfff, (h>>24)&0xfff, h>>16&0xffffffffffff)
}

// execOfID is the n of an execID, or -1.
func execOfID(id string) int {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' {
		return -1
	}
	hi, err1 := strconv.ParseUint(id[:8], 16, 32)
	lo, err2 := strconv.ParseUint(id[9:13], 16, 16)
	if err1 != nil || err2 != nil {
		return -1
	}
	n := int(hi<<16 | lo)
	if execID(n) != id {
		return -1
	}
	return n
}

func (w *scaleWorld) org(n int) int { return n % scaleOrgs }
func (w *scaleWorld) user(n int) scaleUser {
	return w.users[n%scaleOrgs][(n/scaleOrgs)%scaleUsersPerOrg]
}
func (w *scaleWorld) form(n int) string {
	return w.forms[n%scaleOrgs][(n/(scaleOrgs*scaleUsersPerOrg))%scaleFormsPerOrg]
}
func (w *scaleWorld) workflow(n int) string {
	return scaleWorkflows[(n/(scaleOrgs*scaleWorkflowSkip))%len(scaleWorkflows)]
}
func (w *scaleWorld) status(n int) string { return scaleStatuses[n%scaleStatusPattern] }
func (w *scaleWorld) started(n int) time.Time {
	return w.base.Add(-time.Duration(n) * w.step)
}

// execRowKey is the RowKey of execution n.
func (w *scaleWorld) execRowKey(n int) string {
	return "execution:" + strconv.FormatInt(9999999999999-w.started(n).UnixMilli(), 10) + "_" + execID(n)
}

// Blob facts: execution n has its result in blobs (listed) when
// n mod 1000 = 7, and an inline result above 32 KB (uploaded by run) when
// n mod 1000 = 13.
func resultInBlob(n int) bool { return n%1000 == 7 }
func largeResult(n int) bool  { return n%1000 == 13 }

var scaleWords = strings.Fields(`mailbox licence tenant group policy device compliance sync user account
	password ticket report archive retention conditional access guest member owner shared calendar
	quota forwarding alias domain connector license audit sign-in risk token consent application`)

func scaleText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(scaleWords[r.IntN(len(scaleWords))])
	}
	return b.String()
}

func scaleJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// isoNaive is Bifrost's own timestamp format (datetime.isoformat()).
func scaleIso(t time.Time) string {
	s := t.UTC().Format("2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s
}

// execRow is the Entities row of execution n, in partition pk (its org's,
// or the repetition's).
func (w *scaleWorld) execRow(n int, pk string) transform.Row {
	r := rand.New(rand.NewPCG(uint64(n), 29))
	id := execID(n)
	u := w.user(n)
	status := w.status(n)
	started := w.started(n)
	props := map[string]transform.Value{
		"ExecutionId":    transform.String(id),
		"WorkflowName":   transform.String(w.workflow(n)),
		"FormId":         transform.String(w.form(n)),
		"ExecutedBy":     transform.String(u.email),
		"ExecutedByName": transform.String(u.name),
		"Status":         transform.String(status),
		"StartedAt":      transform.String(scaleIso(started)),
		"ResultInBlob":   {Type: transform.EdmBoolean},
	}
	in := map[string]any{"requestedBy": u.email, "correlationId": execID(n ^ 0x5555), "notes": scaleText(r, 20+r.IntN(30))}
	for i := range 3 + r.IntN(4) {
		in[fmt.Sprintf("field%d", i)] = scaleText(r, 2+r.IntN(5))
	}
	props["InputData"] = transform.String(scaleJSON(in))
	terminal := status != "Running" && status != "Pending" && status != "Cancelling"
	if terminal {
		d := 150 + int64(r.ExpFloat64()*4000)
		props["CompletedAt"] = transform.String(scaleIso(started.Add(time.Duration(d) * time.Millisecond)))
		props["DurationMs"] = transform.Value{Type: transform.EdmInt32, Int: d}
	}
	switch status {
	case "Success", "CompletedWithErrors":
		switch {
		case resultInBlob(n):
			props["ResultInBlob"] = transform.Value{Type: transform.EdmBoolean, Bool: true}
		case largeResult(n):
			props["Result"] = transform.String(scaleLargeResult(r))
		default:
			items := make([]map[string]any, 6+r.IntN(8))
			for i := range items {
				items[i] = map[string]any{"id": execID(n*16 + i), "name": scaleText(r, 3), "count": r.IntN(5000), "ok": r.IntN(10) != 0}
			}
			props["Result"] = transform.String(scaleJSON(map[string]any{"workflow": w.workflow(n), "user": u.email, "items": items, "summary": scaleText(r, 12)}))
		}
		if status == "CompletedWithErrors" {
			props["ErrorMessage"] = transform.String(fmt.Sprintf("%d of %d steps failed", 1+r.IntN(3), 4+r.IntN(6)))
		}
	case "Failed", "Timeout", "Cancelled":
		props["ErrorMessage"] = transform.String(w.workflow(n) + " failed: " + scaleText(r, 5))
	}
	return transform.Row{Table: "Entities", PartitionKey: pk, RowKey: w.execRowKey(n), Timestamp: w.stamp, Props: props}
}

// scaleLargeResult is a JSON result of about 40 KB.
func scaleLargeResult(r *rand.Rand) string {
	return scaleJSON(map[string]any{"report": scaleText(r, 5500), "rows": r.IntN(1000)})
}

// blobsOf are the blobs the listing holds for execution n (name, content).
func (w *scaleWorld) blobsOf(n int) map[string]string {
	if !resultInBlob(n) {
		return nil
	}
	id := execID(n)
	return map[string]string{
		id + "/result.json": scaleJSON(map[string]any{"execution": id, "rows": strings.Repeat("x", 3000+n%500)}),
		id + "/logs.json":   scaleJSON([]map[string]string{{"level": "INFO", "msg": "started " + id}}),
	}
}

// execFacts is what the listing tells of execution n's blobs.
func (w *scaleWorld) execFacts(n int) transform.BlobFacts {
	var f transform.BlobFacts
	for name, data := range w.blobsOf(n) {
		_, file, _ := strings.Cut(name, "/")
		if b, ok := transform.ParseBlobName(file); ok {
			f.Set(b, int64(len(data)))
		}
	}
	return f
}

// ---- segments

// scaleSegment is a run of consecutive rows of one table, in key order.
type scaleSegment interface {
	Len() int
	Key(i int) (pk, rk string)
	Row(i int) transform.Row
	// Stamp is row i's Timestamp (what the service reads of a row to
	// evaluate a Timestamp filter).
	Stamp(i int) time.Time
}

// fixedDocs calls fn with each doc that the fixed rows of Config and
// Entities (the world's rows other than executions) make with opts, in
// read order, collisions left out as run leaves them.
func (w *scaleWorld) fixedDocs(opts transform.Options, fn func(table string, row transform.Row, o transform.Outcome)) {
	ids := transform.NewIDSet()
	for _, table := range []string{"Config", "Entities"} {
		for _, seg := range w.tables[table].segs {
			fixed, ok := seg.(fixedRows)
			if !ok {
				continue
			}
			for _, row := range fixed {
				if o := ids.Check(transform.Transform(row, transform.BlobFacts{}, opts)); o.Disposition == transform.DispositionDoc {
					fn(table, row, o)
				}
			}
		}
	}
}

// fixedRows is a segment of rows held in memory (the small kinds).
type fixedRows []transform.Row

func (f fixedRows) Len() int                   { return len(f) }
func (f fixedRows) Key(i int) (string, string) { return f[i].PartitionKey, f[i].RowKey }
func (f fixedRows) Row(i int) transform.Row    { return f[i] }
func (f fixedRows) Stamp(i int) time.Time      { return f[i].Timestamp }

func newFixedRows(table string, rows ...transform.Row) fixedRows {
	for i := range rows {
		rows[i].Table = table
	}
	sort.Slice(rows, func(i, j int) bool {
		return transform.CompareKeys(rows[i].PartitionKey, rows[i].RowKey, rows[j].PartitionKey, rows[j].RowKey) < 0
	})
	return rows
}

// execSegment is the executions n ≡ o (mod O), n < N, of org o, in
// partition pk; ns, when not nil, lists the executions instead.
type execSegment struct {
	w  *scaleWorld
	o  int
	pk string
	ns []int
}

func (s execSegment) Len() int {
	if s.ns != nil {
		return len(s.ns)
	}
	return residueCount(s.w.n, scaleOrgs, s.o)
}
func (s execSegment) exec(i int) int {
	if s.ns != nil {
		return s.ns[i]
	}
	return i*scaleOrgs + s.o
}
func (s execSegment) Key(i int) (string, string) { return s.pk, s.w.execRowKey(s.exec(i)) }

// Row is the row as the table holds it now: as the application wrote it
// again, if it did (a repetition, ns, it never writes).
func (s execSegment) Row(i int) transform.Row {
	n := s.exec(i)
	row := s.w.execRow(n, s.pk)
	if at, ok := s.w.changedAt(n); ok && s.ns == nil {
		row.Props["Status"] = transform.String("Cancelled")
		row.Timestamp = at
	}
	return row
}

func (s execSegment) Stamp(i int) time.Time {
	if at, ok := s.w.changedAt(s.exec(i)); ok && s.ns == nil {
		return at
	}
	return s.w.stamp
}

// residueCount is how many n < N are ≡ r (mod m).
func residueCount(n, m, r int) int {
	if r >= n {
		return 0
	}
	return (n - r + m - 1) / m
}

// indexGroup is one group of index rows: "{prefix}{key}:{executionId}"
// for the executions whose n mod m is in residues (sorted), in order of n.
type indexGroup struct {
	key      string
	residues []int
	count    int
}

// indexSegment is an index kind's rows in Relationships (GLOBAL): its
// groups in key order.
type indexSegment struct {
	w      *scaleWorld
	prefix string
	m      int
	groups []indexGroup
	starts []int // position of each group's first row
	total  int
	props  func(n int) map[string]transform.Value
}

// newIndexSegment groups the residues modulo m by key(r).
func newIndexSegment(w *scaleWorld, prefix string, m int, key func(r int) string, props func(n int) map[string]transform.Value) *indexSegment {
	byKey := map[string][]int{}
	for r := range m {
		k := key(r)
		byKey[k] = append(byKey[k], r)
	}
	s := &indexSegment{w: w, prefix: prefix, m: m, props: props}
	keys := slices.Collect(mapKeys(byKey))
	// In the order of the rows' keys: "{key}:…".
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(a+":", b+":") })
	for _, k := range keys {
		g := indexGroup{key: k, residues: byKey[k]}
		for _, r := range g.residues {
			g.count += residueCount(w.n, m, r)
		}
		if g.count == 0 {
			continue
		}
		s.starts = append(s.starts, s.total)
		s.total += g.count
		s.groups = append(s.groups, g)
	}
	return s
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (s *indexSegment) Len() int { return s.total }
func (s *indexSegment) at(i int) (g *indexGroup, n int) {
	gi := sort.Search(len(s.starts), func(j int) bool { return s.starts[j] > i }) - 1
	g = &s.groups[gi]
	k := i - s.starts[gi]
	return g, (k/len(g.residues))*s.m + g.residues[k%len(g.residues)]
}
func (s *indexSegment) Key(i int) (string, string) {
	g, n := s.at(i)
	return "GLOBAL", s.prefix + g.key + ":" + execID(n)
}
func (s *indexSegment) Row(i int) transform.Row {
	g, n := s.at(i)
	return transform.Row{Table: "Relationships", PartitionKey: "GLOBAL", RowKey: s.prefix + g.key + ":" + execID(n), Timestamp: s.Stamp(i), Props: s.props(n)}
}

// Stamp is row i's Timestamp: an execution's status index row is
// written again with it.
func (s *indexSegment) Stamp(i int) time.Time {
	if s.prefix == "status:" {
		_, n := s.at(i)
		if at, ok := s.w.changedAt(n); ok {
			return at
		}
	}
	return s.w.stamp
}

// ---- tables

func (w *scaleWorld) configSegments() []scaleSegment {
	row := func(rk string, props map[string]transform.Value) transform.Row {
		return transform.Row{PartitionKey: "GLOBAL", RowKey: rk, Timestamp: w.stamp, Props: props}
	}
	s := transform.String
	return []scaleSegment{newFixedRows("Config",
		row("config:default_timeout", map[string]transform.Value{"Value": s("300"), "Type": s("int"), "Description": s("seconds")}),
		row("config:enable_audit", map[string]transform.Value{"Value": s("true"), "Type": s("bool")}),
		row("config:branding_json", map[string]transform.Value{"Value": s(`{"theme": "dark", "accent": "#0078d4"}`), "Type": s("json")}),
		row("config:smtp_password", map[string]transform.Value{"Value": s("kv-smtp-password"), "Type": s("secret_ref")}),
		row("config:support_email", map[string]transform.Value{"Value": s("help@msp.example"), "Type": s("string")}),
		row("integration:halopsa", map[string]transform.Value{"Type": s("psa"), "Enabled": {Type: transform.EdmBoolean, Bool: true}, "Settings": s(`{"url": "https://halo.example"}`)}),
		row("jobstatus:token_refresh", map[string]transform.Value{"Status": s("completed"), "StartTime": s("2026-11-19T23:00:00"), "EndTime": s("2026-11-19T23:00:04.5")}),
	)}
}

func (w *scaleWorld) entitySegments() []scaleSegment {
	row := func(pk, rk string, props map[string]transform.Value) transform.Row {
		return transform.Row{PartitionKey: pk, RowKey: rk, Timestamp: w.stamp, Props: props}
	}
	s := transform.String
	var global []transform.Row
	for o, pk := range w.orgs {
		global = append(global, row("GLOBAL", "org:"+pk, map[string]transform.Value{"Name": s(fmt.Sprintf("Tenant %02d", o)), "Domain": s(fmt.Sprintf("tenant%02d.example", o)), "IsActive": {Type: transform.EdmBoolean, Bool: true}, "CreatedAt": s("2025-01-02T03:04:05")}))
	}
	global = append(global, row("GLOBAL", "user:admin@msp.example", map[string]transform.Value{"Email": s("admin@msp.example"), "DisplayName": s("Admin"), "UserType": s("PLATFORM"), "IsPlatformAdmin": {Type: transform.EdmBoolean, Bool: true}}))
	type part struct {
		pk   string
		segs []scaleSegment
	}
	parts := []part{{"GLOBAL", []scaleSegment{newFixedRows("Entities", global...)}}}
	for o, pk := range w.orgs {
		var small []transform.Row
		for _, u := range w.users[o] {
			small = append(small, row(pk, "user:"+u.email, map[string]transform.Value{"Email": s(u.email), "DisplayName": s(u.name), "UserType": s("ORG"), "IsActive": {Type: transform.EdmBoolean, Bool: true}}))
		}
		for i, f := range w.forms[o] {
			small = append(small, row(pk, "form:"+f, map[string]transform.Value{"Name": s(fmt.Sprintf("Form %d", i)), "FormSchema": s(`{"fields": [{"name": "userPrincipalName", "type": "text"}]}`), "IsActive": {Type: transform.EdmBoolean, Bool: true}}))
		}
		small = append(small, row(pk, "role:"+execID(1<<30+o), map[string]transform.Value{"Name": s("Helpdesk"), "IsActive": {Type: transform.EdmBoolean, Bool: true}}))
		parts = append(parts, part{pk, []scaleSegment{execSegment{w: w, o: o, pk: pk}, newFixedRows("Entities", small...)}})
	}
	if len(w.dups) > 0 {
		parts = append(parts, part{"org-" + w.orgs[0], []scaleSegment{execSegment{w: w, o: 0, pk: "org-" + w.orgs[0], ns: w.dups}}})
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].pk < parts[j].pk })
	var segs []scaleSegment
	for _, p := range parts {
		segs = append(segs, p.segs...)
	}
	return segs
}

func (w *scaleWorld) relationshipSegments() []scaleSegment {
	s := transform.String
	started := func(n int) transform.Value { return s(scaleIso(w.started(n))) }
	const o = scaleOrgs
	segs := []scaleSegment{
		newIndexSegment(w, "formexec:", o*scaleUsersPerOrg*scaleFormsPerOrg, func(r int) string { return w.form(r) },
			func(n int) map[string]transform.Value {
				return map[string]transform.Value{"ExecutionId": s(execID(n)), "StartedAt": started(n)}
			}),
		newIndexSegment(w, "status:", scaleStatusPattern, func(r int) string { return w.status(r) },
			func(n int) map[string]transform.Value { return map[string]transform.Value{"ExecutionId": s(execID(n))} }),
		newIndexSegment(w, "userexec:", o*scaleUsersPerOrg, func(r int) string { return w.user(r).email },
			func(n int) map[string]transform.Value {
				return map[string]transform.Value{"ExecutionId": s(execID(n)), "WorkflowName": s(w.workflow(n)), "StartedAt": started(n)}
			}),
		newIndexSegment(w, "workflowexec:", o*scaleWorkflowSkip*len(scaleWorkflows), func(r int) string { return w.workflow(r) + ":" + w.orgs[w.org(r)] },
			func(n int) map[string]transform.Value {
				return map[string]transform.Value{"ExecutionId": s(execID(n)), "StartedAt": started(n)}
			}),
	}
	var small []transform.Row
	for _, id := range w.dangling {
		// After every form's group: "f…" is the highest form id.
		small = append(small, transform.Row{PartitionKey: "GLOBAL", RowKey: "formexec:ffffffff-ffff-4fff-bfff-ffffffffffff:" + id, Timestamp: w.stamp, Props: map[string]transform.Value{"ExecutionId": s(id)}})
	}
	for o, pk := range w.orgs {
		for _, u := range w.users[o] {
			small = append(small, transform.Row{PartitionKey: "GLOBAL", RowKey: "userperm:" + u.email + ":" + pk, Timestamp: w.stamp, Props: map[string]transform.Value{"GrantedBy": s("admin@msp.example")}})
		}
	}
	segs = append(segs, newFixedRows("Relationships", small...))
	// Put the segments in key order: the fixed rows fall between the
	// index kinds; split them at each index segment's first key.
	return orderSegments(segs)
}

// orderSegments merges index segments and one segment of fixed rows
// (the last) into key order: the fixed rows are cut around the index
// segments, which must not interleave with each other.
func orderSegments(segs []scaleSegment) []scaleSegment {
	fixed := segs[len(segs)-1].(fixedRows)
	idx := segs[:len(segs)-1]
	first := func(s scaleSegment) string { _, rk := s.Key(0); return rk }
	last := func(s scaleSegment) string { _, rk := s.Key(s.Len() - 1); return rk }
	idx = slices.DeleteFunc(slices.Clone(idx), func(s scaleSegment) bool { return s.Len() == 0 })
	sort.Slice(idx, func(i, j int) bool { return first(idx[i]) < first(idx[j]) })
	var out []scaleSegment
	f := 0
	for _, s := range idx {
		lo := f
		for f < len(fixed) && fixed[f].RowKey < first(s) {
			f++
		}
		if f > lo {
			out = append(out, fixed[lo:f])
		}
		out = append(out, s)
		if f < len(fixed) && fixed[f].RowKey < last(s) {
			panic("fixed row " + fixed[f].RowKey + " falls inside an index segment")
		}
	}
	if f < len(fixed) {
		out = append(out, fixed[f:])
	}
	return out
}

// scaleTable is a table: its segments and where each starts.
type scaleTable struct {
	segs   []scaleSegment
	starts []int
	total  int
}

func newScaleTable(segs []scaleSegment) *scaleTable {
	t := &scaleTable{}
	for _, s := range segs {
		if s.Len() == 0 {
			continue
		}
		t.segs = append(t.segs, s)
		t.starts = append(t.starts, t.total)
		t.total += s.Len()
	}
	return t
}

func (t *scaleTable) seg(p int) (scaleSegment, int) {
	i := sort.Search(len(t.starts), func(j int) bool { return t.starts[j] > p }) - 1
	return t.segs[i], p - t.starts[i]
}

// Key is the keys of the row at position p (0 ≤ p < total).
func (t *scaleTable) Key(p int) (string, string) {
	s, i := t.seg(p)
	return s.Key(i)
}

// Row is the row at position p.
func (t *scaleTable) Row(p int) transform.Row {
	s, i := t.seg(p)
	return s.Row(i)
}

// Stamp is the Timestamp of the row at position p.
func (t *scaleTable) Stamp(p int) time.Time {
	s, i := t.seg(p)
	return s.Stamp(i)
}

// Seek is the position of the first row whose keys are ≥ (pk, rk)
// (total when none).
func (t *scaleTable) Seek(pk, rk string) int {
	return sort.Search(t.total, func(p int) bool {
		kp, kr := t.Key(p)
		return transform.CompareKeys(kp, kr, pk, rk) >= 0
	})
}
