package transform

import (
	"bytes"
	"math"
	"testing"
)

// FuzzDecodeEntity checks that DecodeEntity's fast path, whenever it
// accepts an input, gives exactly what the encoding/json path gives.
func FuzzDecodeEntity(f *testing.F) {
	for _, s := range []string{
		benchExecutionRow,
		`{"odata.metadata":"x","odata.etag":"W/\"e\"","PartitionKey":"pk","RowKey":"rk","Timestamp":"2025-01-02T03:04:05.1234567Z","Int":5,"Dbl":5.0,"Exp":1e3}`,
		`{"NegZero@odata.type":"Edm.Double","NegZero":-0.0,"NaN@odata.type":"Edm.Double","NaN":"NaN","Inf@odata.type":"Edm.Double","Inf":"-Infinity"}`,
		`{"I64@odata.type":"Edm.Int64","I64":"-9223372036854775808","Big":2147483648,"Bin@odata.type":"Edm.Binary","Bin":"AAEC"}`,
		`{"Dt@odata.type":"Edm.DateTime","Dt":"2025-11-20T14:03:12.3456789+01:00","G@odata.type":"Edm.Guid","G":"0f8fad5b","S":"t\u00e9\n\"x\"","B":true}`,
		`{"A":1,"A":"x","A@odata.type":5,"odata.etag":1,"PartitionKey":"a","PartitionKey":"b"}`,
		`{"X@odata.type":"Edm.Int32","X":"7","Y@odata.type":"Edm.Boolean","Y":false} `,
		`{"Ünï":"\ud83d\ude00","K":"é"}`, `{}`, `null`, `{"a":1}x`, `{"a":{}}`, `{"a":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeEntityFast("T", data)
		if !ok {
			return
		}
		slow, err := decodeEntitySlow("T", data)
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", data, err)
		}
		if fast.Table != slow.Table || fast.PartitionKey != slow.PartitionKey || fast.RowKey != slow.RowKey ||
			fast.ETag != slow.ETag || fast.Timestamp != slow.Timestamp || len(fast.Props) != len(slow.Props) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", data, fast, slow)
		}
		for name, want := range slow.Props {
			got, ok := fast.Props[name]
			same := ok && got.Type == want.Type && got.Str == want.Str && got.Bool == want.Bool &&
				got.Int == want.Int && math.Float64bits(got.Double) == math.Float64bits(want.Double) &&
				got.Time == want.Time && bytes.Equal(got.Bytes, want.Bytes) && (got.Bytes == nil) == (want.Bytes == nil)
			if !same {
				t.Fatalf("%q: property %q fast %+v, encoding/json %+v", data, name, got, want)
			}
		}
	})
}
