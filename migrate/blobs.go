package migrate

import (
	"context"
	"fmt"

	"github.com/bifrost/bifrost-migrate/transform"
)

// containers are the Cosmos DB containers, in the order reverse reads them.
var containers = []string{transform.ContainerEntities, transform.ContainerExecutions}

// listBlobs lists the container once, in name order, into the compact
// index the transform reads blob facts from (SPEC §8).
func listBlobs(ctx context.Context, blobs BlobStore) (transform.BlobIndex, error) {
	idx := transform.BlobIndex{}
	if err := blobs.List(ctx, idx.Add); err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	return idx, nil
}

// factsOf returns what idx knows of the blobs of row's execution: an
// Entities row may be one; the other tables have none.
func factsOf(idx transform.BlobIndex, row transform.Row) transform.BlobFacts {
	if row.Table != transform.TableEntities {
		return transform.BlobFacts{}
	}
	return idx.Facts(transform.ExecutionID(row))
}

// uploadBlobs uploads the blobs a row's doc needs, create-only and in
// order (SPEC §8), for run, replay and reverse alike, each answer taken by
// ruleUploadBlob (settle): a blob that exists with other content (the
// blob store compares it: the same content is success) or that the
// service refuses makes the row a dead letter, its reason in f. It
// returns how many blobs it created and their bytes (an identical blob
// already there is not counted) and the step: stepOn when every blob is
// there, stepDeadLetter, or stepStop with the error, naming the row and
// the blob.
func uploadBlobs(ctx context.Context, blobs BlobStore, row transform.Row, uploads []transform.Upload, f *fate) (created, bytes int64, s step, err error) {
	for _, u := range uploads {
		ok, err := blobs.PutIfAbsent(ctx, u.Path, u.Data, u.ContentType)
		if s, err := ruleUploadBlob.settle(err, "blob "+u.Path+" ", f); s != stepOn {
			return created, bytes, s, wrapIf(err, fmt.Sprintf("%s %s/%s: upload blob %s", row.Table, row.PartitionKey, row.RowKey, u.Path))
		}
		if ok {
			created++
			bytes += int64(len(u.Data))
		}
	}
	return created, bytes, stepOn, nil
}
