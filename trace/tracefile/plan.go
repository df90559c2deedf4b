package tracefile

import (
	"fmt"
	"io"
	"os"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/minimalloc"
)

// ReadPlan reads a plan in either form a plan comes in: a subarena-plan/v1 document, or a
// MiniMalloc CSV with an offset column (a MiniMalloc solution); name is used as the
// plan's trace name for a CSV.
func ReadPlan(r io.Reader, name string) (*trace.Plan, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", name, err)
	}
	if looksJSON(data) {
		return trace.ParsePlan(data)
	}
	mm, err := minimalloc.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", name, err)
	}
	p, ok := mm.Plan(name)
	if !ok {
		return nil, fmt.Errorf("plan %s: %w: a MiniMalloc CSV plan needs an offset column", name, trace.ErrMissingKey)
	}
	return p, nil
}

// LoadPlan reads the plan file at path (see ReadPlan).
func LoadPlan(path string) (*trace.Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadPlan(f, baseName(path))
}
