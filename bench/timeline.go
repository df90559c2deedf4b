package bench

import (
	"fmt"
	"sort"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/replay"
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
	// Host names the buffer this one is laid over when its plan gives it a
	// placement instead of an offset (its bytes are part of the host's);
	// empty otherwise.
	Host string
	// Index is the buffer's index in the Program's Buffers.
	Index int
	// Holder is the view (an index in the Program's Views) whose discard
	// lets these bytes go, or -1 when the buffer's release does (or
	// nothing does: the buffer is held to the end).
	Holder int
	// Pins are, for a pending segment, the uses that keep its bytes from
	// going back: ops not yet observed complete and the buffer or view each
	// names. Empty for a live segment.
	Pins []Pin
}

// Pin is one op's use that keeps let-go bytes pending: Op indexes the
// Program's Ops, Ref is the buffer or view the op names.
type Pin struct {
	Op  int
	Ref trace.Ref
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
func ReplayTimeline(p *trace.Program, res *replay.Result) (*Timeline, error) {
	offsets := make(map[string]int64, len(res.Lifetimes))
	for _, lt := range res.Lifetimes {
		offsets[lt.Buffer] = lt.Offset
	}
	fr, err := offsetFrame(p, offsets)
	if err != nil {
		return nil, err
	}
	hw := make([]int64, len(res.Steps))
	for i, s := range res.Steps {
		hw[i] = s.HighWater
	}
	return buildTimeline(p, fr, res.Policy, res.HWM, hw)
}

// PlanTimeline builds the timeline of a plan: offsets from the plan,
// lifetimes as ReplayTimeline draws them under the whole-after-users
// policy (the lifetimes a plan implies without a replay). Its Policy, the
// picture's label, is "plan", or "plan by P" for a plan file that names
// the policy P that made it.
//
// A buffer the plan lays over a strided footprint of its host
// (trace.Plan.Placements) is drawn at that footprint: one rectangle per
// contiguous run of the footprint's arena bytes (inside the host's range,
// never at the offset 0 the buffer does not have), its segments naming the
// host (Segment.Host), which WriteSVG outlines with a dashed border. It
// holds those bytes from its first op, where it takes them over from the
// host or from the buffer placed over them before it (the host's bytes
// under the footprint end there), to the step that lets them go, as the
// checker orders a host and the buffers placed over it.
func PlanTimeline(p *trace.Program, plan *trace.Plan) (*Timeline, error) {
	fr, err := planFrame(p, plan)
	if err != nil {
		return nil, err
	}
	hw := make([]int64, len(p.Trace.Steps))
	g := p.Trace.Granule
	var top int64
	for i, s := range p.Trace.Steps {
		if s.Kind == trace.KindAlloc {
			b := p.StepIndex[i]
			bytes := fr.bytes(b)
			end := fr.off[b] + bytes.Bounds().Hi
			top = max(top, (end+g-1)&^(g-1))
		}
		hw[i] = top
	}
	tl, err := buildTimeline(p, fr, subarena.WholeAfterUsers, top, hw)
	if err != nil {
		return nil, err
	}
	// Title the picture by what it shows: a plan (and the policy that made
	// it, when the plan file says), not the policy its lifetimes are drawn
	// with.
	tl.Policy = "plan"
	if plan.Policy != "" {
		tl.Policy += " by " + plan.Policy
	}
	return tl, nil
}

// frame places every alloc buffer's bytes in the arena: footprints are
// relative to off[b], the buffer's own offset or, when a plan lays it over
// a footprint of its host, the host's; host[b] is that host (-1: none).
type frame struct {
	off  []int64
	host []int
	fp   func(r trace.Ref) (ranges.Set, bool) // relative to off[r.Buffer]; the caller's own set
}

// offsetFrame is the frame of a plan of offsets only.
func offsetFrame(p *trace.Program, offsets map[string]int64) (*frame, error) {
	f := &frame{off: make([]int64, len(p.Buffers)), host: make([]int, len(p.Buffers))}
	for b := range p.Buffers {
		f.host[b] = -1
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		off, ok := offsets[buf.Name]
		if !ok {
			return nil, fmt.Errorf("%w: buffer %q has no offset", trace.ErrPlan, buf.Name)
		}
		f.off[b] = off
	}
	f.fp = func(r trace.Ref) (ranges.Set, bool) {
		fp, exact := p.Footprint(r)
		return fp.Clone(), exact
	}
	return f, nil
}

// planFrame is the frame of a plan, placements included (trace.NewFrame);
// a plan that does not fit p is an error matching trace.ErrPlan.
func planFrame(p *trace.Program, plan *trace.Plan) (*frame, error) {
	tf, err := trace.NewFrame(p, plan)
	if err != nil {
		return nil, err
	}
	f := &frame{off: make([]int64, len(p.Buffers)), host: make([]int, len(p.Buffers)), fp: tf.Footprint}
	for b := range p.Buffers {
		f.host[b], f.off[b] = tf.Host(b), tf.Origin(b)
	}
	return f, nil
}

// bytes returns every byte of buffer b, relative to off[b].
func (f *frame) bytes(b int) ranges.Set {
	s, _ := f.fp(trace.Ref{Buffer: b, View: -1})
	return s
}

// cut ends a buffer's hold on arena bytes set at step: a later buffer
// takes them over in place there.
type cut struct {
	set  ranges.Set // arena bytes
	step int
}

// handOvers returns, per buffer, the cuts later buffers make in its bytes,
// in step order, and the step each buffer starts holding its bytes at.
// replay.Run's donations (a dense in-place output over a dying read, its
// allocation deferred to the op) cut the donor at the op; within a host's
// group, the buffers placed over it start at their first op and cut, at
// that step, the host and the members that started before them.
func handOvers(p *trace.Program, f *frame) (map[int][]cut, []int) {
	cuts := map[int][]cut{}
	births := make([]int, len(p.Buffers))
	deferred := deferredBirths(p)
	for b := range p.Buffers {
		births[b] = p.Buffers[b].Step
		if s, ok := deferred[b]; ok && f.host[b] < 0 {
			births[b] = s
		}
	}
	for _, c := range findDonations(p, f) {
		cuts[c.Donor] = append(cuts[c.Donor], cut{set: ranges.FromRanges(ranges.Range{Lo: c.Lo, Hi: c.Hi}), step: c.Step})
	}
	first := firstUses(p)
	members := map[int][]int{}
	var hosts []int
	for b, h := range f.host {
		if h < 0 {
			continue
		}
		if k := first[b]; k >= 0 {
			births[b] = p.Ops[k].Step
		}
		if len(members[h]) == 0 {
			hosts = append(hosts, h)
		}
		members[h] = append(members[h], b)
	}
	sort.Ints(hosts)
	for _, h := range hosts {
		ms := members[h]
		sort.SliceStable(ms, func(i, j int) bool { return births[ms[i]] < births[ms[j]] })
		group := append([]int{h}, ms...)
		for j := 1; j < len(group); j++ {
			taker := f.bytes(group[j])
			arena := shift(&taker, f.off[h])
			for _, e := range group[:j] {
				cuts[e] = append(cuts[e], cut{set: arena, step: births[group[j]]})
			}
		}
	}
	for _, cs := range cuts {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].step < cs[j].step })
	}
	return cuts, births
}

func buildTimeline(p *trace.Program, f *frame, pol subarena.Policy, hwm int64, hw []int64) (*Timeline, error) {
	tl, err := newTimeline(p)
	if err != nil {
		return nil, err
	}
	n := len(p.Trace.Steps)
	t := &Timeline{Trace: p.Trace.Name, Policy: pol.String(), Steps: n, HWM: hwm, HighWater: hw}
	whole := pol.Whole()
	cuts, births := handOvers(p, f)
	// placed lists alloc buffers by step, to clip pending bytes at the
	// first later buffer that takes them.
	type placedBuf struct {
		step  int
		arena ranges.Set
	}
	var placed []placedBuf
	for b := range p.Buffers {
		if p.Buffers[b].External {
			continue
		}
		step := p.Buffers[b].Step
		if f.host[b] >= 0 {
			step = births[b]
		}
		own := f.bytes(b)
		placed = append(placed, placedBuf{step, shift(&own, f.off[b])})
	}
	sort.SliceStable(placed, func(i, j int) bool { return placed[i].step < placed[j].step })
	takenAt := func(r ranges.Range, from, to int) int {
		i := sort.Search(len(placed), func(i int) bool { return placed[i].step > from })
		for ; i < len(placed) && placed[i].step < to; i++ {
			if _, hit := placed[i].arena.Overlaps(r); hit {
				return placed[i].step
			}
		}
		return to
	}
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		off, from := f.off[b], births[b]
		host := ""
		if f.host[b] >= 0 {
			host = p.Buffers[f.host[b]].Name
		}
		for _, pc := range piecesIn(p, b, f) {
			seg := func(r ranges.Range, from, to int, pins []Pin) {
				t.Segments = append(t.Segments, Segment{Buffer: buf.Name, Host: host, Lo: off + r.Lo, Hi: off + r.Hi,
					From: from, To: max(from, to), Pending: pins != nil, Index: b, Holder: pc.holder, Pins: pins})
			}
			// Bytes a later buffer takes over in place end at its step.
			for _, c := range cuts[b] {
				gv := shift(&c.set, -off)
				in := ranges.Intersect(&pc.bytes, &gv)
				for _, r := range in.Runs() {
					seg(r, from, min(c.step, pc.death), nil)
				}
				pc.bytes.RemoveSet(&in)
			}
			for _, r := range pc.bytes.Runs() {
				seg(r, from, pc.death, nil)
			}
			if pc.death >= n || !pol.Safe() {
				continue
			}
			// held[k] = bytes of the piece op k still pins after the piece dies.
			type heldBytes struct {
				set  ranges.Set
				to   int
				pins []Pin
			}
			var wholeTo int
			var held []heldBytes
			var all []Pin
			for _, u := range tl.usesOf[b] {
				if !tl.pendingAt(u.op, pc.death) {
					continue
				}
				fp, _ := f.fp(u.ref)
				in := ranges.Intersect(&fp, &pc.bytes)
				if in.IsEmpty() {
					continue
				}
				pin := Pin{Op: u.op, Ref: u.ref}
				wholeTo = max(wholeTo, tl.observed[u.op])
				held = append(held, heldBytes{in, tl.observed[u.op], []Pin{pin}})
				all = append(all, pin)
			}
			if whole && wholeTo > 0 {
				held = []heldBytes{{pc.bytes, wholeTo, all}}
			}
			for _, h := range held {
				for _, r := range h.set.Runs() {
					ar := ranges.Range{Lo: off + r.Lo, Hi: off + r.Hi}
					to := takenAt(ar, pc.death, min(h.to, n))
					if to > pc.death {
						seg(r, pc.death, to, h.pins)
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
	// holder is the discarded view that lets the bytes go, -1 for the
	// buffer's release.
	holder int
}

// pieces partitions buffer b by the step that lets each byte go: each
// discarded view's bytes (not discarded before), then the rest at the
// release.
func pieces(p *trace.Program, b int) []piece {
	return piecesIn(p, b, nil)
}

// piecesIn is pieces with bytes relative to f.off[b] (buffer-relative when
// f is nil).
func piecesIn(p *trace.Program, b int, f *frame) []piece {
	buf := &p.Buffers[b]
	n := len(p.Trace.Steps)
	fp := func(r trace.Ref) (ranges.Set, bool) {
		s, exact := p.Footprint(r)
		return s.Clone(), exact
	}
	if f != nil {
		fp = f.fp
	}
	rest, _ := fp(trace.Ref{Buffer: b, View: -1})
	var out []piece
	for _, d := range buf.Discards {
		v := &p.Views[d]
		fp, exact := fp(trace.Ref{Buffer: b, View: d})
		if !exact {
			continue // replay keeps such bytes until the buffer goes
		}
		in := ranges.Intersect(&fp, &rest)
		if in.IsEmpty() {
			continue
		}
		rest.RemoveSet(&in)
		out = append(out, piece{bytes: in, death: v.Discard, holder: d})
	}
	death := buf.Release
	if death < 0 {
		death = n
	}
	if !rest.IsEmpty() {
		out = append(out, piece{bytes: rest, death: death, holder: -1})
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
