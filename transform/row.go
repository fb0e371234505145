// Package transform turns one decoded Table Storage row into its migration
// outcome: a disposition, a Cosmos DB document, the blobs it needs and its
// warnings (SPEC §2–§10). It is pure: no I/O, no clock of its own, no Azure
// SDK types. Everything it needs to know about the world (blob listings, the
// current time, options) is passed in.
package transform

import "time"

// EdmType is a Table Storage property type, spelled as the service's
// odata.type annotation spells it.
type EdmType string

// The Edm types Table Storage supports (SPEC §2).
const (
	EdmString   EdmType = "Edm.String"
	EdmBoolean  EdmType = "Edm.Boolean"
	EdmInt32    EdmType = "Edm.Int32"
	EdmInt64    EdmType = "Edm.Int64"
	EdmDouble   EdmType = "Edm.Double"
	EdmDateTime EdmType = "Edm.DateTime"
	EdmGuid     EdmType = "Edm.Guid"
	EdmBinary   EdmType = "Edm.Binary"
)

// Value is one property value exactly as Table Storage holds it. Type says
// which field carries the value:
//
//	EdmString, EdmGuid   → Str
//	EdmBoolean           → Bool
//	EdmInt32, EdmInt64   → Int
//	EdmDouble            → Double (NaN and ±Inf included)
//	EdmDateTime          → Time (UTC, 100 ns precision)
//	EdmBinary            → Bytes (never nil for a present value)
type Value struct {
	Type   EdmType
	Str    string
	Bool   bool
	Int    int64
	Double float64
	Time   time.Time
	Bytes  []byte
}

// String returns a Value of type Edm.String.
func String(s string) Value { return Value{Type: EdmString, Str: s} }

// Row is one Table Storage entity: its system properties and its other
// properties by their source (PascalCase) names.
type Row struct {
	Table        string
	PartitionKey string
	RowKey       string
	// Timestamp is the service's last-modified time of the row.
	Timestamp time.Time
	// ETag is the row's ETag as the service returned it (odata.etag).
	ETag  string
	Props map[string]Value
	// DecodeError, when not empty, says why the row's properties could not
	// be decoded (a value that does not match its annotation); Props is
	// then empty, and Transform dead-letters the row with this reason, so
	// one bad row never stops a table.
	DecodeError string
}
