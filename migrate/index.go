package migrate

import (
	"context"
	"fmt"

	"github.com/bifrost/bifrost-migrate/transform"
)

// listBlobs lists the container once, in name order, into the compact
// index the transform reads blob facts from (SPEC §8).
func listBlobs(ctx context.Context, blobs BlobStore) (transform.BlobIndex, error) {
	idx := transform.BlobIndex{}
	if err := blobs.List(ctx, idx.Add); err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	return idx, nil
}
