package transform

// BlobName names one of the blobs an execution may have under
// {executionId}/ in container execution-data (SPEC §8).
type BlobName uint8

// The execution blobs, in the order SPEC §8 looks for a result.
const (
	BlobResultJSON BlobName = iota // result.json
	BlobResultHTML                 // result.html
	BlobResultText                 // result.txt
	BlobLogs                       // logs.json
	BlobVariables                  // variables.json
	BlobSnapshot                   // snapshot.json
	numBlobNames
)

var blobFiles = [numBlobNames]string{"result.json", "result.html", "result.txt", "logs.json", "variables.json", "snapshot.json"}

// File returns the blob's file name under {executionId}/, e.g. "result.json".
func (n BlobName) File() string {
	if n >= numBlobNames {
		return ""
	}
	return blobFiles[n]
}

// ParseBlobName returns the BlobName of a file name under {executionId}/
// ("result.json", "logs.json", …) and whether it is one of them.
func ParseBlobName(file string) (BlobName, bool) {
	for i, f := range blobFiles {
		if f == file {
			return BlobName(i), true
		}
	}
	return 0, false
}

// BlobFacts says which of an execution's blobs exist and their sizes, as
// learnt from a listing of container execution-data. The zero value means
// no blob exists. It is a small value (56 bytes) meant to be built per row
// by the caller from a compact listing; it is safe to copy.
type BlobFacts struct {
	present uint8
	size    [numBlobNames]int64
}

// Set records that the blob exists with the given size in bytes. Names
// outside the known set are ignored.
func (f *BlobFacts) Set(name BlobName, size int64) {
	if name >= numBlobNames {
		return
	}
	f.present |= 1 << name
	f.size[name] = size
}

// Size returns the blob's size and whether it exists.
func (f BlobFacts) Size(name BlobName) (int64, bool) {
	if name >= numBlobNames || f.present&(1<<name) == 0 {
		return 0, false
	}
	return f.size[name], true
}

// Exists reports whether the blob exists.
func (f BlobFacts) Exists(name BlobName) bool {
	_, ok := f.Size(name)
	return ok
}
