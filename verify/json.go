package verify

import (
	"encoding/json"
	"io"
)

// JSON is the whole report as one indented JSON document, whose "type"
// ("verify") and "toolVersion" say what it is: the file is one
// document, not --output json lines.
type JSON struct{}

// Name is "json".
func (JSON) Name() string { return "json" }

// Exts is .json.
func (JSON) Exts() []string { return []string{".json"} }

// Write writes r with meta's tool version; it returns w's error.
func (JSON) Write(w io.Writer, r *Report, meta Meta) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Type        string `json:"type"`
		ToolVersion string `json:"toolVersion"`
		*Report
	}{"verify", meta.ToolVersion, r})
}
