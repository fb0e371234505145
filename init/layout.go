package provision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/bifrost/bifrost-migrate/internal/words"
)

// Layout is the full set of resources init provisions in one database.
type Layout struct {
	Containers []Container `json:"containers"`
	// BlobContainers are created in the blob account when missing.
	BlobContainers []string `json:"blobContainers,omitempty"`
}

// Container is one Cosmos DB container definition. The field names are
// those of the Cosmos DB REST API, so a policy copied from the portal fits.
type Container struct {
	ID           string       `json:"id"`
	PartitionKey PartitionKey `json:"partitionKey"`
	// DefaultTTL is absent (TTL off), -1 (TTL on, items do not expire by
	// default) or 1..2147483647 seconds. It is an int64 so that validation
	// can name an out-of-range value instead of failing to decode it.
	DefaultTTL     *int64         `json:"defaultTtl,omitempty"`
	IndexingPolicy IndexingPolicy `json:"indexingPolicy"`
	// Throughput is manual RU/s, applied only when the container is created.
	Throughput *int32 `json:"throughput,omitempty"`
}

// PartitionKey is a container's partition key definition.
type PartitionKey struct {
	Paths   []string `json:"paths"`
	Kind    string   `json:"kind,omitempty"`    // Hash (default) or MultiHash
	Version int      `json:"version,omitempty"` // 1 or 2 (default 2)
}

// IndexingPolicy is a container's indexing policy.
type IndexingPolicy struct {
	IndexingMode     string            `json:"indexingMode,omitempty"` // consistent (default) or none
	Automatic        *bool             `json:"automatic,omitempty"`    // default true
	IncludedPaths    []Path            `json:"includedPaths,omitempty"`
	ExcludedPaths    []Path            `json:"excludedPaths,omitempty"`
	CompositeIndexes [][]CompositePath `json:"compositeIndexes,omitempty"`
}

// Path is an included or excluded indexing path such as "/status/*".
type Path struct {
	Path string `json:"path"`
}

// CompositePath is one property of a composite index.
type CompositePath struct {
	Path  string `json:"path"`
	Order string `json:"order,omitempty"` // ascending (default) or descending
}

// etagPath is excluded from indexing by the service itself, whatever the
// policy says; comparisons treat it as always excluded.
const etagPath = `/"_etag"/?`

// decodeErrorLimit is how many characters of the JSON decoder's message
// a Parse error keeps.
const decodeErrorLimit = 200

// Parse decodes a layout file. Unknown fields are errors, so that a typo
// does not silently drop a setting. It does not validate; call Validate.
func Parse(data []byte) (Layout, error) {
	var l Layout
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		// The decoder's message quotes an unknown field's name whole,
		// however long: it is cut.
		msg, cut := words.Cut(err.Error(), decodeErrorLimit)
		if cut {
			msg += "…"
		}
		return Layout{}, fmt.Errorf("container definitions: %s", msg)
	}
	if dec.More() {
		return Layout{}, errors.New("container definitions: more than one JSON value")
	}
	return l, nil
}

// DefaultLayout returns Bifrost's layout (SPEC §4), parsed from the
// embedded file. It returns an error only if the embedded file is broken.
func DefaultLayout() (Layout, error) { return Parse(defaultLayout) }

// ValidationError lists every rule a layout breaks, one message per
// problem, each naming the container and the rule.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "invalid container definitions:\n  " + strings.Join(e.Problems, "\n  ")
}

// IDRule says what the id of a Cosmos DB database or container may be
// (ValidID).
const IDRule = `1-255 characters without "/", "\", "?", "#" or surrounding spaces`

// ValidID reports whether id may name a Cosmos DB database or container:
// IDRule.
func ValidID(id string) bool {
	return containerID.MatchString(id) && strings.TrimSpace(id) == id
}

var (
	containerID   = regexp.MustCompile(`^[^/\\?#]{1,255}$`)
	blobContainer = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9]|-[a-z0-9]){2,62}$`)
)

// Validate checks the layout as the service would, before any request
// (SPEC §4): the root path "/*" included or excluded; every path starting
// with "/" and ending in "/?" or "/*", with no wildcard before its last
// segment and array elements as "[]" (indexPathProblem); no path both
// included and excluded; composite indexes of at least two property paths
// without wildcards, ascending or descending; defaultTtl absent, -1 or
// 1..2147483647; plus ids, partition keys, throughput and blob container
// names. It returns a *ValidationError, or nil.
func (l Layout) Validate() error {
	var p []string
	if len(l.Containers) == 0 {
		p = append(p, "no containers defined")
	}
	seen := map[string]bool{}
	for i, c := range l.Containers {
		name := "container " + words.Quote(c.ID)
		if c.ID == "" {
			name = fmt.Sprintf("container #%d", i+1)
		}
		add := func(format string, args ...any) { p = append(p, name+": "+fmt.Sprintf(format, args...)) }
		switch {
		case c.ID == "":
			add("id is missing")
		case !ValidID(c.ID):
			add("id must be " + IDRule)
		case seen[c.ID]:
			add("defined twice")
		}
		seen[c.ID] = true
		p = append(p, c.validate(name)...)
	}
	for _, b := range l.BlobContainers {
		if !blobContainer.MatchString(b) {
			p = append(p, fmt.Sprintf("blob container %s: name must be 3-63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit", words.Quote(b)))
		}
	}
	if len(p) > 0 {
		return &ValidationError{Problems: p}
	}
	return nil
}

func (c Container) validate(name string) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, name+": "+fmt.Sprintf(format, args...)) }

	pk := c.PartitionKey
	switch kind := pk.Kind; {
	case len(pk.Paths) == 0:
		add("partitionKey.paths is empty")
	case kind == "" || kind == "Hash":
		if len(pk.Paths) != 1 {
			add("partitionKey kind Hash takes exactly one path, it has %d (use MultiHash for hierarchical keys)", len(pk.Paths))
		}
	case kind == "MultiHash":
		if len(pk.Paths) > 3 {
			add("partitionKey kind MultiHash takes at most 3 paths, it has %d", len(pk.Paths))
		}
	default:
		add("partitionKey.kind %s must be Hash or MultiHash", words.Quote(kind))
	}
	for _, path := range pk.Paths {
		if !plainPath(path) {
			add("partitionKey path %s must be a property path such as \"/scope\"", words.Quote(path))
		}
	}
	if v := pk.Version; v != 0 && v != 1 && v != 2 {
		add("partitionKey.version %d must be 1 or 2", v)
	}

	if ttl := c.DefaultTTL; ttl != nil && *ttl != -1 && (*ttl < 1 || *ttl > math.MaxInt32) {
		add("defaultTtl %d: must be absent (no expiry), -1 (expiry per item) or 1..2147483647 seconds", *ttl)
	}
	if t := c.Throughput; t != nil && (*t < 400 || *t%100 != 0) {
		add("throughput %d: manual throughput must be at least 400 RU/s, in steps of 100", *t)
	}

	return append(p, c.IndexingPolicy.validate(name)...)
}

// validate checks an indexing policy as the service would (SPEC §4),
// naming the container (name), the path and the rule broken.
func (ip IndexingPolicy) validate(name string) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, name+": "+fmt.Sprintf(format, args...)) }
	switch strings.ToLower(ip.IndexingMode) {
	case "", "consistent":
	case "none":
		if ip.Automatic == nil || *ip.Automatic || len(ip.IncludedPaths)+len(ip.ExcludedPaths)+len(ip.CompositeIndexes) > 0 {
			add(`indexingMode "none" requires "automatic": false and no paths or composite indexes`)
		}
		return p
	default:
		add("indexingPolicy.indexingMode %s must be consistent or none", words.Quote(ip.IndexingMode))
	}
	root := false
	included := map[string]bool{}
	for _, path := range ip.IncludedPaths {
		included[path.Path] = true
	}
	for _, set := range []struct {
		field string
		paths []Path
	}{{"includedPaths", ip.IncludedPaths}, {"excludedPaths", ip.ExcludedPaths}} {
		for _, path := range set.paths {
			if path.Path == "/*" {
				root = true
			}
			if why := indexPathProblem(path.Path); why != "" {
				add("indexingPolicy.%s: path %s %s", set.field, words.Quote(path.Path), why)
			}
			if set.field == "excludedPaths" && included[path.Path] {
				add("indexingPolicy: path %s is in both includedPaths and excludedPaths: a path is either indexed or not", words.Quote(path.Path))
			}
		}
	}
	if !root {
		add(`indexingPolicy: the root path "/*" must be in includedPaths or excludedPaths`)
	}
	for i, ci := range ip.CompositeIndexes {
		if len(ci) < 2 {
			add("indexingPolicy.compositeIndexes[%d]: a composite index needs at least 2 paths, it has %d", i, len(ci))
		}
		for _, cp := range ci {
			if !compositePath(cp.Path) {
				add("indexingPolicy.compositeIndexes[%d]: path %s must be a property path without wildcards such as \"/workspace_id\" (no \"/?\" or \"/*\"; array elements as \"[]\")", i, words.Quote(cp.Path))
			}
			switch strings.ToLower(cp.Order) {
			case "", "ascending", "descending":
			default:
				add("indexingPolicy.compositeIndexes[%d]: path %s has order %s, it must be ascending or descending", i, words.Quote(cp.Path), words.Quote(cp.Order))
			}
		}
	}
	return p
}

// indexPathProblem says why the service would refuse s as an included or
// excluded path, or returns "" when it would accept it. The rules are
// those of Cosmos DB's indexing policy documentation: a path starts with
// "/"; it ends in "/?" (the scalar value at that path) or "/*" (everything
// below it), and "/*" alone is the root; a wildcard is never a segment
// before the last; the elements of an array are addressed all at once as
// "[]" (a position such as "[1]" only inside a tuple path,
// "/events/[]/{name, category}/?"); a name in double quotes is taken as
// it is ("/\"_etag\"/?").
func indexPathProblem(s string) string {
	if !strings.HasPrefix(s, "/") {
		return `must start with "/"`
	}
	segs, ok := splitPath(s[1:])
	if !ok {
		return `has an unclosed '"' or '{'`
	}
	last := len(segs) - 1
	tuple := last > 0 && strings.HasPrefix(segs[last-1], "{")
	for _, seg := range segs[:last] {
		switch {
		case seg == "":
			return `has an empty segment ("//")`
		case strings.HasPrefix(seg, `"`) || strings.HasPrefix(seg, "{"):
			// A quoted name or a tuple: taken as written.
		case strings.ContainsAny(seg, "*?"):
			return `has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`
		case strings.HasPrefix(seg, "[") && seg != "[]" && !(tuple && arrayPosition(seg)):
			return fmt.Sprintf(`has the segment %s: the elements of an array are addressed all at once as "[]"`, words.Quote(seg))
		}
	}
	if segs[last] != "?" && segs[last] != "*" {
		return `must end in "/?" (the value at the path) or "/*" (everything below it)`
	}
	return ""
}

// splitPath splits a path (without its leading "/") at every "/" outside
// double quotes and braces; ok is false when a quote or brace is left
// open.
func splitPath(s string) (segs []string, ok bool) {
	quoted, depth, start := false, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{':
			depth++
		case c == '}' && depth > 0:
			depth--
		case c == '/' && depth == 0:
			segs = append(segs, s[start:i])
			start = i + 1
		}
	}
	return append(segs, s[start:]), !quoted && depth == 0
}

// arrayPosition reports whether seg is one array element such as "[1]".
func arrayPosition(seg string) bool {
	digits := strings.TrimSuffix(strings.TrimPrefix(seg, "["), "]")
	return len(seg) == len(digits)+2 && digits != "" && strings.Trim(digits, "0123456789") == ""
}

// compositePath reports whether s can be a path of a composite index: a
// property path such as "/workspace_id" or "/a/b" with no wildcard ("*",
// "?"); array elements ("/children/[]/age") are allowed, as the service
// allows them.
func compositePath(s string) bool {
	if !strings.HasPrefix(s, "/") {
		return false
	}
	segs, ok := splitPath(s[1:])
	if !ok {
		return false
	}
	for _, seg := range segs {
		if seg == "" || !strings.HasPrefix(seg, `"`) && (strings.ContainsAny(seg, "*?{") || strings.HasPrefix(seg, "[") && seg != "[]") {
			return false
		}
	}
	return true
}

// plainPath reports whether s is a property path such as "/workspace_id"
// or "/a/b": it starts with "/", names at least one property and has no
// wildcard.
func plainPath(s string) bool {
	if !strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		return false
	}
	for _, seg := range strings.Split(s[1:], "/") {
		if seg == "" || seg == "*" || seg == "?" || seg == "[]" {
			return false
		}
	}
	return true
}
