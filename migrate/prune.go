package migrate

import (
	"context"
	"fmt"

	"github.com/bifrost/bifrost-migrate/transform"
)

// What the prunes of replay (replay_prune.go) and reverse
// (reverse_prune.go) share: the list of migrated docs, the keys of rows.

// listMigrated calls fn, for every doc of both containers that carries
// _migration, with its container, the source row _migration names, and
// the doc's scope and id. It reads every doc (a query of the whole
// containers).
func listMigrated(ctx context.Context, q DocQuerier, fn func(container string, src source, scope, id string)) error {
	for _, c := range []string{transform.ContainerEntities, transform.ContainerExecutions} {
		err := q.QueryAll(ctx, c, "SELECT * FROM c", nil, 0, func(raw []byte) error {
			m, err := transform.DecodeDoc(raw)
			if err != nil {
				return fmt.Errorf("container %s: undecodable doc: %w", c, err)
			}
			if mig, ok := m["_migration"].(map[string]any); ok {
				fn(c, source{replayString(mig["table"]), replayString(mig["partitionKey"]), replayString(mig["rowKey"])},
					replayString(m["scope"]), replayString(m["id"]))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// wrapIf prefixes a non-nil err with where.
func wrapIf(err error, where string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", where, err)
}

func rowKeyHash(table, pk, rk string) [16]byte {
	return transform.BlobKey(table + "\x00" + pk + "\x00" + rk)
}

// replayString returns a decoded JSON string's value, or "" for anything
// else.
func replayString(v any) string {
	s, _ := v.(string)
	return s
}
