package fuzz

// Choice is one way the simulation may go next: the host runs its next
// step (or retries the one it is waiting on), or an op completes.
type Choice struct {
	Host   bool
	Op     int // the op that completes, when !Host
	Engine int // its engine
}

// Scheduler decides the interleaving: which of the enabled choices happens
// next. It is asked only when there are at least two. Choices list the
// host first (when enabled), then the ready ops in submission order; a
// deterministic Scheduler therefore replays a run exactly.
type Scheduler interface {
	Choose(opts []Choice) int
}

// RandomScheduler picks the host with probability HostPct/100 when it may
// go, else an op weighted by its engine's speed: a slow engine (a copy
// engine, say) lags behind the others by a factor of Speed ratios.
type RandomScheduler struct {
	Src     Source
	HostPct int
	Speed   [MaxEngines]int // weight of each engine's completions, >= 1
}

// NewRandomScheduler draws a host eagerness and per-engine speeds from src:
// engines are fast (8), medium (3) or slow (1).
func NewRandomScheduler(src Source) *RandomScheduler {
	s := &RandomScheduler{Src: src, HostPct: between(src, 10, 90)}
	for e := range s.Speed {
		s.Speed[e] = []int{1, 3, 8, 8}[src.Intn(4)]
	}
	return s
}

// Choose implements Scheduler.
func (s *RandomScheduler) Choose(opts []Choice) int {
	first := 0
	if opts[0].Host {
		if chance(s.Src, s.HostPct) {
			return 0
		}
		first = 1
	}
	total := 0
	for _, o := range opts[first:] {
		total += max(s.Speed[o.Engine], 1)
	}
	if total == 0 {
		return 0
	}
	r := s.Src.Intn(total)
	for i, o := range opts[first:] {
		if r -= max(s.Speed[o.Engine], 1); r < 0 {
			return first + i
		}
	}
	return len(opts) - 1
}

// branch is one decision of a depth-first enumeration: n choices, c taken.
type branch struct{ n, c int }

// dfsScheduler enumerates every interleaving of a deterministic run, one
// run at a time: it follows prefix, then takes choice 0, recording every
// decision; next moves to the following leaf of the choice tree.
//
// With bounded set it prunes the tree to the runs that deviate from
// host-first at most delays times: a deviation is a completion chosen while
// the host could have taken its next step (Choices list the host first, so
// choice 0 is the host-first one). Once a run has used up its delays, a
// decision the host may take is recorded with one alternative only.
type dfsScheduler struct {
	prefix  []int
	trail   []branch
	bounded bool
	delays  int // with bounded: the most deviations a run may take
	used    int // deviations taken so far in this run
}

func (d *dfsScheduler) Choose(opts []Choice) int {
	c := 0
	if i := len(d.trail); i < len(d.prefix) {
		c = d.prefix[i]
	}
	if c >= len(opts) {
		c = len(opts) - 1 // unreachable while runs are deterministic
	}
	n := len(opts)
	if d.bounded && opts[0].Host {
		switch {
		case d.used >= d.delays:
			n, c = 1, 0
		case c > 0:
			d.used++
		}
	}
	d.trail = append(d.trail, branch{n: n, c: c})
	return c
}

// next prepares the next interleaving and reports whether there is one.
func (d *dfsScheduler) next() bool {
	for i := len(d.trail) - 1; i >= 0; i-- {
		if d.trail[i].c+1 < d.trail[i].n {
			d.prefix = d.prefix[:0]
			for _, b := range d.trail[:i] {
				d.prefix = append(d.prefix, b.c)
			}
			d.prefix = append(d.prefix, d.trail[i].c+1)
			d.trail = d.trail[:0]
			d.used = 0
			return true
		}
	}
	return false
}

// ReplayScheduler replays recorded decisions (Failure.Choices), then takes
// choice 0.
type ReplayScheduler struct {
	Choices []int
	pos     int
}

// Choose implements Scheduler.
func (r *ReplayScheduler) Choose(opts []Choice) int {
	c := 0
	if r.pos < len(r.Choices) {
		c = r.Choices[r.pos]
	}
	r.pos++
	return min(c, len(opts)-1)
}
