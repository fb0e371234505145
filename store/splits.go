package store

import "github.com/bifrost/bifrost-migrate/transform"

// Splits returns where a Bifrost table is split into key ranges that are
// read at the same time (ScanRanges; SPEC §14, Latency). Entities has one
// partition per organization — a UUID, so a hex digit first, or an
// org- prefix — plus GLOBAL and SYSTEM: it is split by the first
// character of the PartitionKey. Relationships has one partition, GLOBAL:
// it is split by the kinds its RowKeys start with, the execution indexes
// (formexec, status, userexec, workflowexec) apart. Config is small and
// read in one range.
func Splits(table string) []Key {
	var out []Key
	switch table {
	case transform.TableEntities:
		for _, c := range []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "G", "H", "S", "T", "a", "b", "c", "d", "e", "f", "g", "o", "p"} {
			out = append(out, Key{PartitionKey: c})
		}
	case transform.TableRelationships:
		out = append(out, Key{PartitionKey: "G"})
		for _, c := range []string{"f", "g", "s", "t", "u", "userp", "v", "w", "x"} {
			out = append(out, Key{PartitionKey: "GLOBAL", RowKey: c})
		}
		out = append(out, Key{PartitionKey: "H"})
	}
	return out
}
