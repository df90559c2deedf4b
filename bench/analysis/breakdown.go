package analysis

import (
	"github.com/subarena/subarena/liveness"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// category is where a granule of the arena [0, HWM) stands when a buffer B
// is placed, judged at t* = the start of B's first user in the schedule (the
// moment LiveLB's oracle would need B's bytes).
type category int

const (
	// catLive: LiveLB counts the granule live at t* (B's own used bytes
	// included). Everything else is what the arena holds beyond the live set.
	catLive category = iota
	// catFrag (a): clean free bytes below the high-water mark that B did not
	// fit into (external fragmentation).
	catFrag
	// catUnsafe (b): released bytes whose pending users do not happen-before
	// B's point and whose users are not over by t* either: some user still
	// runs later (not live at t*, but needed by a later use of the previous
	// owner's view of time: ordering, not completion knowledge).
	catUnsafe
	// catSafeUnused (c): released bytes safe for B's point that placement did
	// not use.
	catSafeUnused
	// catPolledLate (d1): released bytes, unsafe for B, whose every pending
	// user had ended by the host's current time: a non-blocking poll would
	// have returned them.
	catPolledLate
	// catStallLate (d2): every pending user ends by the horizon (the host could
	// have waited that long without delaying any op).
	catStallLate
	// catOracleLate (d3): every pending user ends by t*; only waiting past the
	// horizon (or foresight) would have returned them.
	catOracleLate
	// catAhead (e1): bytes the program holds that are not yet live at t*: their
	// users start later (the host allocated ahead of the engines).
	catAhead
	// catDeadHeld (e2): bytes the program holds whose users have all ended by
	// t*: released later in program order.
	catDeadHeld
	// catUnused (e3): bytes no op uses and granule rounding (B's included).
	catUnused
	numCategories
)

var categoryNames = [numCategories]string{"live@t*", "a:frag", "b:unsafe", "c:safe-unused", "d1:poll",
	"d2:stall", "d3:oracle", "e1:ahead", "e2:dead-held", "e3:unused"}

func (c category) String() string { return categoryNames[c] }

// snapshot is the arena's bytes by category at one placement.
type snapshot struct {
	Step, Buffer int
	Host, TStar  int64
	HWM          int64 // after the placement
	Grew         int64 // bytes the placement added to the high-water mark
	Bytes        [numCategories]int64
	// UnsafeLive is the part of Live that is released bytes unsafe for B
	// (still needed at t*).
	UnsafeLive int64
}

// breakdown is an observer that takes a snapshot at every placement that
// raises the high-water mark (Growth) and, if Every is set, at every
// placement.
type breakdown struct {
	Every  bool
	Growth []snapshot
	All    []snapshot

	pre struct {
		hwm  int64
		free ranges.Set
		safe ranges.Set
		held ranges.Set
		prog ranges.Set // program-held bytes
	}
}

// Before records the state B is placed into.
func (o *breakdown) Before(d *driver, i, b int, pt *sasync.Point) {
	s := d.S
	o.pre.hwm = s.HighWater()
	o.pre.free.Reset()
	for _, r := range s.FreeRegions() {
		o.pre.free.Add(ranges.Range{Lo: r.Offset, Hi: r.End()})
	}
	o.pre.safe.Reset()
	for _, r := range s.SafeRuns(pt) {
		o.pre.safe.Add(r)
	}
	o.pre.held = s.Idx.Held().Clone()
	o.pre.prog.Reset()
	for _, bb := range d.Bufs {
		if bb != nil && !bb.Released {
			o.pre.prog.AddSet(&bb.Live)
		}
	}
}

// After classifies [0, HWM) once B is placed.
func (o *breakdown) After(d *driver, i, b int, buf *shadowBuf) {
	hwm := d.S.HighWater()
	if hwm <= o.pre.hwm && !o.Every {
		return
	}
	sn := o.classify(d, i, b, buf, hwm)
	if hwm > o.pre.hwm {
		o.Growth = append(o.Growth, sn)
	}
	if o.Every {
		o.All = append(o.All, sn)
	}
}

func (o *breakdown) classify(d *driver, i, b int, buf *shadowBuf, hwm int64) snapshot {
	in, g := d.In, d.S.G
	tstar := in.FirstUse[b]
	sn := snapshot{Step: i, Buffer: b, Host: d.Host, TStar: tstar, HWM: hwm, Grew: max(0, hwm-o.pre.hwm)}
	all := ranges.FromRanges(ranges.Range{Lo: 0, Hi: hwm})
	newB := ranges.FromRanges(ranges.Range{Lo: buf.Off, Hi: buf.Off + buf.Span})

	// Oracle-live granules at t*, and the program's bytes by what they wait for.
	var live, ahead, dead, unused ranges.Set
	for bi, bb := range d.Bufs {
		if bb == nil {
			continue
		}
		lv := in.LiveAt(bi, tstar)
		_ = lv.Translate(bb.Off)
		live.AddSet(&lv)
		if bb.Released && bi != b {
			continue
		}
		after, un := in.UsedAfter(bi, tstar)
		_ = after.Translate(bb.Off)
		_ = un.Translate(bb.Off)
		after.RetainSet(&bb.Live)
		un.RetainSet(&bb.Live)
		ahead.AddSet(&after)
		unused.AddSet(&un)
		rest := bb.Live.Clone()
		rest.RemoveSet(&after)
		rest.RemoveSet(&un)
		dead.AddSet(&rest)
	}
	live = live.AlignOut(g)
	live.RetainSet(&all)
	sn.Bytes[catLive] = live.Len()

	// Allocator state, by priority: B, clean free, program-held, held.
	free := o.pre.free.Clone()
	free.RetainSet(&all)
	if hwm > o.pre.hwm { // the part of B beyond the old mark was never free
		free.Add(ranges.Range{Lo: o.pre.hwm, Hi: hwm})
	}
	free.RemoveSet(&newB)
	prog := o.pre.prog.AlignOut(g)
	prog.AddSet(&newB)
	prog.RemoveSet(&free)
	held := all.Clone()
	held.RemoveSet(&free)
	held.RemoveSet(&prog)
	safe := ranges.Intersect(&held, &o.pre.safe)
	unsafe := held.Clone()
	unsafe.RemoveSet(&safe)

	notLive := func(s *ranges.Set) ranges.Set { x := s.Clone(); x.RemoveSet(&live); return x }
	fr := notLive(&free)
	sn.Bytes[catFrag] = fr.Len()
	sf := notLive(&safe)
	sn.Bytes[catSafeUnused] = sf.Len()
	ul := ranges.Intersect(&unsafe, &live)
	sn.UnsafeLive = ul.Len()

	// Program-held, not live: ahead, dead-held, unused (rounding: the rest).
	pn := notLive(&prog)
	aheadN := ranges.Intersect(&pn, &ahead)
	pn.RemoveSet(&aheadN)
	deadN := ranges.Intersect(&pn, &dead)
	pn.RemoveSet(&deadN)
	sn.Bytes[catAhead] = aheadN.Len()
	sn.Bytes[catDeadHeld] = deadN.Len()
	sn.Bytes[catUnused] = pn.Len() // unused bytes and granule rounding
	_ = unused

	// Held, unsafe, not live: when do their pending users end?
	un := notLive(&unsafe)
	horizon := in.Horizon[i]
	for _, r := range un.Runs() {
		for lo := r.Lo; lo < r.Hi; lo += g {
			gr := ranges.Range{Lo: lo, Hi: min(lo+g, r.Hi)}
			var last int64 = -1
			d.S.Idx.Users(gr, func(_ liveness.UserID, ev sasync.Event, unknown bool) bool {
				if k, ok := d.OpOf(ev); ok {
					last = max(last, in.End[k])
				}
				return true
			})
			c := catUnsafe
			switch {
			case last <= d.Host:
				c = catPolledLate
			case last <= horizon:
				c = catStallLate
			case last <= tstar:
				c = catOracleLate
			}
			sn.Bytes[c] += gr.Len()
		}
	}
	return sn
}

// Peak returns the snapshot of the placement that set the final high-water
// mark.
func (o *breakdown) Peak() (snapshot, bool) {
	if len(o.Growth) == 0 {
		return snapshot{}, false
	}
	return o.Growth[len(o.Growth)-1], true
}

// Sum returns the total of the snapshot's categories (the high-water mark).
func (sn *snapshot) Sum() int64 {
	var t int64
	for _, v := range sn.Bytes {
		t += v
	}
	return t
}
