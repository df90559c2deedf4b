package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace/internal/tracejson"
)

// PlanFormat is the value of the "format" key of a subarena-plan/v1 document.
const PlanFormat = "subarena-plan/v1"

// Plan assigns each buffer of a trace an offset in one arena of Size bytes:
//
//	{"format": "subarena-plan/v1", "trace": NAME, "size": HWM, "offsets": {"qkv": 0, "tmp": 8192}}
//
// or, instead of an offset, a placement over a strided footprint of another buffer
// (optional key "placements", see Placement). Policy, LowerBound and Ms are informational
// ("policy", "lower_bound", "ms"); other keys are ignored on reading, as the format asks.
type Plan struct {
	// Trace is the name of the trace the plan is for.
	Trace string
	// Size is the arena size the plan needs: the highest end offset.
	Size int64
	// Offsets maps every alloc buffer of the trace that has no placement to its first byte
	// in the arena.
	Offsets map[string]int64
	// Placements maps each remaining alloc buffer to the footprint of another buffer it is
	// laid over (nil or empty for a plan of offsets only).
	Placements map[string]Placement
	// Policy names the release policy or planner that produced the plan ("" if none).
	Policy string
	// LowerBound is a lower bound on Size for the trace (0 if unknown).
	LowerBound int64
	// Ms is the time the plan took to compute, in milliseconds (0 if unknown).
	Ms float64
}

// ParsePlan reads one subarena-plan/v1 document. Unknown keys are ignored; a missing or
// malformed format, trace, size or offsets key is an error matching ErrSyntax,
// ErrMissingKey or ErrFormat. The optional "placements" key is read strictly: each entry
// must be an object with exactly the keys of, offset, shape, strides and elem (errors
// match ErrPlacement and ErrSyntax, ErrUnknownKey, ErrMissingKey or ErrOverflow). Whether
// the plan fits a trace is CheckPlan's business.
func ParsePlan(data []byte) (*Plan, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("plan: %w: invalid UTF-8", ErrSyntax)
	}
	obj, err := readObject(data)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	need := func(key string) (json.RawMessage, error) {
		raw, ok := obj.get(key)
		if !ok {
			return nil, fmt.Errorf("plan: %w: %s", ErrMissingKey, key)
		}
		return raw, nil
	}
	raw, err := need("format")
	if err != nil {
		return nil, err
	}
	format, err := jsonString(raw)
	if err != nil {
		return nil, fmt.Errorf("plan: format: %w", err)
	}
	if format != PlanFormat {
		return nil, fmt.Errorf("plan: %w: %q is not %q", ErrFormat, format, PlanFormat)
	}
	p := &Plan{Offsets: map[string]int64{}}
	if raw, err = need("trace"); err != nil {
		return nil, err
	}
	if p.Trace, err = jsonString(raw); err != nil {
		return nil, fmt.Errorf("plan: trace: %w", err)
	}
	if raw, err = need("size"); err != nil {
		return nil, err
	}
	if p.Size, err = jsonInt(raw); err != nil {
		return nil, fmt.Errorf("plan: size: %w", err)
	}
	if raw, err = need("offsets"); err != nil {
		return nil, err
	}
	offsets, err := readObject(raw)
	if err != nil {
		return nil, fmt.Errorf("plan: offsets: %w", err)
	}
	for _, f := range offsets {
		if p.Offsets[f.key], err = jsonInt(f.raw); err != nil {
			return nil, fmt.Errorf("plan: offset of %q: %w", f.key, err)
		}
	}
	if raw, ok := obj.get("placements"); ok {
		if p.Placements, err = parsePlacements(raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := obj.get("policy"); ok && !isNull(raw) {
		if p.Policy, err = jsonString(raw); err != nil {
			return nil, fmt.Errorf("plan: policy: %w", err)
		}
	}
	if raw, ok := obj.get("lower_bound"); ok && !isNull(raw) {
		if p.LowerBound, err = jsonInt(raw); err != nil {
			return nil, fmt.Errorf("plan: lower_bound: %w", err)
		}
	}
	if raw, ok := obj.get("ms"); ok && !isNull(raw) {
		if p.Ms, err = jsonFloat(raw); err != nil {
			return nil, fmt.Errorf("plan: ms: %w", err)
		}
	}
	return p, nil
}

// WritePlan writes p as a subarena-plan/v1 document, offsets and placements sorted by name
// (the placements key only when there are placements).
func WritePlan(w io.Writer, p *Plan) error {
	var b bytes.Buffer
	b.WriteString("{\n")
	b.WriteString(`  "format": ` + tracejson.Quote(PlanFormat) + ",\n")
	b.WriteString(`  "trace": ` + tracejson.Quote(p.Trace) + ",\n")
	b.WriteString(`  "size": ` + strconv.FormatInt(p.Size, 10) + ",\n")
	if p.Policy != "" {
		b.WriteString(`  "policy": ` + tracejson.Quote(p.Policy) + ",\n")
	}
	if p.LowerBound != 0 {
		b.WriteString(`  "lower_bound": ` + strconv.FormatInt(p.LowerBound, 10) + ",\n")
	}
	if p.Ms != 0 && !math.IsNaN(p.Ms) && !math.IsInf(p.Ms, 0) {
		b.WriteString(`  "ms": ` + strconv.FormatFloat(p.Ms, 'g', -1, 64) + ",\n")
	}
	b.WriteString(`  "offsets": {`)
	names := make([]string, 0, len(p.Offsets))
	for n := range p.Offsets {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    " + tracejson.Quote(n) + ": " + strconv.FormatInt(p.Offsets[n], 10))
	}
	if len(names) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("}")
	if len(p.Placements) > 0 {
		b.WriteString(",\n")
		writePlacements(&b, p.Placements)
	}
	b.WriteString("\n}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// Equal reports whether p and o carry the same fields, offsets and placements.
func (p *Plan) Equal(o *Plan) bool {
	if p == nil || o == nil {
		return p == o
	}
	if p.Trace != o.Trace || p.Size != o.Size || p.Policy != o.Policy || p.LowerBound != o.LowerBound ||
		p.Ms != o.Ms || len(p.Offsets) != len(o.Offsets) || len(p.Placements) != len(o.Placements) {
		return false
	}
	for k, v := range p.Offsets {
		if w, ok := o.Offsets[k]; !ok || w != v {
			return false
		}
	}
	for k, v := range p.Placements {
		if w, ok := o.Placements[k]; !ok || !w.Equal(v) {
			return false
		}
	}
	return true
}

// CheckPlan reports whether plan fits program: every alloc buffer has either an offset or
// a placement, every offset names an alloc buffer, offsets are >= 0 and each buffer ends
// within plan.Size, and every placement is valid (see Placement): its buffer and host are
// alloc buffers, the host has an offset and is allocated first, and the footprint lies in
// the host, is one-to-one, has the buffer's element count and size, and carries every view
// of the buffer, and plan.Size is within the arena limit (ArenaLimit). The error matches
// ErrPlan (and ErrPlacement for a bad placement, ErrLimit for a size beyond the limit).
func CheckPlan(p *Program, plan *Plan) error {
	_, err := fitPlan(p, plan)
	return err
}

// fitPlan is CheckPlan, returning the resolved placements (nil when there are none).
func fitPlan(p *Program, plan *Plan) (*placements, error) {
	if err := CheckArenaBytes(fmt.Sprintf("the plan's size of %d B", plan.Size), plan.Size, p.Trace.Granule); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlan, err)
	}
	seen := 0
	for i := range p.Buffers {
		b := &p.Buffers[i]
		off, ok := plan.Offsets[b.Name]
		if b.External {
			if ok {
				return nil, fmt.Errorf("%w: %q is an external buffer and is not placed", ErrPlan, b.Name)
			}
			continue
		}
		if !ok {
			if _, placed := plan.Placements[b.Name]; placed {
				continue
			}
			return nil, fmt.Errorf("%w: buffer %q has no offset", ErrPlan, b.Name)
		}
		seen++
		if off < 0 {
			return nil, fmt.Errorf("%w: buffer %q at negative offset %d", ErrPlan, b.Name, off)
		}
		end, ok := checked.Add(off, b.Size)
		if !ok || end > plan.Size {
			return nil, fmt.Errorf("%w: buffer %q [%d, %d+%d) ends beyond the plan's size %d",
				ErrPlan, b.Name, off, off, b.Size, plan.Size)
		}
	}
	if seen != len(plan.Offsets) {
		for n := range plan.Offsets {
			if _, ok := p.Lookup(n); !ok {
				return nil, fmt.Errorf("%w: offset for %q, which is no buffer of the trace", ErrPlan, n)
			}
			if r, _ := p.Lookup(n); r.View >= 0 {
				return nil, fmt.Errorf("%w: offset for %q, which is a view", ErrPlan, n)
			}
		}
	}
	return resolvePlacements(p, plan)
}

// MarshalJSON renders p as its subarena-plan/v1 document.
func (p *Plan) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := WritePlan(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
