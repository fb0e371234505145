package azure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// BlobWriter uploads whole blobs into one container. It is used by the
// fixtures loader and tests. It is safe for concurrent use.
type BlobWriter struct {
	c    *container.Client
	name string
}

// NewBlobWriter returns a writer for containerName in the account; o is as
// for NewBlobContainerClient.
func NewBlobWriter(a StorageAccount, containerName string, o Options) (*BlobWriter, error) {
	c, err := NewBlobContainerClient(a, containerName, o)
	if err != nil {
		return nil, err
	}
	return &BlobWriter{c: c, name: containerName}, nil
}

// CreateContainer creates the container unless it exists. Errors name the
// container.
func (w *BlobWriter) CreateContainer(ctx context.Context) error {
	return createContainer(ctx, w.c, w.name)
}

// Upload writes data to the blob at name (a path inside the container),
// replacing any blob there, with a Content-Type from its extension. Errors
// are *ResourceError naming the container and blob.
func (w *BlobWriter) Upload(ctx context.Context, name string, data []byte) error {
	ct := contentType(name)
	_, err := w.c.NewBlockBlobClient(name).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &ct},
	})
	if err != nil {
		return blobFail(w.c, w.name, fmt.Sprintf("upload blob %s/%s", w.name, name), err)
	}
	return nil
}

// Delete removes the container; a missing container is not an error. Tests
// use it to clean up.
func (w *BlobWriter) Delete(ctx context.Context) error {
	_, err := w.c.Delete(ctx, nil)
	var re *azcore.ResponseError
	if err != nil && errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete blob container %s: %w", w.name, ScrubError(err))
	}
	return nil
}

// contentType is the Content-Type Bifrost gives its execution blobs.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".json":
		return "application/json"
	case ".html":
		return "text/html; charset=utf-8"
	case ".txt":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}
