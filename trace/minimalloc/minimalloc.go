package minimalloc

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"
)

// CSV is a MiniMalloc problem (github.com/google/minimalloc) as its CSV reader sees
// it: a header row naming the columns, then one row per buffer. Columns id, lower, upper
// and size are required; alignment, gaps and offset are understood; other columns (hint,
// ...) are accepted and ignored, as MiniMalloc does. Legacy headers map as MiniMalloc maps
// them: buffer and buffer_id to id, start and begin to lower, end to upper, where an end
// column is inclusive and gets 1 added (to gap ends too). A blank line ends the input.
type CSV struct {
	Buffers []Buffer
	// HasOffsets: the CSV has an offset column (it is a solution).
	HasOffsets bool
}

// Buffer is one row: a buffer live over the half-open time interval
// [Lower, Upper).
type Buffer struct {
	ID           string
	Lower, Upper int64
	Size         int64
	Alignment    int64 // 1 when the CSV has no alignment column
	Gaps         []Gap
	Offset       int64 // meaningful when CSV.HasOffsets
}

// Gap is a time window [Lower, Upper) in which the buffer is inactive, or, when
// Window is set, uses only bytes [WindowLo, WindowHi) of itself.
type Gap struct {
	Lower, Upper       int64
	Window             bool
	WindowLo, WindowHi int64
}

// Parse reads a MiniMalloc CSV. Errors match trace.ErrSyntax (malformed rows, integers),
// trace.ErrMissingKey (a required column), trace.ErrDuplicateName, trace.ErrInvalidSize
// (size <= 0, empty lifetime, alignment <= 0) or trace.ErrOverflow.
func Parse(data []byte) (*CSV, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		n := 1
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			if r == '\n' {
				n++
			}
			i += size
		}
		return nil, fmt.Errorf("%w: minimalloc: line %d: invalid UTF-8", trace.ErrSyntax, n)
	}
	m := &CSV{}
	col := map[string]int{}
	ncols := 0
	addend := int64(0)
	seen := map[string]bool{}
	line := 0
	for rest := data; len(rest) > 0; {
		var record []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			record, rest = rest[:i], rest[i+1:]
		} else {
			record, rest = rest, nil
		}
		record = bytes.TrimSuffix(record, []byte("\r"))
		line++
		if len(record) == 0 {
			break
		}
		fields := strings.Split(string(record), ",")
		if ncols == 0 {
			names, end := miniMallocColumns(fields)
			for i, name := range names {
				if _, dup := col[name]; dup {
					return nil, fmt.Errorf("minimalloc: %w: duplicate column %q", trace.ErrSyntax, name)
				}
				col[name] = i
			}
			if end {
				addend = 1
			}
			for _, req := range miniMallocRequired {
				if _, ok := col[req]; !ok {
					return nil, fmt.Errorf("minimalloc: %w: column %q", trace.ErrMissingKey, req)
				}
			}
			ncols = len(fields)
			_, m.HasOffsets = col["offset"]
			continue
		}
		if len(fields) != ncols {
			return nil, fmt.Errorf("minimalloc: line %d: %w: %d fields, header has %d", line, trace.ErrSyntax, len(fields), ncols)
		}
		b, err := parseMiniMallocRow(fields, col, addend)
		if err != nil {
			return nil, fmt.Errorf("minimalloc: line %d: %w", line, err)
		}
		if seen[b.ID] {
			return nil, fmt.Errorf("minimalloc: line %d: %w: id %q", line, trace.ErrDuplicateName, b.ID)
		}
		seen[b.ID] = true
		m.Buffers = append(m.Buffers, b)
	}
	if ncols == 0 {
		return nil, fmt.Errorf("minimalloc: %w: no header row", trace.ErrSyntax)
	}
	if err := m.checkLimits(); err != nil {
		return nil, err
	}
	return m, nil
}

// checkLimits refuses a CSV beyond the arena limit of its granule
// (trace.ArenaLimit; 4 GiB for granule 1, the granule of odd sizes) with an error
// matching trace.ErrLimit: a buffer larger than the limit, or buffers live at one time
// (their half-open lifetimes intersecting) that need more together. It is the limit
// Resolve applies to the trace the CSV becomes (Program), so a planner working on the
// CSV itself refuses what a replay of its trace refuses.
func (m *CSV) checkLimits() error {
	g := m.granule()
	if g <= 0 {
		return nil // Program refuses the alignments
	}
	type event struct{ time, bytes int64 }
	events := make([]event, 0, 2*len(m.Buffers))
	for i, b := range m.Buffers {
		if err := trace.CheckArenaBytes(fmt.Sprintf("buffer %q of %d B", b.ID, b.Size), b.Size, g); err != nil {
			return fmt.Errorf("minimalloc: line %d: %w", i+2, err)
		}
		events = append(events, event{b.Lower, b.Size}, event{b.Upper, -b.Size})
	}
	// Ends before starts at one time: lifetimes are half-open.
	slices.SortFunc(events, func(a, b event) int {
		if a.time != b.time {
			return cmp.Compare(a.time, b.time)
		}
		return cmp.Compare(a.bytes, b.bytes)
	})
	live := int64(0)
	for _, e := range events {
		live += e.bytes
		if err := trace.CheckArenaBytes(fmt.Sprintf("the buffers live at time %d, %d B together,", e.time, live), live, g); err != nil {
			return fmt.Errorf("minimalloc: %w", err)
		}
	}
	return nil
}

// miniMallocRequired are the columns every MiniMalloc CSV has.
var miniMallocRequired = []string{"id", "lower", "upper", "size"}

// miniMallocColumns maps header fields to column names as MiniMalloc does (legacy
// names: buffer and buffer_id are id, start and begin are lower, end is upper); end
// reports an inclusive end column.
func miniMallocColumns(fields []string) (names []string, end bool) {
	names = make([]string, len(fields))
	for i, name := range fields {
		name = strings.TrimSpace(name)
		switch name {
		case "begin", "start":
			name = "lower"
		case "buffer", "buffer_id":
			name = "id"
		case "end":
			name = "upper"
			end = true
		}
		names[i] = name
	}
	return names, end
}

// Header reads line, the first line of a text, as a MiniMalloc header: how many columns
// it has and which required ones it lacks (none: it is a MiniMalloc header). A reader that
// detects formats by content (package trace/tracefile) tells a MiniMalloc CSV by it.
func Header(line string) (cols int, missing []string) {
	names, _ := miniMallocColumns(strings.Split(line, ","))
	for _, req := range miniMallocRequired {
		if !slices.Contains(names, req) {
			missing = append(missing, req)
		}
	}
	return len(names), missing
}

func parseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("%w: %q", trace.ErrOverflow, s)
		}
		return 0, fmt.Errorf("%w: improperly formed integer %q", trace.ErrSyntax, s)
	}
	return v, nil
}

func parseMiniMallocRow(fields []string, col map[string]int, addend int64) (Buffer, error) {
	b := Buffer{ID: strings.TrimSpace(fields[col["id"]]), Alignment: 1}
	var err error
	if b.Lower, err = parseInt(fields[col["lower"]]); err != nil {
		return b, err
	}
	if b.Upper, err = parseInt(fields[col["upper"]]); err != nil {
		return b, err
	}
	if b.Size, err = parseInt(fields[col["size"]]); err != nil {
		return b, err
	}
	var ok bool
	if b.Upper, ok = checked.Add(b.Upper, addend); !ok {
		return b, fmt.Errorf("%w: upper", trace.ErrOverflow)
	}
	if b.ID == "" {
		return b, fmt.Errorf("%w: empty id", trace.ErrInvalidName)
	}
	if b.Size <= 0 {
		return b, fmt.Errorf("%w: buffer %q has size %d", trace.ErrInvalidSize, b.ID, b.Size)
	}
	if b.Lower >= b.Upper {
		return b, fmt.Errorf("%w: buffer %q has the empty lifetime [%d, %d)", trace.ErrInvalidSize, b.ID, b.Lower, b.Upper)
	}
	if i, ok := col["alignment"]; ok {
		if b.Alignment, err = parseInt(fields[i]); err != nil {
			return b, err
		}
		if b.Alignment <= 0 {
			return b, fmt.Errorf("%w: buffer %q has alignment %d", trace.ErrInvalidSize, b.ID, b.Alignment)
		}
	}
	if i, ok := col["gaps"]; ok {
		if b.Gaps, err = parseGaps(fields[i], addend); err != nil {
			return b, fmt.Errorf("buffer %q: %w", b.ID, err)
		}
	}
	if i, ok := col["offset"]; ok {
		if b.Offset, err = parseInt(fields[i]); err != nil {
			return b, err
		}
	}
	return b, nil
}

// parseGaps reads "a-b a-b@x:y ...".
func parseGaps(s string, addend int64) ([]Gap, error) {
	var gaps []Gap
	for _, g := range strings.Fields(s) {
		at := strings.Split(g, "@")
		pair := strings.Split(at[0], "-")
		if len(pair) != 2 || len(at) > 2 {
			return nil, fmt.Errorf("%w: improperly formed gap %q", trace.ErrSyntax, g)
		}
		var gap Gap
		var err error
		if gap.Lower, err = parseInt(pair[0]); err != nil {
			return nil, err
		}
		if gap.Upper, err = parseInt(pair[1]); err != nil {
			return nil, err
		}
		var ok bool
		if gap.Upper, ok = checked.Add(gap.Upper, addend); !ok {
			return nil, fmt.Errorf("%w: gap %q", trace.ErrOverflow, g)
		}
		if len(at) == 2 {
			w := strings.Split(at[1], ":")
			if len(w) != 2 {
				return nil, fmt.Errorf("%w: improperly formed gap %q", trace.ErrSyntax, g)
			}
			gap.Window = true
			if gap.WindowLo, err = parseInt(w[0]); err != nil {
				return nil, err
			}
			if gap.WindowHi, err = parseInt(w[1]); err != nil {
				return nil, err
			}
		}
		gaps = append(gaps, gap)
	}
	return gaps, nil
}

// Format is the name tracefile.Detect gives a MiniMalloc CSV.
const Format = "minimalloc-csv"

// Engine is the one engine of a trace imported from a MiniMalloc CSV.
const Engine = "compute"

// Trace turns the problem into a one-engine trace, as docs/TRACE.md's importer section says:
// one op per distinct lower value, in time order (times are compressed to those values;
// the op at time t is named "t<t>"). Buffer b is allocated just before the op at b.Lower,
// written by it, read by the op at the last lower value below b.Upper, and released after
// that op. Two buffers then share an op interval exactly when their half-open lifetimes
// intersect, as in MiniMalloc.
//
// The granule is the largest power of two, at most trace.DefaultGranule, dividing every
// size, raised to the largest alignment (which must then be a power of two), so sizes
// lose nothing to rounding. Gaps are ignored: the buffer is treated as live through them,
// which is conservative (a plan safe without gaps is safe with them).
func (m *CSV) Trace(name string) (*trace.Trace, error) {
	p, err := m.Program(name)
	if err != nil {
		return nil, err
	}
	return p.Trace, nil
}

// Program is Trace followed by Resolve, at the cost of Trace alone: validating the trace
// resolves it, and the Program that validation built is the one returned.
func (m *CSV) Program(name string) (*trace.Program, error) {
	times := make([]int64, 0, len(m.Buffers))
	for _, b := range m.Buffers {
		times = append(times, b.Lower)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	first := make([][]int, len(times)) // buffers allocated before / written by op k
	last := make([][]int, len(times))  // buffers read by / released after op k
	for i, b := range m.Buffers {
		lo := sort.Search(len(times), func(k int) bool { return times[k] >= b.Lower })
		hi := sort.Search(len(times), func(k int) bool { return times[k] >= b.Upper }) - 1
		first[lo] = append(first[lo], i)
		last[hi] = append(last[hi], i)
	}
	t := &trace.Trace{Name: name, Granule: m.granule(), Engines: []string{Engine}}
	if t.Granule <= 0 {
		return nil, fmt.Errorf("minimalloc: %w: alignments must be powers of two", trace.ErrInvalidGranule)
	}
	for k, time := range times {
		op := trace.Step{Kind: trace.KindOp, Name: "t" + strconv.FormatInt(time, 10), Engine: Engine, Cost: trace.DefaultCost}
		for _, i := range first[k] {
			b := m.Buffers[i]
			t.Steps = append(t.Steps, trace.Step{Kind: trace.KindAlloc, Name: b.ID, Size: b.Size, Engine: Engine})
			op.Writes = append(op.Writes, b.ID)
		}
		for _, i := range last[k] {
			op.Reads = append(op.Reads, m.Buffers[i].ID)
		}
		t.Steps = append(t.Steps, op)
		for _, i := range last[k] {
			t.Steps = append(t.Steps, trace.Step{Kind: trace.KindRelease, Name: m.Buffers[i].ID})
		}
	}
	p, err := t.Resolve()
	if err != nil {
		return nil, fmt.Errorf("minimalloc: %w", err)
	}
	return p, nil
}

func (m *CSV) granule() int64 {
	g := int64(trace.DefaultGranule)
	for _, b := range m.Buffers {
		for b.Size%g != 0 {
			g >>= 1
		}
	}
	for _, b := range m.Buffers {
		if b.Alignment&(b.Alignment-1) != 0 {
			return 0
		}
		g = max(g, b.Alignment)
	}
	return g
}

// Plan returns the solution carried by an offset column, if the CSV has one; its size
// is the highest end offset.
func (m *CSV) Plan(traceName string) (*trace.Plan, bool) {
	if !m.HasOffsets {
		return nil, false
	}
	p := &trace.Plan{Trace: traceName, Offsets: make(map[string]int64, len(m.Buffers))}
	for _, b := range m.Buffers {
		p.Offsets[b.ID] = b.Offset
		if end, ok := checked.Add(b.Offset, b.Size); ok && end > p.Size {
			p.Size = end
		}
	}
	return p, true
}

// Import parses a MiniMalloc CSV and turns it into a trace (CSV.Trace).
func Import(data []byte, name string) (*trace.Trace, error) {
	m, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return m.Trace(name)
}

// Write exports the buffers of p as a MiniMalloc CSV, with an offset column when
// plan is not nil (the form of a MiniMalloc solution). Time is the op's position in
// submission order: a buffer lives over [first op using it, last op using it + 1); a
// buffer no op uses lives over [k, k+1) for the k-th op submitted after its alloc. This is
// program order: on a multi-engine trace it is an interval approximation of the
// happens-before lifetimes that check.Plan uses. Externals are not exported.
func Write(w io.Writer, p *trace.Program, plan *trace.Plan) error {
	lower := make([]int64, len(p.Buffers))
	upper := make([]int64, len(p.Buffers))
	for i := range lower {
		lower[i] = -1
	}
	for k, op := range p.Ops {
		for _, u := range op.Uses {
			b := u.Ref.Buffer
			if lower[b] < 0 {
				lower[b] = int64(k)
			}
			upper[b] = int64(k) + 1
		}
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("id,lower,upper,size")
	if plan != nil {
		bw.WriteString(",offset")
	}
	bw.WriteString("\n")
	for i := range p.Buffers {
		b := &p.Buffers[i]
		if b.External {
			continue
		}
		if strings.ContainsAny(b.Name, ",\n\r") {
			return fmt.Errorf("minimalloc: %w: buffer name %q cannot be written to a CSV", trace.ErrInvalidName, b.Name)
		}
		if lower[i] < 0 {
			k := int64(sort.Search(len(p.Ops), func(j int) bool { return p.Ops[j].Step > b.Step }))
			lower[i], upper[i] = k, k+1
		}
		fmt.Fprintf(bw, "%s,%d,%d,%d", b.Name, lower[i], upper[i], b.Size)
		if plan != nil {
			off, ok := plan.Offsets[b.Name]
			if !ok {
				return fmt.Errorf("minimalloc: %w: buffer %q has no offset", trace.ErrPlan, b.Name)
			}
			fmt.Fprintf(bw, ",%d", off)
		}
		bw.WriteString("\n")
	}
	return bw.Flush()
}
