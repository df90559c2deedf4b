package plan

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/subarena/subarena/trace"
)

// planJSON is the subarena-plan/v1 object WriteJSON prints: the keys the
// format defines, then informational ones readers ignore.
type planJSON struct {
	Format     string           `json:"format"`
	Trace      string           `json:"trace"`
	Size       int64            `json:"size"`
	Policy     string           `json:"policy"`
	LowerBound int64            `json:"lower_bound"`
	Ms         float64          `json:"ms"`
	Method     string           `json:"method"`
	Proven     bool             `json:"proven"`
	ReplayHWM  int64            `json:"replay_hwm,omitempty"`
	InPlace    int              `json:"in_place"`
	Relaid     []string         `json:"relaid,omitempty"`
	Offsets    map[string]int64 `json:"offsets"`
	// Placements is the format's key, written by trace.Placement's own
	// MarshalJSON.
	Placements map[string]trace.Placement `json:"placements,omitempty"`
}

// WriteJSON writes the plan as one subarena-plan/v1 document (format,
// trace, size, offsets, placements when there are any, lower_bound, ms)
// with the planner's informational keys: method, proven, replay_hwm,
// in_place and relaid (the buffers with placements).
func (r Result) WriteJSON(w io.Writer) error {
	if r.Plan == nil {
		return fmt.Errorf("empty result: %w", ErrInvalidOptions)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(planJSON{
		Format: trace.PlanFormat, Trace: r.Plan.Trace, Size: r.Plan.Size, Policy: r.Plan.Policy,
		LowerBound: r.LowerBound, Ms: r.Plan.Ms, Method: r.Method, Proven: r.Proven,
		ReplayHWM: r.ReplayHWM, InPlace: r.InPlace, Relaid: r.Relaid, Offsets: r.Plan.Offsets,
		Placements: r.Plan.Placements,
	})
}
