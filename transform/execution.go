package transform

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxReverseTs is the constant of an execution RowKey's reverse timestamp:
// reverseTs = maxReverseTs − startedAt in Unix milliseconds.
const maxReverseTs = 9999999999999

// execution transforms an Entities row execution:{reverseTs}_{executionId}
// (SPEC §8) of kind k; rest is the RowKey after "execution:". Its id, the
// execution id, is checked against the RowKey, and its ttl, decided
// before the doc is built, may make it expired instead; its fields are
// the kind's.
func (b *builder) execution(k *kindSpec, rest string) {
	reverseTs, rkID, hasID := splitExecutionRowKey(rest)
	id := rkID
	if v, ok := b.prop("ExecutionId"); ok {
		if v.Type != EdmString && v.Type != EdmGuid {
			b.deadLetter("property ExecutionId is not a string")
			return
		}
		if hasID && v.Str != rkID {
			b.deadLetter(fmt.Sprintf("ExecutionId property %q differs from the RowKey's execution id %q", v.Str, rkID))
			return
		}
		id = v.Str
	}
	if id == "" {
		b.deadLetter("execution has no ExecutionId property and no execution id in its RowKey")
		return
	}
	scope := b.rowScope()

	var ttl int64
	switch b.opts.ExecutionTTL {
	case TTLFull:
		ttl = ExecutionRetention
	case TTLRemaining:
		since, ok := b.executionTime(reverseTs)
		if !ok {
			b.deadLetter("execution has no parseable CompletedAt or StartedAt and no start time in its RowKey, so its ttl cannot be computed")
			return
		}
		left := time.Duration(ExecutionRetention)*time.Second - b.opts.Now.Sub(since)
		if left < time.Second {
			sid, _, _ := SanitizeID(id)
			b.out.Disposition = DispositionExpired
			b.out.Container, b.out.ID, b.out.RawID, b.out.Scope = ContainerExecutions, sid, id, scope
			return
		}
		ttl = min(int64(left/time.Second), ExecutionRetention)
	}

	b.start(ContainerExecutions, id, scope, k.typeValue)
	b.writeFields(k, rest)
	b.extras()
	if b.opts.ExecutionTTL != TTLNone {
		b.set("ttl", ttl)
	}
}

// executionTime is when the execution's retention clock started: its
// CompletedAt, else its StartedAt, else the start time in its RowKey.
func (b *builder) executionTime(reverseTs string) (time.Time, bool) {
	for _, src := range []string{"CompletedAt", "StartedAt"} {
		v, ok := b.row.Props[src]
		if !ok {
			continue
		}
		switch v.Type {
		case EdmDateTime:
			return v.Time, true
		case EdmString:
			if t, ok := ParseTimestamp(v.Str); ok {
				return t, true
			}
		}
	}
	if len(reverseTs) == 13 {
		if n, err := strconv.ParseInt(reverseTs, 10, 64); err == nil {
			b.warn(ReasonStartFromRowKey, "CompletedAt and StartedAt absent or unparseable")
			return time.UnixMilli(maxReverseTs - n).UTC(), true
		}
	}
	return time.Time{}, false
}

// Result types and their blob files and content types.
var resultKinds = [...]struct {
	blob       BlobName
	typ, ctype string
}{
	{BlobResultJSON, "json", "application/json"},
	{BlobResultHTML, "html", "text/html; charset=utf-8"},
	{BlobResultText, "text", "text/plain; charset=utf-8"},
}

// result writes result, resultType, resultInBlob, resultSize and
// resultBlobPath (SPEC §8, rules 1–3 and the 32 KB rule; groupResult) of
// the execution whose id is the doc's raw id. They are one group because
// they follow from the Result and ResultInBlob properties and the blobs
// together: the result's text decides its type, its size whether it moves
// to a blob.
func (b *builder) result() {
	id := b.out.RawID
	inBlob := false
	if v, ok := b.prop("ResultInBlob"); ok {
		inBlob = (v.Type == EdmBoolean && v.Bool) || (v.Type == EdmString && strings.EqualFold(v.Str, "true"))
	}
	rv, hasResult := b.prop("Result")
	var (
		result   any
		typ      any
		size     any
		blobPath any
	)
	switch {
	case inBlob:
		if hasResult {
			b.warn(ReasonResultIgnored, "Result (ResultInBlob is true)")
		}
		for _, k := range resultKinds {
			if n, ok := b.blobs.Size(k.blob); ok {
				typ, size, blobPath = k.typ, n, id+"/"+k.blob.File()
				break
			}
		}
		if blobPath == nil {
			b.warn(ReasonMissingResultBlob, id+"/result.{json,html,txt}")
		}
	case hasResult:
		if rv.Type != EdmString {
			b.deadLetter("property Result is not a string")
			return
		}
		text := rv.Str
		k := resultKinds[2]
		dv, big, err := decodeJSONField(text)
		if err == nil {
			k, result = resultKinds[0], dv
			if big {
				b.warn(ReasonJSONBigInt, "Result")
			}
		} else {
			if t := strings.TrimSpace(text); strings.HasPrefix(t, "<") && strings.Contains(t, ">") {
				k = resultKinds[1]
			}
			result = text
		}
		typ, size = k.typ, int64(len(text))
		if len(text) > b.opts.BlobThreshold {
			path := id + "/" + k.blob.File()
			b.out.Uploads = append(b.out.Uploads, Upload{Path: path, Blob: k.blob, Data: []byte(text), ContentType: k.ctype})
			result, inBlob, blobPath = nil, true, path
		}
	}
	b.set("result", result)
	b.set("resultType", typ)
	b.set("resultInBlob", inBlob)
	b.set("resultSize", size)
	b.set("resultBlobPath", blobPath)
}

// legacyBlob writes the path of one of logs.json, variables.json,
// snapshot.json when it exists; a legacy inline property src is uploaded
// there when the blob does not exist, and never copied into the doc. The
// execution's id is the doc's raw id.
func (b *builder) legacyBlob(name, src string, blob BlobName) {
	id := b.out.RawID
	size, exists := b.blobs.Size(blob)
	v, has := b.prop(src)
	if has && v.Type != EdmString {
		b.deadLetter(fmt.Sprintf("property %s is not a string", src))
		return
	}
	has = has && v.Str != ""
	var path string
	if exists || has {
		path = id + "/" + blob.File()
	}
	switch {
	case exists:
		if has && size != int64(len(v.Str)) {
			b.warn(ReasonInlineDiffersFromBlob, src+" vs "+path)
		}
		b.set(name, path)
	case has:
		b.out.Uploads = append(b.out.Uploads, Upload{Path: path, Blob: blob, Data: []byte(v.Str), ContentType: "application/json"})
		b.set(name, path)
	default:
		b.set(name, nil)
	}
}
