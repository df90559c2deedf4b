package bench

import (
	"fmt"
	"sort"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// Segment is one rectangle of a memory timeline: arena bytes [Lo, Hi)
// occupied over host steps [From, To).
type Segment struct {
	Buffer   string
	Lo, Hi   int64
	From, To int
	// Pending marks bytes the program has let go that still wait for
	// users not yet observed complete (drawn hatched).
	Pending bool
}

// Timeline is a memory timeline in host program order: x is the step
// index, y the arena offset.
type Timeline struct {
	Trace, Policy string
	Steps         int
	HWM           int64
	// HighWater[i] is the high-water mark after step i.
	HighWater []int64
	Segments  []Segment
}

// ReplayTimeline builds the timeline of a replay: every buffer's bytes
// from its alloc step to the step that lets them go (release or discard),
// then, hatched, while an op that uses them is not yet observed complete —
// per byte under the subrange policies, for the whole piece under the
// whole ones, not at all under ir-order — or until a later buffer takes
// them (fenced hand-over).
func ReplayTimeline(p *trace.Program, res *trace.ReplayResult) (*Timeline, error) {
	offsets := make(map[string]int64, len(res.Lifetimes))
	for _, lt := range res.Lifetimes {
		offsets[lt.Buffer] = lt.Offset
	}
	hw := make([]int64, len(res.Steps))
	for i, s := range res.Steps {
		hw[i] = s.HighWater
	}
	return buildTimeline(p, offsets, res.Policy, res.HWM, hw)
}

// PlanTimeline builds the timeline of a plan: offsets from the plan,
// lifetimes as ReplayTimeline draws them under the whole-after-users
// policy (the lifetimes a plan implies without a replay).
func PlanTimeline(p *trace.Program, plan *trace.Plan) (*Timeline, error) {
	if err := trace.CheckPlan(p, plan); err != nil {
		return nil, err
	}
	hw := make([]int64, len(p.Trace.Steps))
	g := p.Trace.Granule
	var top int64
	for i, s := range p.Trace.Steps {
		if s.Kind == trace.KindAlloc {
			b := p.StepIndex[i]
			end := plan.Offsets[p.Buffers[b].Name] + p.Buffers[b].Size
			top = max(top, (end+g-1)&^(g-1))
		}
		hw[i] = top
	}
	return buildTimeline(p, plan.Offsets, subarena.WholeAfterUsers, top, hw)
}

func buildTimeline(p *trace.Program, offsets map[string]int64, pol subarena.Policy, hwm int64, hw []int64) (*Timeline, error) {
	tl, err := newTimeline(p)
	if err != nil {
		return nil, err
	}
	n := len(p.Trace.Steps)
	t := &Timeline{Trace: p.Trace.Name, Policy: pol.String(), Steps: n, HWM: hwm, HighWater: hw}
	whole := pol == subarena.WholeAfterUsers || pol == subarena.WholeFenced
	// placedAt lists alloc buffers by step, to clip pending bytes at the
	// first later buffer that takes them.
	type placedBuf struct {
		step   int
		lo, hi int64
	}
	var placed []placedBuf
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		off, ok := offsets[buf.Name]
		if !ok {
			return nil, fmt.Errorf("%w: buffer %q has no offset", trace.ErrPlan, buf.Name)
		}
		placed = append(placed, placedBuf{buf.Step, off, off + buf.Size})
	}
	sort.Slice(placed, func(i, j int) bool { return placed[i].step < placed[j].step })
	takenAt := func(r ranges.Range, from, to int) int {
		i := sort.Search(len(placed), func(i int) bool { return placed[i].step > from })
		for ; i < len(placed) && placed[i].step < to; i++ {
			if placed[i].lo < r.Hi && r.Lo < placed[i].hi {
				return placed[i].step
			}
		}
		return to
	}
	// In-place hand-overs: the donated buffer starts at the op, and the
	// donor's bytes it took end there.
	cuts := findDonations(p, offsets)
	births := deferredBirths(p)
	given := make(map[int][]donationCut)
	for _, c := range cuts {
		given[c.Donor] = append(given[c.Donor], c)
	}
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		off := offsets[buf.Name]
		from := buf.Step
		if s, ok := births[b]; ok {
			from = s
		}
		for _, pc := range pieces(p, b) {
			for _, c := range given[b] {
				gv := ranges.FromRanges(ranges.Range{Lo: c.Lo - off, Hi: c.Hi - off})
				in := ranges.Intersect(&pc.bytes, &gv)
				for _, r := range in.Runs() {
					t.Segments = append(t.Segments, Segment{Buffer: buf.Name, Lo: off + r.Lo, Hi: off + r.Hi,
						From: from, To: min(c.Step, pc.death)})
				}
				pc.bytes.RemoveSet(&in)
			}
			for _, r := range pc.bytes.Runs() {
				t.Segments = append(t.Segments, Segment{Buffer: buf.Name, Lo: off + r.Lo, Hi: off + r.Hi,
					From: from, To: pc.death})
			}
			if pc.death >= n || pol == subarena.IROrder {
				continue
			}
			// held[k] = bytes of the piece op k still pins after the piece dies.
			var wholeTo int
			var held []struct {
				set ranges.Set
				to  int
			}
			for _, u := range tl.usesOf[b] {
				if !tl.pendingAt(u.op, pc.death) {
					continue
				}
				fp, _ := p.Footprint(u.ref)
				in := ranges.Intersect(&fp, &pc.bytes)
				if in.IsEmpty() {
					continue
				}
				wholeTo = max(wholeTo, tl.observed[u.op])
				held = append(held, struct {
					set ranges.Set
					to  int
				}{in, tl.observed[u.op]})
			}
			if whole && wholeTo > 0 {
				held = held[:0]
				held = append(held, struct {
					set ranges.Set
					to  int
				}{pc.bytes, wholeTo})
			}
			for _, h := range held {
				for _, r := range h.set.Runs() {
					ar := ranges.Range{Lo: off + r.Lo, Hi: off + r.Hi}
					to := takenAt(ar, pc.death, min(h.to, n))
					if to > pc.death {
						t.Segments = append(t.Segments, Segment{Buffer: buf.Name, Lo: ar.Lo, Hi: ar.Hi,
							From: pc.death, To: to, Pending: true})
					}
				}
			}
		}
	}
	return t, nil
}

// piece is a part of a buffer the host lets go at one step (death; the
// number of steps when held to the end).
type piece struct {
	bytes ranges.Set // buffer-relative
	death int
}

// pieces partitions buffer b by the step that lets each byte go: each
// discarded view's bytes (not discarded before), then the rest at the
// release.
func pieces(p *trace.Program, b int) []piece {
	buf := &p.Buffers[b]
	n := len(p.Trace.Steps)
	rest := ranges.FromRanges(ranges.Range{Lo: 0, Hi: buf.Size})
	var out []piece
	for _, d := range buf.Discards {
		v := &p.Views[d]
		fp, exact := p.Footprint(trace.Ref{Buffer: b, View: d})
		if !exact {
			continue // replay keeps such bytes until the buffer goes
		}
		in := ranges.Intersect(&fp, &rest)
		if in.IsEmpty() {
			continue
		}
		rest.RemoveSet(&in)
		out = append(out, piece{bytes: in, death: v.Discard})
	}
	death := buf.Release
	if death < 0 {
		death = n
	}
	if !rest.IsEmpty() {
		out = append(out, piece{bytes: rest, death: death})
	}
	return out
}

// CheckInvariants verifies what every Timeline must satisfy, returning the
// first violation:
//   - every segment is non-empty, lies in [0, HWM) and in steps [0, Steps];
//   - at no step do two live segments of different buffers share a byte
//     (live bytes are owned by one buffer at a time);
//   - HighWater has one entry per step, never decreases and ends at HWM.
func (t *Timeline) CheckInvariants() error {
	for i, s := range t.Segments {
		if s.Lo < 0 || s.Hi <= s.Lo || s.Hi > t.HWM || s.From < 0 || s.To < s.From || s.To > t.Steps {
			return fmt.Errorf("bench: timeline segment %d %+v outside [0, %d) × [0, %d]", i, s, t.HWM, t.Steps)
		}
	}
	if len(t.HighWater) != t.Steps {
		return fmt.Errorf("bench: timeline has %d high-water entries for %d steps", len(t.HighWater), t.Steps)
	}
	for i := 1; i < len(t.HighWater); i++ {
		if t.HighWater[i] < t.HighWater[i-1] {
			return fmt.Errorf("bench: high-water mark falls at step %d", i)
		}
	}
	if n := len(t.HighWater); n > 0 && t.HighWater[n-1] != t.HWM {
		return fmt.Errorf("bench: high-water mark ends at %d, HWM is %d", t.HighWater[n-1], t.HWM)
	}
	// Sweep the steps: live segments sorted by start step, an active set
	// checked for overlap on insertion.
	live := make([]Segment, 0, len(t.Segments))
	for _, s := range t.Segments {
		if !s.Pending && s.To > s.From {
			live = append(live, s)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].From < live[j].From })
	var active []Segment
	for _, s := range live {
		kept := active[:0]
		for _, a := range active {
			if a.To > s.From {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			if a.Buffer != s.Buffer && a.Lo < s.Hi && s.Lo < a.Hi {
				return fmt.Errorf("bench: buffers %s and %s both hold [%d, %d) at step %d", a.Buffer, s.Buffer,
					max(a.Lo, s.Lo), min(a.Hi, s.Hi), s.From)
			}
		}
		active = append(active, s)
	}
	return nil
}
