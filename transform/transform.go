package transform

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Table names (SPEC §1), in the order rows are read.
const (
	TableConfig        = "Config"
	TableEntities      = "Entities"
	TableRelationships = "Relationships"
)

// Cosmos DB containers (SPEC §4).
const (
	ContainerEntities   = "entities"
	ContainerExecutions = "executions"
)

const (
	// DefaultBlobThreshold is the default of Options.BlobThreshold: an
	// inline result longer than this many bytes moves to a blob (SPEC §8).
	DefaultBlobThreshold = 32768
	// ExecutionRetention is the executions container's defaultTtl, in
	// seconds (14 days).
	ExecutionRetention = 1209600
	// MaxDocBytes is the largest doc written, in bytes of UTF-8 JSON
	// (2 MB); larger docs are dead-lettered (SPEC §10).
	MaxDocBytes = 2 << 20
)

// TTLMode is how an execution doc's ttl is set (--execution-ttl, SPEC §8).
type TTLMode string

// The TTL modes.
const (
	// TTLRemaining sets ttl to what is left of the 14 days since the
	// execution completed (or started); executions with nothing left are
	// expired and not written.
	TTLRemaining TTLMode = "remaining"
	// TTLFull sets ttl to the full 14 days.
	TTLFull TTLMode = "full"
	// TTLNone writes no ttl (the container's defaultTtl applies).
	TTLNone TTLMode = "none"
)

// TTLModes are the ttl modes, in the order the help says them.
func TTLModes() []TTLMode { return []TTLMode{TTLRemaining, TTLFull, TTLNone} }

// Valid reports whether m is one of TTLModes, or "" (TTLRemaining).
func (m TTLMode) Valid() bool { return m == "" || slices.Contains(TTLModes(), m) }

// RelationshipsMode is what happens to non-index relationships
// (--relationships, SPEC §9).
type RelationshipsMode string

// The relationship modes.
const (
	// RelationshipsKeep leaves them in Table Storage (kept-in-tables).
	RelationshipsKeep RelationshipsMode = "keep"
	// RelationshipsMigrate writes each as a doc in entities.
	RelationshipsMigrate RelationshipsMode = "migrate"
)

// RelationshipsModes are the relationship modes, in the order the help
// says them.
func RelationshipsModes() []RelationshipsMode {
	return []RelationshipsMode{RelationshipsKeep, RelationshipsMigrate}
}

// Valid reports whether m is one of RelationshipsModes, or ""
// (RelationshipsKeep).
func (m RelationshipsMode) Valid() bool { return m == "" || slices.Contains(RelationshipsModes(), m) }

// Options are the settings that change what Transform produces.
type Options struct {
	// Now is the current time, used for execution TTLs. Required with
	// TTLRemaining.
	Now time.Time
	// BlobThreshold is the largest inline result size in bytes; 0 means
	// DefaultBlobThreshold.
	BlobThreshold int
	// ExecutionTTL is the ttl mode; "" means TTLRemaining.
	ExecutionTTL TTLMode
	// Relationships is the relationships mode; "" means RelationshipsKeep.
	Relationships RelationshipsMode
	// Strict dead-letters rows of unknown kinds in Config and Entities
	// instead of migrating them as generic docs.
	Strict bool
}

// WithDefaults returns o with its zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.BlobThreshold == 0 {
		o.BlobThreshold = DefaultBlobThreshold
	}
	if o.ExecutionTTL == "" {
		o.ExecutionTTL = TTLRemaining
	}
	if o.Relationships == "" {
		o.Relationships = RelationshipsKeep
	}
	return o
}

// Validate returns an error naming the first invalid option of
// o.WithDefaults(), or nil.
func (o Options) Validate() error {
	o = o.WithDefaults()
	switch {
	case o.BlobThreshold < 0:
		return fmt.Errorf("blob threshold %d is negative", o.BlobThreshold)
	case !o.ExecutionTTL.Valid():
		return fmt.Errorf("execution ttl mode %q is not remaining, full or none", o.ExecutionTTL)
	case !o.Relationships.Valid():
		return fmt.Errorf("relationships mode %q is not keep or migrate", o.Relationships)
	case o.ExecutionTTL == TTLRemaining && o.Now.IsZero():
		return fmt.Errorf("the current time is not set (needed by execution ttl mode remaining)")
	}
	return nil
}

// Fingerprint returns a stable text of the options that change the docs a
// run writes (everything but Now), for checkpoint compatibility checks.
func (o Options) Fingerprint() string {
	o = o.WithDefaults()
	return fmt.Sprintf("blob-threshold=%d;execution-ttl=%s;relationships=%s;strict=%t",
		o.BlobThreshold, o.ExecutionTTL, o.Relationships, o.Strict)
}

// Disposition is where a row ends up (SPEC §5).
type Disposition string

// The dispositions.
const (
	DispositionDoc          Disposition = "doc"
	DispositionDroppedIndex Disposition = "dropped-index"
	DispositionKeptInTables Disposition = "kept-in-tables"
	DispositionExpired      Disposition = "expired"
	DispositionDeadLetter   Disposition = "dead-letter"
)

// Upload is a blob that must exist before the doc that names it is
// written. Uploads are create-only (If-None-Match: *); an existing blob
// with the same MD5 counts as success, a different one is a dead letter.
type Upload struct {
	// Path is the blob's name in container execution-data,
	// "{executionId}/{file}".
	Path string
	// Blob says which of the execution's blobs it is.
	Blob BlobName
	// Data is the exact content.
	Data []byte
	// ContentType is the blob's Content-Type.
	ContentType string
}

// Warning is a data-quality note about a row that still has its
// disposition. Reason is one of the Reason* constants (stable, for
// counting); Detail names the property or kind and never contains a
// property value.
type Warning struct {
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// Warning reasons.
const (
	ReasonInt64Above2p53        = "int64 above 2^53"
	ReasonDoubleNotFinite       = "double NaN or Infinity"
	ReasonUnparseableTimestamp  = "unparseable timestamp"
	ReasonEtagDropped           = "etag property dropped"
	ReasonMissingResultBlob     = "missing result blob"
	ReasonResultIgnored         = "result property ignored"
	ReasonInlineDiffersFromBlob = "inline data differs from existing blob"
	ReasonUnknownKind           = "unknown kind"
	ReasonUnknownConfigType     = "unknown config type"
	ReasonIDEncoded             = "id sanitized"
	ReasonIDTruncated           = "id truncated"
	ReasonPropertyRenamed       = "property renamed"
	ReasonJSONBigInt            = "json integer above 2^53"
	ReasonKeyMismatch           = "key property differs from RowKey"
	ReasonMalformedIndex        = "malformed index row"
	ReasonStartFromRowKey       = "ttl from RowKey start time"
	// ReasonDanglingIndex is not produced by Transform (it needs the
	// Entities table); callers report dropped index rows whose execution
	// does not exist with it.
	ReasonDanglingIndex = "dangling index"
)

// Outcome is what Transform decided for one row.
type Outcome struct {
	Disposition Disposition
	// Table is the source table; Kind the RowKey prefix before the first
	// ':' (the whole RowKey when it has none).
	Table, Kind string
	// Container is "entities" or "executions" for a doc (and for an
	// expired execution, where it would have gone); "" otherwise.
	Container string
	// ID is the doc id after the §10 id rules; RawID the id before them
	// (equal unless the id was sanitized). Scope is the partition key.
	ID, RawID, Scope string
	// Doc is the document, with _migration last; nil unless Disposition
	// is DispositionDoc.
	Doc Doc
	// DocJSON is Doc's JSON bytes, as they are written.
	DocJSON []byte
	// MeaningHash is the hash of Doc by meaning (SPEC §12:
	// MeaningHash(Table, Doc)), which verify compares with the doc read
	// back; TransformMeaning sets it, Transform leaves it "".
	MeaningHash string
	// Uploads are the blobs to create before writing the doc.
	Uploads []Upload
	// Warnings are data-quality notes, in the order found.
	Warnings []Warning
	// DeadLetter is the reason when Disposition is DispositionDeadLetter.
	// It never contains a redacted property's value.
	DeadLetter string
	// Collision is true when the row is a dead letter because an earlier
	// row already has its doc's container, scope and id (IDSet.Check).
	Collision bool
	// IndexExecutionID is the execution id of a dropped index row.
	IndexExecutionID string
}

func (o Outcome) deadLetter(reason string) Outcome {
	o.Disposition = DispositionDeadLetter
	o.DeadLetter = reason
	o.Doc, o.DocJSON, o.Uploads = nil, nil, nil
	return o
}

// Kind returns the kind of a RowKey: the part before the first ':', or the
// whole RowKey when it has none.
func Kind(rowKey string) string {
	if i := strings.IndexByte(rowKey, ':'); i >= 0 {
		return rowKey[:i]
	}
	return rowKey
}

// Scope maps a row's PartitionKey to the doc scope (SPEC §3): "GLOBAL" and
// "SYSTEM" stay, an org id gets the "org-" prefix unless it has it.
func Scope(partitionKey string) string {
	switch {
	case partitionKey == "GLOBAL", partitionKey == "SYSTEM", strings.HasPrefix(partitionKey, "org-"):
		return partitionKey
	}
	return "org-" + partitionKey
}

// Transform decides the disposition of one row of table row.Table and
// builds its doc (SPEC §2–§10). blobs describes the execution's blobs and
// matters only for execution rows. Transform is pure and safe for
// concurrent use; it never fails: every problem is a dead-letter outcome
// with its reason. It does not detect id collisions, which need every
// earlier row: pass doc outcomes through an IDSet in read order.
func Transform(row Row, blobs BlobFacts, opts Options) Outcome {
	return transformWith(defaultKinds, row, blobs, opts, extrasNone)
}

// TransformMeaning is Transform, and a doc outcome's MeaningHash too: the
// canonical JSON the provenance hash is made of serves for it, so that
// the doc is not encoded again (verify compares every row's doc by it).
func TransformMeaning(row Row, blobs BlobFacts, opts Options) Outcome {
	return transformWith(defaultKinds, row, blobs, opts, extrasMeaning)
}

// TransformHashes is TransformMeaning without the doc's JSON (DocJSON is
// nil), for a reader that keeps only a doc's hashes (verify's index of
// every row): the disposition is TransformMeaning's, the doc's size
// (MaxDocBytes) counted without writing its JSON.
func TransformHashes(row Row, blobs BlobFacts, opts Options) Outcome {
	return transformWith(defaultKinds, row, blobs, opts, extrasHashes)
}

// outcomeExtras is what transformWith's outcome has beyond Transform's.
type outcomeExtras int

const (
	extrasNone    outcomeExtras = iota // Transform's outcome
	extrasMeaning                      // and the doc's MeaningHash
	extrasHashes                       // the MeaningHash, but no DocJSON
)

// transformWith is Transform by the kinds of kt, with extras.
func transformWith(kt *kindTable, row Row, blobs BlobFacts, opts Options, extras outcomeExtras) Outcome {
	out := Outcome{Table: row.Table, Kind: Kind(row.RowKey)}
	if err := opts.Validate(); err != nil {
		return out.deadLetter("invalid options: " + err.Error())
	}
	if row.DecodeError != "" {
		return out.deadLetter("undecodable row: " + row.DecodeError)
	}
	// One allocation for the builder and its scratch space.
	b := &builder{row: row, opts: opts.WithDefaults(), blobs: blobs, out: out, kinds: kt, stamps: kt.stamps[row.Table], want: extras}
	b.used = b.usedBuf[:0]
	switch row.Table {
	case TableConfig, TableEntities:
		b.kindDoc(kt.classify(row.Table, row.RowKey))
	case TableRelationships:
		b.relationships()
	default:
		return out.deadLetter(fmt.Sprintf("unknown table %q", row.Table))
	}
	if b.fail != "" {
		return b.out.deadLetter(b.fail)
	}
	if b.out.Disposition == DispositionDoc {
		b.finish()
		if b.fail != "" {
			return b.out.deadLetter(b.fail)
		}
	}
	return b.out
}

// kindDoc builds the doc of a row of kind k whose RowKey holds key: id,
// type and scope, the kind's fields in order, then the unlisted
// properties.
func (b *builder) kindDoc(k *kindSpec, key string) {
	switch k.id {
	case idUnknown:
		b.unknownKind()
		return
	case idExecution:
		b.execution(k, key)
		return
	}
	rawID, scope := idRules[k.id].forward(b, k, key)
	b.start(ContainerEntities, rawID, scope, k.typeValue)
	b.writeFields(k, key)
	b.extras()
}

// writeFields writes the fields of kind k in order, by their rules, from
// the row whose RowKey holds key.
func (b *builder) writeFields(k *kindSpec, key string) {
	for i := range k.fields {
		f := &k.fields[i]
		if f.optional {
			if _, ok := b.row.Props[f.src]; !ok {
				b.use(f.src)
				continue
			}
		}
		switch f.rule {
		case rulePlain:
			b.fromField(f)
		case ruleJSON:
			b.json(f.name, f.src)
		case ruleKey, ruleKeyWritten:
			b.keyField(f.name, f.src, key)
		case ruleFromKey:
			b.set(f.name, key)
		case ruleDerived:
			if f.src != "" {
				b.use(f.src)
			}
			b.set(f.name, f.derive(rowKeys{b.row.PartitionKey, b.row.RowKey, key}))
		case ruleRawID:
			b.use(f.src)
			b.set(f.name, b.out.RawID)
		case ruleLegacyBlob:
			b.legacyBlob(f.name, f.src, f.blob)
		case ruleGroup:
			b.writeGroup(f.group)
		}
	}
}

// writeGroup writes the fields of group g.
func (b *builder) writeGroup(g fieldGroup) {
	switch g {
	case groupConfigValue:
		b.configValue()
	case groupResult:
		b.result()
	}
}

// builder assembles one doc in SPEC order and tracks the source
// properties it has used; the rest are copied by extras. It holds the row,
// options and outcome by value, and the first few entries of its slices,
// so that one Transform allocates it once.
type builder struct {
	row   Row
	opts  Options
	blobs BlobFacts
	out   Outcome
	doc   Doc
	used  []string
	kinds *kindTable
	// stamps are the table's timestamp properties.
	stamps map[string]bool
	fail   string // first dead-letter reason
	// want is what the outcome has beyond Transform's.
	want outcomeExtras

	usedBuf [48]string
}

func (b *builder) warn(reason, detail string) {
	b.out.Warnings = append(b.out.Warnings, Warning{Reason: reason, Detail: detail})
}

func (b *builder) deadLetter(reason string) {
	if b.fail == "" {
		b.fail = reason
	}
}

// start makes the outcome a doc in container with the given raw id and
// scope, and writes id, type and scope.
// docType is an any so that the usual constant types are boxed without an
// allocation.
func (b *builder) start(container, rawID, scope string, docType any) {
	id, encoded, truncated := SanitizeID(rawID)
	if encoded {
		b.warn(ReasonIDEncoded, "id has characters Cosmos DB does not allow")
	}
	if truncated {
		b.warn(ReasonIDTruncated, fmt.Sprintf("id is %d bytes after encoding, more than %d", len(EncodeID(rawID)), MaxIDBytes))
	}
	if rawID == "" {
		b.deadLetter("empty id")
	}
	b.out.Disposition = DispositionDoc
	b.out.Container, b.out.ID, b.out.RawID, b.out.Scope = container, id, rawID, scope
	b.doc = make(Doc, 0, len(b.row.Props)+12)
	b.doc = append(b.doc, Field{"id", id}, Field{"type", docType}, Field{"scope", scope})
}

// rowScope is Scope of the row's PartitionKey; an empty PartitionKey is a
// dead letter.
func (b *builder) rowScope() string {
	if b.row.PartitionKey == "" {
		b.deadLetter("empty PartitionKey")
	}
	return Scope(b.row.PartitionKey)
}

func (b *builder) use(src string) {
	b.used = append(b.used, src)
}

// prop returns a source property and marks it used.
func (b *builder) prop(src string) (Value, bool) {
	b.use(src)
	v, ok := b.row.Props[src]
	return v, ok
}

func (b *builder) set(name string, v any) {
	b.doc = append(b.doc, Field{name, v})
}

// value maps a property value by §2 (timestamps by the table's list),
// adding warnings that name src.
func (b *builder) value(src string, v Value) any {
	return b.valueAs(src, v, b.stamps[src])
}

// valueAs is value for a property that is a timestamp when stamp is set.
func (b *builder) valueAs(src string, v Value, stamp bool) any {
	if stamp {
		switch v.Type {
		case EdmDateTime:
			return FormatTimestamp(v.Time)
		case EdmString:
			if t, ok := ParseTimestamp(v.Str); ok {
				return FormatTimestamp(t)
			}
		}
		b.warn(ReasonUnparseableTimestamp, src)
	}
	switch v.Type {
	case EdmBoolean:
		return v.Bool
	case EdmInt32:
		return v.Int
	case EdmInt64:
		if v.Int > 1<<53 || v.Int < -(1<<53) {
			b.warn(ReasonInt64Above2p53, src)
			return strconv.FormatInt(v.Int, 10)
		}
		return v.Int
	case EdmDouble:
		if math.IsNaN(v.Double) || math.IsInf(v.Double, 0) {
			b.warn(ReasonDoubleNotFinite, src)
			switch {
			case math.IsNaN(v.Double):
				return "NaN"
			case v.Double > 0:
				return "Infinity"
			default:
				return "-Infinity"
			}
		}
		return v.Double
	case EdmDateTime:
		return FormatTimestamp(v.Time)
	case EdmBinary:
		return base64.StdEncoding.EncodeToString(v.Bytes)
	default: // String, Guid
		return v.Str
	}
}

// from writes doc property name from source property src (null when
// absent).
func (b *builder) from(name, src string) {
	v, ok := b.prop(src)
	if !ok {
		b.set(name, nil)
		return
	}
	b.set(name, b.value(src, v))
}

// fromField is from for a listed field, which says itself whether it is
// a timestamp: the table's list, the union of its kinds' timestamp
// fields, agrees (TestKindTableConsistent), and this saves a lookup per
// field.
func (b *builder) fromField(f *field) {
	v, ok := b.prop(f.src)
	if !ok {
		b.set(f.name, nil)
		return
	}
	b.set(f.name, b.valueAs(f.src, v, f.stamp))
}

// json writes name as the JSON-decoded text of src (null when absent). A
// text that is not valid JSON is a dead letter naming src; a value that is
// not a string is mapped by §2 as it is.
func (b *builder) json(name, src string) {
	v, ok := b.prop(src)
	switch {
	case !ok:
		b.set(name, nil)
	case v.Type != EdmString:
		b.set(name, b.value(src, v))
	default:
		dv, big, err := decodeJSONField(v.Str)
		if err != nil {
			b.deadLetter(fmt.Sprintf("property %s is not valid JSON: %v", src, err))
			return
		}
		if big {
			b.warn(ReasonJSONBigInt, src)
		}
		b.set(name, dv)
	}
}

// keyField writes name from src when the row has it (warning when it
// differs from the key in the RowKey), else the RowKey's key.
func (b *builder) keyField(name, src, fromRowKey string) {
	v, ok := b.row.Props[src]
	if !ok {
		b.use(src)
		b.set(name, fromRowKey)
		return
	}
	if v.Type != EdmString || v.Str != fromRowKey {
		b.warn(ReasonKeyMismatch, src)
	}
	b.from(name, src)
}

// reservedName reports doc property names no source property may take:
// Cosmos DB's system properties and the ones the tool sets on every doc.
func reservedName(name string) bool {
	switch name {
	case "id", "type", "scope", "ttl", "_migration", "_rid", "_self", "_etag", "_ts", "_attachments", "_lsn":
		return true
	}
	return false
}

// extras copies every property not used yet, in name order, renamed to
// camelCase (§2). A string property named "etag" is dropped. A name that
// is taken by a doc property becomes "source" + the source name.
func (b *builder) extras() {
	if b.fail != "" {
		return // a dead letter: the rest does not matter
	}
	var names []string
	for name := range b.row.Props {
		if !slices.Contains(b.used, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, src := range names {
		v := b.row.Props[src]
		if src == "etag" && v.Type == EdmString {
			b.warn(ReasonEtagDropped, src)
			continue
		}
		name := camel(src)
		if reservedName(name) || b.doc.Has(name) {
			renamed := "source" + pascal(src)
			if reservedName(renamed) || b.doc.Has(renamed) {
				b.deadLetter(fmt.Sprintf("property %s collides with doc property %q", src, name))
				return
			}
			b.warn(ReasonPropertyRenamed, fmt.Sprintf("%s → %s", src, renamed))
			name = renamed
		}
		b.set(name, b.value(src, v))
	}
}

// finish adds _migration with the hash and encodes the doc.
func (b *builder) finish() {
	// The canonical JSON is only hashed, so its buffer is reused across
	// calls.
	bp := canonBufs.Get().(*[]byte)
	canon, kept, err := appendCanonicalDocLen((*bp)[:0], b.doc, hashExcluded)
	if err != nil {
		b.deadLetter("canonical JSON: " + err.Error())
		return
	}
	sum := sha256.Sum256(canon)
	var hexSum [2 * sha256.Size]byte
	hex.Encode(hexSum[:], sum[:])
	h := string(hexSum[:])
	if b.want != extrasNone {
		b.out.MeaningHash = meaningOfCanonical(b.row.Table, b.doc, canon, h)
	}
	canonLen := len(canon)
	defer func() {
		if cap(canon) <= maxPooledCanon {
			*bp = canon
			canonBufs.Put(bp)
		}
	}()
	var ts any
	if !b.row.Timestamp.IsZero() {
		ts = FormatTimestamp(b.row.Timestamp)
	}
	b.set("_migration", Doc{
		{"table", b.row.Table},
		{"partitionKey", b.row.PartitionKey},
		{"rowKey", b.row.RowKey},
		{"timestamp", ts},
		{"hash", h},
	})
	var js []byte
	size := 0
	if b.want == extrasHashes {
		// The doc's size without its JSON; canon's buffer serves as
		// scratch, since canon is no longer read.
		size, canon, err = docJSONLen(b.doc, kept, hashExcluded, canon)
	} else {
		js, err = appendDoc(make([]byte, 0, canonLen+canonLen/8+384), b.doc)
		size = len(js)
	}
	if err != nil {
		b.deadLetter("encode doc: " + err.Error())
		return
	}
	if size > MaxDocBytes {
		b.deadLetter(fmt.Sprintf("doc is %d bytes, more than the 2 MB limit (%d bytes)", size, MaxDocBytes))
		return
	}
	b.out.Doc, b.out.DocJSON = b.doc, js
}

// canonBufs holds the buffers finish builds canonical JSON in (*[]byte);
// buffers that grew above maxPooledCanon are left to the garbage collector.
var canonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledCanon = 256 << 10

// unknownKind applies the unknown-kind rule of §10 to a Config or Entities
// row.
func (b *builder) unknownKind() {
	kind := b.out.Kind
	if b.row.RowKey == "" {
		b.deadLetter("empty RowKey")
		return
	}
	if b.opts.Strict {
		b.deadLetter(fmt.Sprintf("unknown kind %q in table %s (strict)", kind, b.row.Table))
		return
	}
	b.warn(ReasonUnknownKind, kind)
	b.start(ContainerEntities, strings.ReplaceAll(b.row.RowKey, ":", "-"), b.rowScope(), kind)
	b.extras()
}

// camel lower-cases the first letter of a property name (§2).
func camel(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsUpper(r) {
		return s
	}
	if r < utf8.RuneSelf {
		return string(rune(r+'a'-'A')) + s[n:]
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// pascal upper-cases the first letter of a property name.
func pascal(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsLower(r) {
		return s
	}
	if r < utf8.RuneSelf {
		return string(rune(r-'a'+'A')) + s[n:]
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
