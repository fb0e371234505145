package azure

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Content-MD5 is what Blob Storage stores and compares; not used for security
	"encoding/base64"
	"fmt"
	"io"
	"net/url"
	"path"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/bifrost/bifrost-migrate/store"
)

// ListPageSize is the number of blobs BlobStore.List asks for per page
// (the service's maximum).
const ListPageSize = 5000

// BlobStore is one blob container (execution-data) as the run pipeline
// uses it: an ordered listing and create-only uploads. It implements
// migrate.BlobStore and is safe for concurrent use.
//
// Retries of transient failures are left to the client's retry policy
// (the Options it was built with), which is safe here: a listing page is a
// read, and a create-only upload that is repeated after it did happen
// finds the blob with the same MD5, which PutIfAbsent reports as success.
type BlobStore struct {
	c    *container.Client
	name string
}

// NewBlobStore returns a BlobStore over c (see NewBlobContainerClient).
func NewBlobStore(c *container.Client) *BlobStore {
	name := c.URL()
	if u, err := url.Parse(c.URL()); err == nil {
		name = path.Base(u.Path)
	}
	return &BlobStore{c: c, name: name}
}

// EnsureContainer creates the container unless it exists. Errors are
// *ResourceError naming the container and never carry a SAS.
func (s *BlobStore) EnsureContainer(ctx context.Context) error {
	return createContainer(ctx, s.c, s.name)
}

// createContainer creates container c (named name) unless it exists.
func createContainer(ctx context.Context, c *container.Client, name string) error {
	_, err := c.Create(ctx, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return blobFail(c, name, "create blob container "+name, err)
	}
	return nil
}

// blobFail wraps a failed request about container c (named name) in a
// *ResourceError whose message starts with op.
func blobFail(c *container.Client, name, op string, err error) error {
	return &ResourceError{
		Resource: Resource{Service: ServiceBlobs, Kind: KindBlobContainer, Name: name, Endpoint: blobEndpoint(c.URL())},
		Op:       op,
		Err:      withFault(ScrubError(err)),
	}
}

// List calls fn(name, size) for every blob in the container, in the order
// the service lists them, which is name order (UTF-8 byte order), reading
// pages of ListPageSize. It stops at the first error from fn or the
// service and returns it; a failed request returns a *ResourceError naming
// the container (a missing container: 404 ContainerNotFound).
func (s *BlobStore) List(ctx context.Context, fn func(name string, size int64) error) error {
	pager := s.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{MaxResults: to.Ptr[int32](ListPageSize)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return blobFail(s.c, s.name, "list blob container "+s.name, err)
		}
		if page.Segment == nil {
			continue
		}
		for _, b := range page.Segment.BlobItems {
			if b == nil || b.Name == nil {
				continue
			}
			var size int64
			if b.Properties != nil && b.Properties.ContentLength != nil {
				size = *b.Properties.ContentLength
			}
			if err := fn(*b.Name, size); err != nil {
				return err
			}
		}
	}
	return nil
}

// PutIfAbsent uploads data as blob name, create-only (If-None-Match: *),
// with its Content-MD5 (checked by the service in transit and stored with
// the blob) and contentType. It returns created=true when this call
// created the blob. When the blob exists, its MD5 is compared with ours
// (from the stored Content-MD5, or from its bytes when it has none): the
// same content is success with created=false; different content returns
// an error wrapping ErrBlobConflict that names the blob. Other errors are
// *ResourceError naming the container and the blob, and never carry a SAS.
func (s *BlobStore) PutIfAbsent(ctx context.Context, name string, data []byte, contentType string) (created bool, err error) {
	sum := md5.Sum(data) //nolint:gosec // see import
	bb := s.c.NewBlockBlobClient(name)
	_, err = bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &contentType, BlobContentMD5: sum[:]},
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
			IfNoneMatch: to.Ptr(azcore.ETagAny),
		}},
		TransactionalValidation: blob.TransferValidationTypeMD5(sum[:]),
	})
	if err == nil {
		return true, nil
	}
	if !blobExists(err) {
		return false, blobFail(s.c, s.name, fmt.Sprintf("upload blob %s/%s", s.name, name), err)
	}
	theirs, size, err := s.existingMD5(ctx, bb, int64(len(data)))
	if err != nil {
		return false, blobFail(s.c, s.name, fmt.Sprintf("blob %s/%s exists; reading it", s.name, name), err)
	}
	if !bytes.Equal(theirs, sum[:]) {
		desc := fmt.Sprintf("%d bytes", size)
		if theirs != nil {
			desc += " with Content-MD5 " + base64.StdEncoding.EncodeToString(theirs)
		}
		return false, fmt.Errorf("blob %s/%s exists with %s, ours is %d bytes with Content-MD5 %s: %w",
			s.name, name, desc, len(data), base64.StdEncoding.EncodeToString(sum[:]), store.ErrBlobConflict)
	}
	return false, nil
}

// blobExists reports whether an If-None-Match: * upload failed because the
// blob exists (409 BlobAlreadyExists; some versions answer 412
// ConditionNotMet).
func blobExists(err error) bool {
	k := FaultOf(err).Kind
	return k == store.Exists || k == store.Changed
}

// existingMD5 returns the MD5 and size of the existing blob: its stored
// Content-MD5, or, when it has none, the MD5 of its bytes. A blob whose
// size differs from ours has a nil MD5 (it cannot be the same).
func (s *BlobStore) existingMD5(ctx context.Context, bb *blockblob.Client, ours int64) (sum []byte, size int64, err error) {
	props, err := bb.GetProperties(ctx, nil)
	if err != nil {
		return nil, 0, err
	}
	size = -1
	if props.ContentLength != nil {
		size = *props.ContentLength
	}
	if size != ours {
		return nil, size, nil
	}
	if len(props.ContentMD5) > 0 {
		return props.ContentMD5, size, nil
	}
	resp, err := bb.DownloadStream(ctx, nil)
	if err != nil {
		return nil, size, err
	}
	defer resp.Body.Close()
	h := md5.New() //nolint:gosec // see import
	if _, err := io.Copy(h, resp.Body); err != nil {
		return nil, size, err
	}
	return h.Sum(nil), size, nil
}
