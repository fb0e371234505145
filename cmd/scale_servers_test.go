package cmd_test

import (
	"bytes"
	"crypto/md5" //nolint:gosec // Content-MD5 is what Blob Storage checks
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bifrost/bifrost-migrate/transform"
)

// The services of the scale benchmark, in the test process: a Table
// service that serves a scaleWorld's rows as the service answers queries
// (pages of at most 1,000 rows that never cross a partition, opaque
// continuations, $filter on the keys and Timestamp, $select, point
// reads), and a Cosmos DB and a Blob service that accept the writes of
// run, check each body and keep a digest per doc and blob. The Table
// service evaluates a filter as the service does, over every row of the
// key range it bounds (Table Storage has no index on Timestamp): the
// scan of a Timestamp filter computes the keys and Timestamp of every
// row of the range, and counts them (rowsScanned). The Cosmos DB service
// also serves what verify reads (scaleDocs): the docs run writes for the
// world, computed from its rows as they are asked for — the query of a
// container page by page, point reads, the count and the ids of a
// scope's docs, the partition key ranges and the change feed — so that
// verify can be measured at any size without writing first, and takes
// replay's creates and conditional replaces, served afterwards in all of
// those. The tool reaches them through its real adapters over plain HTTP
// on loopback.

const scaleAccount = "bench"

// scaleKey is a key that stands for the real account key: the servers
// check no signature.
var scaleKey = base64.StdEncoding.EncodeToString([]byte("scale-benchmark-account-key-0123456789"))

// scaleServers are the three services over one world.
type scaleServers struct {
	w      *scaleWorld
	tables *httptest.Server
	cosmos *httptest.Server
	blobs  *httptest.Server
	sink   *cosmosSink
	store  *blobSink
	docs   *scaleDocs

	mu         sync.Mutex
	unexpected []string // requests none of the services knows
	pages      atomic.Int64
	rowsServed atomic.Int64
	// rowsScanned are the rows the Table service read to answer queries:
	// every row of the key range a filter selects from, as the service
	// reads them for a Timestamp filter (it has no index on Timestamp).
	rowsScanned atomic.Int64
}

func newScaleServers(w *scaleWorld) *scaleServers {
	s := &scaleServers{w: w, sink: newCosmosSink(w), store: newBlobSink(w), docs: newScaleDocs(w)}
	s.tables = httptest.NewServer(http.HandlerFunc(s.serveTables))
	s.cosmos = httptest.NewServer(http.HandlerFunc(s.serveCosmos))
	s.blobs = httptest.NewServer(http.HandlerFunc(s.serveBlobs))
	return s
}

func (s *scaleServers) Close() {
	s.tables.Close()
	s.cosmos.Close()
	s.blobs.Close()
}

// env is the tool's environment for these services.
func (s *scaleServers) env() map[string]string {
	return map[string]string{
		"BIFROST_TABLES_CONNECTION": fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;TableEndpoint=%s/%s;BlobEndpoint=%s/%s;",
			scaleAccount, scaleKey, s.tables.URL, scaleAccount, s.blobs.URL, scaleAccount),
		"CosmosDBConnection": fmt.Sprintf("AccountEndpoint=%s/;AccountKey=%s;", s.cosmos.URL, scaleKey),
	}
}

func (s *scaleServers) odd(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unexpected) < 20 {
		s.unexpected = append(s.unexpected, r.Method+" "+r.URL.String())
	}
}

// Unexpected returns the requests no service knew.
func (s *scaleServers) Unexpected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unexpected)
}

// ---- Table service

// scaleQueryTime is how long the Table service works on one query
// request at most before it answers with what it found and a
// continuation (possibly no rows), as the service does.
const scaleQueryTime = 5 * time.Second

// scaleScanRow is the time the Table service takes to read one row of a
// range for a filter its index cannot answer (Timestamp), on its own
// machines: requests for different ranges are served at the same time,
// as a real account serves them. The scan of such a filter costs the
// tool nothing but the wait; modelled as this wait (changedPage) when
// only rows the application wrote again match, as in the write-stop
// window, it leaves the tool's own work alone on this machine's cores.
const scaleScanRow = time.Microsecond

func tableError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	w.Header().Set("x-ms-error-code", code)
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"odata.error":{"code":%q,"message":{"lang":"en-US","value":%q}}}`, code, msg)
}

func (s *scaleServers) serveTables(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+scaleAccount+"/")
	if !ok || r.Method != http.MethodGet {
		s.odd(r)
		tableError(w, http.StatusBadRequest, "InvalidInput", "unexpected request")
		return
	}
	name, args, ok := strings.Cut(rest, "(")
	if !ok || !strings.HasSuffix(args, ")") {
		s.odd(r)
		tableError(w, http.StatusBadRequest, "InvalidInput", "unexpected request")
		return
	}
	args = strings.TrimSuffix(args, ")")
	t := s.w.tables[name]
	if t == nil {
		tableError(w, http.StatusNotFound, "TableNotFound", "The table specified does not exist.")
		return
	}
	q := r.URL.Query()
	sel := q.Get("$select")
	w.Header().Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	w.Header().Set("x-ms-version", "2019-02-02")
	if args != "" {
		pk, rk, err := parseEntityKeys(args)
		if err != nil {
			tableError(w, http.StatusBadRequest, "InvalidInput", err.Error())
			return
		}
		p := t.Seek(pk, rk)
		if p == t.total {
			tableError(w, http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
			return
		}
		if kp, kr := t.Key(p); kp != pk || kr != rk {
			tableError(w, http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
			return
		}
		b := []byte(`{"odata.metadata":"` + s.tables.URL + "/" + scaleAccount + "/$metadata#" + name + `/@Element",`)
		b = append(b, s.entity(t.Row(p), sel)[1:]...)
		_, _ = w.Write(b)
		return
	}
	f, err := parseFilter(q.Get("$filter"))
	if err != nil {
		tableError(w, http.StatusBadRequest, "InvalidInput", err.Error())
		return
	}
	top := 1000
	if v := q.Get("$top"); v != "" {
		if top, err = strconv.Atoi(v); err != nil || top < 1 || top > 1000 {
			tableError(w, http.StatusBadRequest, "InvalidInput", "bad $top")
			return
		}
	}
	lo, hi := f.bounds()
	start, end := 0, t.total
	if lo != nil {
		start = t.Seek(lo.pk, lo.rk)
	}
	if hi != nil {
		end = t.Seek(hi.pk, hi.rk)
	}
	if npk := q.Get("NextPartitionKey"); npk != "" {
		pk, err1 := decodeContinuation(npk)
		rk, err2 := decodeContinuation(q.Get("NextRowKey"))
		if err1 != nil || err2 != nil {
			tableError(w, http.StatusBadRequest, "InvalidInput", "bad continuation")
			return
		}
		start = max(start, t.Seek(pk, rk))
	}
	var buf bytes.Buffer
	buf.WriteString(`{"odata.metadata":"` + s.tables.URL + "/" + scaleAccount + "/$metadata#" + name + `","value":[`)
	n := 0
	emit := func(p int) {
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(s.entity(t.Row(p), sel))
		n++
	}
	var p int
	if ch := s.w.changes.Load(); ch != nil && f.after().After(s.w.stamp) {
		// Only the rows written again match: find them by their
		// positions, and take the time the service takes to read every
		// row of the range.
		p = s.changedPage(t, ch.rows[name], f, start, end, top, emit)
		select {
		case <-time.After(time.Duration(p-start) * scaleScanRow):
		case <-r.Context().Done():
			return
		}
	} else {
		p = s.scanPage(t, f, start, end, top, emit)
	}
	buf.WriteString("]}")
	if p < end {
		pk, rk := t.Key(p)
		w.Header().Set("x-ms-continuation-NextPartitionKey", encodeContinuation(pk))
		w.Header().Set("x-ms-continuation-NextRowKey", encodeContinuation(rk))
	}
	s.pages.Add(1)
	s.rowsServed.Add(int64(n))
	s.rowsScanned.Add(int64(p - start))
	_, _ = w.Write(buf.Bytes())
}

// scanPage reads the rows of t from start, before end, as the service
// answers one request: every row evaluated, those the filter selects
// passed to emit, at most top of them, never across a partition, for at
// most scaleQueryTime. It returns where the next request starts.
func (s *scaleServers) scanPage(t *scaleTable, f *filterNode, start, end, top int, emit func(p int)) int {
	n, p := 0, start
	var partition string
	began := time.Now()
	for ; p < end && n < top; p++ {
		pk, rk := t.Key(p)
		if p == start {
			partition = pk
		} else if pk != partition {
			break // a page never crosses a partition
		}
		if (p-start)%4096 == 4095 && time.Since(began) > scaleQueryTime {
			break // at most 5 seconds of work a request, as the service
		}
		if !f.eval(pk, rk, t.Stamp(p)) {
			continue
		}
		emit(p)
		n++
	}
	return p
}

// changedPage is scanPage for a filter that selects no row the
// application did not write again (a Timestamp after the world's stamp):
// it evaluates only changed, the positions of those rows, and returns
// where the service's scan of the page ends — past every row it read, up
// to the partition's end, the range's end, the top-th match or what the
// service reads in scaleQueryTime — without reading the others.
func (s *scaleServers) changedPage(t *scaleTable, changed []int, f *filterNode, start, end, top int, emit func(p int)) int {
	if start >= end {
		return start
	}
	pk, _ := t.Key(start)
	limit := min(end, t.Seek(pk+"\x00", ""), start+int(scaleQueryTime/scaleScanRow))
	n := 0
	for _, c := range changed[sort.SearchInts(changed, start):] {
		if c >= limit {
			break
		}
		if kp, kr := t.Key(c); f.eval(kp, kr, t.Stamp(c)) {
			emit(c)
			if n++; n == top {
				return c + 1
			}
		}
	}
	return limit
}

// entity is the row in the service's JSON with minimal metadata, only the
// properties of sel (a $select) when it is not empty.
func (s *scaleServers) entity(row transform.Row, sel string) []byte {
	stamp := row.Timestamp.UTC().Format("2006-01-02T15:04:05.0000000Z")
	withStamp := true
	if sel != "" {
		want := map[string]bool{}
		for _, p := range strings.Split(sel, ",") {
			want[strings.TrimSpace(p)] = true
		}
		props := map[string]transform.Value{}
		for k, v := range row.Props {
			if want[k] {
				props[k] = v
			}
		}
		row.Props = props
		withStamp = want["Timestamp"]
	}
	b := []byte(`{"odata.etag":"W/\"datetime'` + url.QueryEscape(stamp) + `'\"",`)
	if withStamp {
		b = append(b, `"Timestamp@odata.type":"Edm.DateTime","Timestamp":"`+stamp+`",`...)
	}
	return append(b, transform.EncodeEntity(row)[1:]...)
}

// Continuations are opaque to clients, as the service's are.
func encodeContinuation(k string) string {
	return "1!" + strconv.Itoa(len(k)) + "!" + base64.RawURLEncoding.EncodeToString([]byte(k))
}

func decodeContinuation(s string) (string, error) {
	parts := strings.SplitN(s, "!", 3)
	if len(parts) != 3 || parts[0] != "1" {
		return "", errors.New("bad continuation")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || strconv.Itoa(len(b)) != parts[1] {
		return "", errors.New("bad continuation")
	}
	return string(b), nil
}

// parseEntityKeys reads "PartitionKey='a',RowKey='b'" (path-unescaped).
func parseEntityKeys(args string) (pk, rk string, err error) {
	lx := &filterLexer{s: args}
	var keys [2]string
	for i, name := range []string{"PartitionKey", "RowKey"} {
		if i > 0 && !lx.accept(",") {
			return "", "", errors.New("bad entity keys")
		}
		if tok := lx.word(); tok != name || !lx.accept("=") {
			return "", "", errors.New("bad entity keys")
		}
		v, ok := lx.quoted()
		if !ok {
			return "", "", errors.New("bad entity keys")
		}
		keys[i] = v
	}
	if lx.rest() != "" {
		return "", "", errors.New("bad entity keys")
	}
	return keys[0], keys[1], nil
}

// ---- $filter: the OData subset Table queries use on keys and Timestamp:
// comparisons (eq ne gt ge lt le) of PartitionKey, RowKey or Timestamp
// with a string or datetime literal, and, or, not, parentheses.

type filterNode struct {
	op         string // "and", "or", "not", "cmp", "true"
	l, r       *filterNode
	field, cmp string
	str        string
	t          time.Time
}

type filterKey struct{ pk, rk string }

func parseFilter(s string) (*filterNode, error) {
	if strings.TrimSpace(s) == "" {
		return &filterNode{op: "true"}, nil
	}
	lx := &filterLexer{s: s}
	n, err := lx.or()
	if err != nil {
		return nil, err
	}
	if lx.rest() != "" {
		return nil, fmt.Errorf("filter: unexpected %q", lx.rest())
	}
	return n, nil
}

type filterLexer struct {
	s string
	i int
}

func (lx *filterLexer) skip() {
	for lx.i < len(lx.s) && lx.s[lx.i] == ' ' {
		lx.i++
	}
}
func (lx *filterLexer) rest() string { lx.skip(); return lx.s[lx.i:] }
func (lx *filterLexer) accept(tok string) bool {
	lx.skip()
	if strings.HasPrefix(lx.s[lx.i:], tok) {
		lx.i += len(tok)
		return true
	}
	return false
}
func (lx *filterLexer) word() string {
	lx.skip()
	j := lx.i
	for j < len(lx.s) && (unicode.IsLetter(rune(lx.s[j])) || unicode.IsDigit(rune(lx.s[j]))) {
		j++
	}
	w := lx.s[lx.i:j]
	lx.i = j
	return w
}
func (lx *filterLexer) peekWord() string {
	i := lx.i
	w := lx.word()
	lx.i = i
	return w
}

// quoted reads a '…' literal with ” for a quote.
func (lx *filterLexer) quoted() (string, bool) {
	lx.skip()
	if lx.i >= len(lx.s) || lx.s[lx.i] != '\'' {
		return "", false
	}
	var b strings.Builder
	for j := lx.i + 1; j < len(lx.s); j++ {
		if lx.s[j] != '\'' {
			b.WriteByte(lx.s[j])
			continue
		}
		if j+1 < len(lx.s) && lx.s[j+1] == '\'' {
			b.WriteByte('\'')
			j++
			continue
		}
		lx.i = j + 1
		return b.String(), true
	}
	return "", false
}

func (lx *filterLexer) or() (*filterNode, error) {
	l, err := lx.and()
	for err == nil && lx.peekWord() == "or" {
		lx.word()
		var r *filterNode
		if r, err = lx.and(); err == nil {
			l = &filterNode{op: "or", l: l, r: r}
		}
	}
	return l, err
}

func (lx *filterLexer) and() (*filterNode, error) {
	l, err := lx.unary()
	for err == nil && lx.peekWord() == "and" {
		lx.word()
		var r *filterNode
		if r, err = lx.unary(); err == nil {
			l = &filterNode{op: "and", l: l, r: r}
		}
	}
	return l, err
}

func (lx *filterLexer) unary() (*filterNode, error) {
	if lx.peekWord() == "not" {
		lx.word()
		n, err := lx.unary()
		return &filterNode{op: "not", l: n}, err
	}
	if lx.accept("(") {
		n, err := lx.or()
		if err == nil && !lx.accept(")") {
			err = errors.New("filter: missing )")
		}
		return n, err
	}
	field := lx.word()
	if field != "PartitionKey" && field != "RowKey" && field != "Timestamp" {
		return nil, fmt.Errorf("filter: unknown property %q", field)
	}
	cmp := lx.word()
	switch cmp {
	case "eq", "ne", "gt", "ge", "lt", "le":
	default:
		return nil, fmt.Errorf("filter: unknown operator %q", cmp)
	}
	n := &filterNode{op: "cmp", field: field, cmp: cmp}
	if field == "Timestamp" {
		if lx.word() != "datetime" {
			return nil, errors.New("filter: Timestamp needs a datetime literal")
		}
		v, ok := lx.quoted()
		t, err := time.Parse(time.RFC3339Nano, v)
		if !ok || err != nil {
			return nil, fmt.Errorf("filter: bad datetime %q", v)
		}
		n.t = t
		return n, nil
	}
	v, ok := lx.quoted()
	if !ok {
		return nil, errors.New("filter: expected a string literal")
	}
	n.str = v
	return n, nil
}

func compareOp(c int, op string) bool {
	switch op {
	case "eq":
		return c == 0
	case "ne":
		return c != 0
	case "gt":
		return c > 0
	case "ge":
		return c >= 0
	case "lt":
		return c < 0
	}
	return c <= 0
}

// after is the latest time a top-level "and" term of the filter says
// every row it selects has a Timestamp at or after (ge, gt): zero when
// none does.
func (n *filterNode) after() time.Time {
	switch {
	case n.op == "and":
		return later(n.l.after(), n.r.after())
	case n.op == "cmp" && n.field == "Timestamp" && (n.cmp == "ge" || n.cmp == "gt"):
		return n.t
	}
	return time.Time{}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (n *filterNode) eval(pk, rk string, ts time.Time) bool {
	switch n.op {
	case "true":
		return true
	case "and":
		return n.l.eval(pk, rk, ts) && n.r.eval(pk, rk, ts)
	case "or":
		return n.l.eval(pk, rk, ts) || n.r.eval(pk, rk, ts)
	case "not":
		return !n.l.eval(pk, rk, ts)
	}
	switch n.field {
	case "PartitionKey":
		return compareOp(strings.Compare(pk, n.str), n.cmp)
	case "RowKey":
		return compareOp(strings.Compare(rk, n.str), n.cmp)
	}
	return compareOp(ts.Compare(n.t), n.cmp)
}

// bounds are the keys the rows the filter selects lie within, as far as
// its top-level "and" terms say (nil: unbounded): lo inclusive, hi
// exclusive. Every row between is still judged by eval; the bounds only
// spare the scan the rows that cannot match.
func (n *filterNode) bounds() (lo, hi *filterKey) {
	var terms []*filterNode
	var flatten func(*filterNode)
	flatten = func(n *filterNode) {
		if n.op == "and" {
			flatten(n.l)
			flatten(n.r)
			return
		}
		terms = append(terms, n)
	}
	flatten(n)
	raise := func(k filterKey) {
		if lo == nil || transform.CompareKeys(k.pk, k.rk, lo.pk, lo.rk) > 0 {
			lo = &k
		}
	}
	lower := func(k filterKey) {
		if hi == nil || transform.CompareKeys(k.pk, k.rk, hi.pk, hi.rk) < 0 {
			hi = &k
		}
	}
	isCmp := func(n *filterNode, field string, ops ...string) bool {
		return n != nil && n.op == "cmp" && n.field == field && slices.Contains(ops, n.cmp)
	}
	pkEq := ""
	for _, t := range terms {
		if isCmp(t, "PartitionKey", "eq") {
			pkEq = t.str
		}
	}
	for _, t := range terms {
		switch {
		case isCmp(t, "PartitionKey", "ge", "gt", "eq"):
			raise(filterKey{t.str, ""})
			if t.cmp == "eq" {
				lower(filterKey{t.str + "\x00", ""})
			}
		case isCmp(t, "PartitionKey", "lt"):
			lower(filterKey{t.str, ""})
		case isCmp(t, "PartitionKey", "le"):
			lower(filterKey{t.str + "\x00", ""})
		case pkEq != "" && isCmp(t, "RowKey", "ge", "gt", "eq"):
			raise(filterKey{pkEq, t.str})
			if t.cmp == "eq" {
				lower(filterKey{pkEq, t.str + "\x00"})
			}
		case pkEq != "" && isCmp(t, "RowKey", "lt"):
			lower(filterKey{pkEq, t.str})
		case pkEq != "" && isCmp(t, "RowKey", "le"):
			lower(filterKey{pkEq, t.str + "\x00"})
		case t.op == "or" && isCmp(t.l, "PartitionKey", "gt") && t.r.op == "and" &&
			isCmp(t.r.l, "PartitionKey", "eq") && t.r.l.str == t.l.str && isCmp(t.r.r, "RowKey", "ge", "gt"):
			// (PartitionKey gt p or (PartitionKey eq p and RowKey ge r))
			raise(filterKey{t.l.str, t.r.r.str})
		case t.op == "or" && isCmp(t.l, "PartitionKey", "lt") && t.r.op == "and" &&
			isCmp(t.r.l, "PartitionKey", "eq") && t.r.l.str == t.l.str && isCmp(t.r.r, "RowKey", "lt", "le"):
			rk := t.r.r.str
			if t.r.r.cmp == "le" {
				rk += "\x00"
			}
			lower(filterKey{t.l.str, rk})
		}
	}
	return lo, hi
}

// ---- Cosmos DB

// cosmosSink accepts upserts (run's writes): each body must be one JSON object whose id
// and scope are strings, the scope the request's partition key; it keeps
// a digest of each doc (the first 8 bytes of its SHA-256) and how many
// times it was written. Executions are kept by their n, other docs by
// container and id.
type cosmosSink struct {
	w       *scaleWorld
	execs   []atomic.Uint64 // digest of execution n's doc (0: none)
	writes  []atomic.Uint32
	mu      sync.Mutex
	others  map[string]uint64
	bad     []string
	upserts atomic.Int64
	bytes   atomic.Int64
}

func newCosmosSink(w *scaleWorld) *cosmosSink {
	return &cosmosSink{w: w, execs: make([]atomic.Uint64, w.n), writes: make([]atomic.Uint32, w.n), others: map[string]uint64{}}
}

func digest(b []byte) uint64 {
	sum := sha256.Sum256(b)
	return binary.LittleEndian.Uint64(sum[:8]) | 1 // never 0
}

func (c *cosmosSink) refuse(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.mu.Lock()
	if len(c.bad) < 20 {
		c.bad = append(c.bad, msg)
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-ms-request-charge", "1")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"code":"BadRequest","message":%q}`, msg)
}

// Bad returns what the sink refused.
func (c *cosmosSink) Bad() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.bad)
}

// topMembers checks that body is one JSON value, an object, and returns
// its top-level string members id and scope.
func topMembers(body []byte) (id, scope string, err error) {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return "", "", errors.New("not a JSON object")
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return "", "", err
		}
		switch name := tok.String(); name {
		case "id", "scope":
			v, err := dec.ReadToken()
			if err != nil || v.Kind() != '"' {
				return "", "", fmt.Errorf("%s is not a string", name)
			}
			if name == "id" {
				id = v.String()
			} else {
				scope = v.String()
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return "", "", err
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return "", "", err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return "", "", errors.New("more after the object")
	}
	return id, scope, nil
}

func (c *cosmosSink) upsert(w http.ResponseWriter, r *http.Request, container string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	id, scope, err := topMembers(body)
	if err != nil || id == "" {
		c.refuse(w, http.StatusBadRequest, "doc: %v", err)
		return
	}
	if pk := r.Header.Get("x-ms-documentdb-partitionkey"); pk != scaleJSON([]string{scope}) {
		c.refuse(w, http.StatusBadRequest, "doc %s: partition key %s, scope %q", id, pk, scope)
		return
	}
	d := digest(body)
	if container == transform.ContainerExecutions {
		n := execOfID(id)
		if n < 0 || n >= c.w.n {
			c.refuse(w, http.StatusBadRequest, "execution doc %q of no execution", id)
			return
		}
		c.execs[n].Store(d)
		c.writes[n].Add(1)
	} else {
		c.mu.Lock()
		c.others[container+"/"+id] = d
		c.mu.Unlock()
	}
	c.upserts.Add(1)
	c.bytes.Add(int64(len(body)))
	// What the service charges a 1 KB write of an indexed doc, per KB.
	charge := 5.71 * float64((len(body)+1023)/1024)
	h := w.Header()
	h.Set("x-ms-request-charge", strconv.FormatFloat(charge, 'f', 2, 64))
	h.Set("etag", `"`+strconv.FormatUint(d, 16)+`"`)
	h.Set("x-ms-session-token", "0:1#1")
	h.Set("x-ms-activity-id", "00000000-0000-0000-0000-000000000000")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
}

func (s *scaleServers) serveCosmos(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	w.Header().Set("x-ms-request-charge", "1")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/":
		u := s.cosmos.URL + "/"
		fmt.Fprintf(w, `{"id":"bench","_rid":"bench","_self":"","writableLocations":[{"name":"Local","databaseAccountEndpoint":%q}],"readableLocations":[{"name":"Local","databaseAccountEndpoint":%q}],"enableMultipleWriteLocations":false,"userConsistencyPolicy":{"defaultConsistencyLevel":"Session"}}`, u, u)
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "dbs":
		fmt.Fprintf(w, `{"id":%q,"_rid":"db","_self":"dbs/db/","_etag":"\"1\"","_ts":1}`, parts[1])
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "dbs" && parts[2] == "colls":
		fmt.Fprintf(w, `{"id":%q,"_rid":"coll","_self":"dbs/db/colls/coll/","_etag":"\"1\"","_ts":1,"partitionKey":{"paths":["/scope"],"kind":"Hash","version":2},"indexingPolicy":{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}}`, parts[3])
	case r.Method == http.MethodPost && len(parts) == 5 && parts[0] == "dbs" && parts[2] == "colls" && parts[4] == "docs" &&
		strings.EqualFold(r.Header.Get("x-ms-documentdb-query"), "true"):
		s.docs.query(w, r, parts[3], s.odd)
	case r.Method == http.MethodPost && len(parts) == 5 && parts[0] == "dbs" && parts[2] == "colls" && parts[4] == "docs" &&
		strings.EqualFold(r.Header.Get("x-ms-documentdb-is-upsert"), "true"):
		s.sink.upsert(w, r, parts[3])
	case r.Method == http.MethodPost && len(parts) == 5 && parts[0] == "dbs" && parts[2] == "colls" && parts[4] == "docs":
		s.docs.put(w, r, parts[3], "", false)
	case r.Method == http.MethodPut && len(parts) == 6 && parts[0] == "dbs" && parts[2] == "colls" && parts[4] == "docs":
		s.docs.put(w, r, parts[3], parts[5], true)
	case r.Method == http.MethodGet && len(parts) == 5 && parts[0] == "dbs" && parts[2] == "colls" && parts[4] == "pkranges":
		s.docs.pkRanges(w, r)
	case r.Method == http.MethodGet && len(parts) == 5 && parts[0] == "dbs" && parts[2] == "colls" && parts[4] == "docs" &&
		strings.EqualFold(r.Header.Get("A-IM"), "Incremental feed"):
		s.docs.changes(w, r, parts[3])
	case r.Method == http.MethodGet && len(parts) == 6 && parts[0] == "dbs" && parts[2] == "colls" && parts[4] == "docs":
		s.docs.read(w, r, parts[3], parts[5])
	default:
		s.odd(r)
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"code":"NotFound","message":"unexpected request"}`)
	}
}

// ---- Blob Storage

// blobSink is container execution-data: the blobs of the world's listing
// and those uploaded (create-only), with their MD5.
type blobSink struct {
	mu    sync.Mutex
	names []string // listed at the start, sorted
	blobs map[string]blobEntry
	puts  int
	bad   []string
}

type blobEntry struct {
	md5  []byte
	size int
}

func newBlobSink(w *scaleWorld) *blobSink {
	b := &blobSink{blobs: map[string]blobEntry{}}
	for n := 7; n < w.n; n += 1000 {
		for name, data := range w.blobsOf(n) {
			sum := md5.Sum([]byte(data)) //nolint:gosec // see import
			b.blobs[name] = blobEntry{sum[:], len(data)}
			b.names = append(b.names, name)
		}
	}
	slices.Sort(b.names)
	return b
}

// Uploaded returns the MD5 of the blob name, if it was uploaded or listed.
func (b *blobSink) Blob(name string) (blobEntry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.blobs[name]
	return e, ok
}

func blobError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("x-ms-error-code", code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, code)
}

func (s *scaleServers) serveBlobs(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+scaleAccount+"/execution-data")
	if !ok {
		s.odd(r)
		blobError(w, http.StatusNotFound, "ContainerNotFound")
		return
	}
	b := s.store
	q := r.URL.Query()
	h := w.Header()
	h.Set("x-ms-version", "2025-01-05")
	h.Set("Last-Modified", s.w.stamp.Format(http.TimeFormat))
	h.Set("ETag", `"0x1"`)
	switch {
	case rest == "" && q.Get("restype") == "container" && q.Get("comp") == "list" && r.Method == http.MethodGet:
		b.list(w, s.blobs.URL, q)
	case rest == "" && q.Get("restype") == "container" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(rest, "/") && r.Method == http.MethodPut:
		b.put(w, r, strings.TrimPrefix(rest, "/"))
	case strings.HasPrefix(rest, "/") && r.Method == http.MethodHead:
		e, ok := b.Blob(strings.TrimPrefix(rest, "/"))
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		h.Set("Content-Length", strconv.Itoa(e.size))
		h.Set("Content-MD5", base64.StdEncoding.EncodeToString(e.md5))
		h.Set("x-ms-blob-type", "BlockBlob")
		w.WriteHeader(http.StatusOK)
	default:
		s.odd(r)
		blobError(w, http.StatusBadRequest, "UnsupportedHttpVerb")
	}
}

func (b *blobSink) list(w http.ResponseWriter, endpoint string, q url.Values) {
	maxResults := 5000
	if v, err := strconv.Atoi(q.Get("maxresults")); err == nil && v > 0 {
		maxResults = v
	}
	marker := q.Get("marker")
	b.mu.Lock()
	i, _ := slices.BinarySearch(b.names, marker)
	if marker == "" {
		i = 0
	}
	type props struct {
		Length   int    `xml:"Content-Length"`
		BlobType string `xml:"BlobType"`
	}
	type item struct {
		Name       string `xml:"Name"`
		Properties props  `xml:"Properties"`
	}
	var items []item
	for ; i < len(b.names) && len(items) < maxResults; i++ {
		items = append(items, item{b.names[i], props{b.blobs[b.names[i]].size, "BlockBlob"}})
	}
	next := ""
	if i < len(b.names) {
		next = b.names[i]
	}
	b.mu.Unlock()
	out, err := xml.Marshal(struct {
		XMLName       xml.Name `xml:"EnumerationResults"`
		Endpoint      string   `xml:"ServiceEndpoint,attr"`
		ContainerName string   `xml:"ContainerName,attr"`
		MaxResults    int      `xml:"MaxResults"`
		Blobs         []item   `xml:"Blobs>Blob"`
		NextMarker    string   `xml:"NextMarker"`
	}{Endpoint: endpoint + "/" + scaleAccount + "/", ContainerName: "execution-data", MaxResults: maxResults, Blobs: items, NextMarker: next})
	if err != nil {
		blobError(w, http.StatusInternalServerError, "InternalError")
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(out)
}

func (b *blobSink) put(w http.ResponseWriter, r *http.Request, name string) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	sum := md5.Sum(data) //nolint:gosec // see import
	for _, h := range []string{"Content-MD5", "x-ms-blob-content-md5"} {
		if v := r.Header.Get(h); v != "" && v != base64.StdEncoding.EncodeToString(sum[:]) {
			blobError(w, http.StatusBadRequest, "Md5Mismatch")
			return
		}
	}
	if r.Header.Get("x-ms-blob-type") != "BlockBlob" || r.Header.Get("If-None-Match") != "*" {
		b.mu.Lock()
		b.bad = append(b.bad, name+": not a create-only block blob upload")
		b.mu.Unlock()
		blobError(w, http.StatusBadRequest, "InvalidHeaderValue")
		return
	}
	b.mu.Lock()
	if _, ok := b.blobs[name]; ok {
		b.mu.Unlock()
		blobError(w, http.StatusConflict, "BlobAlreadyExists")
		return
	}
	b.blobs[name] = blobEntry{sum[:], len(data)}
	b.puts++
	b.mu.Unlock()
	w.Header().Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	w.Header().Set("x-ms-request-server-encrypted", "true")
	w.WriteHeader(http.StatusCreated)
}
