package plan

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/subarena/subarena/trace"
)

// Document is the subarena-plan/v1 object WriteJSON prints: the keys the
// format defines, then informational ones readers ignore. A caller that
// ran the online replay beside the plan sets ReplayHWM before writing it.
type Document struct {
	Format     string  `json:"format"`
	Trace      string  `json:"trace"`
	Size       int64   `json:"size"`
	Policy     string  `json:"policy"`
	LowerBound int64   `json:"lower_bound"`
	Ms         float64 `json:"ms"`
	Method     string  `json:"method"`
	Proven     bool    `json:"proven"`
	// ReplayHWM is the online replay's high-water mark (omitted when 0:
	// not run, or not finished).
	ReplayHWM int64            `json:"replay_hwm,omitempty"`
	InPlace   int              `json:"in_place"`
	Relaid    []string         `json:"relaid,omitempty"`
	Offsets   map[string]int64 `json:"offsets"`
	// Placements is the format's key, written by trace.Placement's own
	// MarshalJSON.
	Placements map[string]trace.Placement `json:"placements,omitempty"`
}

// Document returns the plan as a subarena-plan/v1 document (format,
// trace, size, offsets, placements when there are any, lower_bound, ms)
// with the planner's informational keys: method, proven, in_place and
// relaid (the buffers with placements).
func (r Result) Document() (Document, error) {
	if r.Plan == nil {
		return Document{}, fmt.Errorf("empty result: %w", ErrInvalidOptions)
	}
	return Document{
		Format: trace.PlanFormat, Trace: r.Plan.Trace, Size: r.Plan.Size, Policy: r.Plan.Policy,
		LowerBound: r.LowerBound, Ms: r.Plan.Ms, Method: r.Method, Proven: r.Proven,
		InPlace: r.InPlace, Relaid: r.Relaid, Offsets: r.Plan.Offsets, Placements: r.Plan.Placements,
	}, nil
}

// Write writes d as one indented JSON document.
func (d Document) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// WriteJSON writes r.Document().
func (r Result) WriteJSON(w io.Writer) error {
	d, err := r.Document()
	if err != nil {
		return err
	}
	return d.Write(w)
}
