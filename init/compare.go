package provision

import (
	"fmt"
	"slices"
	"strings"
)

// normalPolicy is an indexing policy in a canonical form: defaults filled
// in, case folded, path sets sorted, so that two policies that mean the
// same compare equal. The order of included and excluded paths and of
// composite indexes does not matter; the order of paths inside one
// composite index does (it is the ORDER BY order).
type normalPolicy struct {
	mode       string
	automatic  bool
	included   []string
	excluded   []string
	composites []string
}

// EffectiveMode returns the indexing mode in lower case: "consistent"
// when the policy does not set one.
func (ip IndexingPolicy) EffectiveMode() string {
	if ip.IndexingMode == "" {
		return "consistent"
	}
	return strings.ToLower(ip.IndexingMode)
}

// EffectiveAutomatic reports whether indexing is automatic: true when the
// policy does not say.
func (ip IndexingPolicy) EffectiveAutomatic() bool {
	return ip.Automatic == nil || *ip.Automatic
}

func normalize(ip IndexingPolicy) normalPolicy {
	n := normalPolicy{mode: ip.EffectiveMode(), automatic: ip.EffectiveAutomatic()}
	for _, p := range ip.IncludedPaths {
		n.included = append(n.included, p.Path)
	}
	for _, p := range ip.ExcludedPaths {
		n.excluded = append(n.excluded, p.Path)
	}
	// The service excludes _etag itself and returns it in every policy.
	n.excluded = append(n.excluded, etagPath)
	for _, ci := range ip.CompositeIndexes {
		n.composites = append(n.composites, compositeString(ci))
	}
	n.included = sortedSet(n.included)
	n.excluded = sortedSet(n.excluded)
	n.composites = sortedSet(n.composites)
	return n
}

func compositeString(ci []CompositePath) string {
	parts := make([]string, len(ci))
	for i, p := range ci {
		order := strings.ToLower(p.Order)
		if order == "" {
			order = "ascending"
		}
		parts[i] = p.Path + " " + order
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// Diff returns what must change for the container current to match the
// definition desired, one line per difference, in a stable order:
// defaultTtl, then indexingMode, automatic, included paths, excluded paths
// and composite indexes ("+" to add, "-" to remove). Partition keys are
// not compared here; see SamePartitionKey. No lines means no change.
func Diff(current, desired Container) []string {
	var d []string
	if ttlString(current.DefaultTTL) != ttlString(desired.DefaultTTL) {
		d = append(d, fmt.Sprintf("defaultTtl: %s -> %s", ttlString(current.DefaultTTL), ttlString(desired.DefaultTTL)))
	}
	c, w := normalize(current.IndexingPolicy), normalize(desired.IndexingPolicy)
	if c.mode != w.mode {
		d = append(d, fmt.Sprintf("indexingPolicy.indexingMode: %s -> %s", c.mode, w.mode))
	}
	if c.automatic != w.automatic {
		d = append(d, fmt.Sprintf("indexingPolicy.automatic: %t -> %t", c.automatic, w.automatic))
	}
	d = append(d, setDiff("indexingPolicy.includedPaths", c.included, w.included)...)
	d = append(d, setDiff("indexingPolicy.excludedPaths", c.excluded, w.excluded)...)
	d = append(d, setDiff("indexingPolicy.compositeIndexes", c.composites, w.composites)...)
	return d
}

func setDiff(field string, current, desired []string) []string {
	var d []string
	for _, s := range current {
		if !slices.Contains(desired, s) {
			d = append(d, fmt.Sprintf("%s: - %s", field, s))
		}
	}
	for _, s := range desired {
		if !slices.Contains(current, s) {
			d = append(d, fmt.Sprintf("%s: + %s", field, s))
		}
	}
	return d
}

// ttlString renders a defaultTtl: "off" when absent, else the number.
func ttlString(ttl *int64) string {
	if ttl == nil {
		return "off"
	}
	return fmt.Sprint(*ttl)
}

// SamePartitionKey reports whether an existing container's partition key
// (current, as read from the service) is the one a definition asks for.
// Kind defaults to Hash for one path and MultiHash for more; an absent
// version means 1 on a read container (the service's default) and 2 in a
// definition (this tool's default).
func SamePartitionKey(current, desired PartitionKey) bool {
	return slices.Equal(current.Paths, desired.Paths) &&
		current.EffectiveKind() == desired.EffectiveKind() &&
		current.EffectiveVersion(1) == desired.EffectiveVersion(2)
}

// EffectiveKind returns the partition key's kind: Kind when set, else
// Hash for one path and MultiHash for more.
func (pk PartitionKey) EffectiveKind() string {
	switch {
	case pk.Kind != "":
		return pk.Kind
	case len(pk.Paths) > 1:
		return "MultiHash"
	default:
		return "Hash"
	}
}

// EffectiveVersion returns the partition key's version, or def when it
// has none (1 on a container read from the service, 2 in a definition).
func (pk PartitionKey) EffectiveVersion(def int) int {
	if pk.Version == 0 {
		return def
	}
	return pk.Version
}

// pkString renders a partition key for a message, e.g. "/scope (Hash, version 2)".
func pkString(pk PartitionKey, defVersion int) string {
	return fmt.Sprintf("%s (%s, version %d)", strings.Join(pk.Paths, ","), pk.EffectiveKind(), pk.EffectiveVersion(defVersion))
}
