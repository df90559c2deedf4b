package analysis

import (
	"slices"
	"sort"

	"github.com/subarena/subarena/ranges"
)

// oseg is a LiveLB segment with what the safety rule needs: its users and
// the step that lets its bytes go.
type oseg struct {
	b        int
	lo, hi   int64
	from, to int64
	users    []int
	death    int
}

// OrderedLowerBound returns a lower bound on the arena of any safe plan for
// the schedule, online or offline, that also counts what LiveLB leaves out:
// two bytes of different buffers may share an arena byte only if, of the
// two, the one its buffer lets go first (release or discard step; both held
// to the end: never) has every use happen-before every use of the other
// (docs/TRACE.md's safety rule; an inplace op using both counts as
// ordered). Segments that pairwise may not share form a clique of the
// conflict graph, and any clique's granules bound the arena from below.
// The clique is grown greedily from the live set at each of the schedule's
// busiest moments, so the bound is valid but not the best possible. It
// returns the bound and the moment whose clique gave it.
func OrderedLowerBound(in *Info) (int64, int64) {
	p := in.P
	g := p.Trace.Granule
	var segs []oseg
	for b := range p.Buffers {
		if p.Buffers[b].External {
			continue
		}
		for _, sg := range in.Segments[b] {
			s := oseg{b: b, lo: sg.lo, hi: sg.hi, from: sg.from, to: sg.to, death: never}
			for _, ou := range in.UsesOf[b] {
				fp, _ := p.Footprint(p.Ops[ou.op].Uses[ou.use].Ref)
				if fp.Contains(sg.lo) {
					s.users = append(s.users, ou.op)
				}
			}
			for _, pc := range in.Pieces[b] {
				if pc.set.Contains(sg.lo) {
					s.death = pc.death
				}
			}
			slices.Sort(s.users)
			s.users = slices.Compact(s.users)
			// Merge with the previous segment of the buffer when nothing tells them apart.
			if n := len(segs); n > 0 {
				q := &segs[n-1]
				if q.b == b && q.hi == s.lo && q.from == s.from && q.to == s.to && q.death == s.death &&
					slices.Equal(q.users, s.users) {
					q.hi = s.hi
					continue
				}
			}
			segs = append(segs, s)
		}
	}
	hb := func(a, b int) bool {
		if a == b {
			return p.Ops[a].Inplace
		}
		return in.Order.HappensBefore(a, b)
	}
	// ordered reports whether every use of x happens-before every use of y.
	ordered := func(x, y *oseg) bool {
		for _, ua := range x.users {
			for _, ub := range y.users {
				if !hb(ua, ub) {
					return false
				}
			}
		}
		return true
	}
	conflict := func(x, y *oseg) bool {
		if x.b == y.b {
			return true // distinct bytes of one buffer never share
		}
		if x.from < y.to && y.from < x.to {
			return true
		}
		switch {
		case x.death == never && y.death == never:
			return true
		case x.death < y.death:
			return !ordered(x, y)
		case y.death < x.death:
			return !ordered(y, x)
		}
		return !ordered(x, y) && !ordered(y, x)
	}
	weight := func(members []int) int64 {
		per := map[int]*ranges.Set{}
		for _, i := range members {
			s := &segs[i]
			if per[s.b] == nil {
				per[s.b] = &ranges.Set{}
			}
			per[s.b].Add(ranges.Range{Lo: s.lo, Hi: s.hi})
		}
		var t int64
		for _, set := range per {
			a := set.AlignOut(g)
			t += a.Len()
		}
		return t
	}
	// Candidate moments: every segment start, ranked by the bytes live then.
	type moment struct {
		t    int64
		live int64
	}
	var moments []moment
	for _, s := range segs {
		moments = append(moments, moment{t: s.from})
	}
	sort.Slice(moments, func(i, j int) bool { return moments[i].t < moments[j].t })
	moments = slices.CompactFunc(moments, func(a, b moment) bool { return a.t == b.t })
	for i := range moments {
		for _, s := range segs {
			if s.from <= moments[i].t && moments[i].t < s.to {
				moments[i].live += s.hi - s.lo
			}
		}
	}
	sort.Slice(moments, func(i, j int) bool { return moments[i].live > moments[j].live })
	if len(moments) > 24 {
		moments = moments[:24]
	}
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := &segs[order[i]], &segs[order[j]]
		return a.hi-a.lo > b.hi-b.lo
	})
	var best, bestT int64
	for _, m := range moments {
		var members []int
		in := make([]bool, len(segs))
		for i, s := range segs {
			if s.from <= m.t && m.t < s.to {
				members = append(members, i)
				in[i] = true
			}
		}
		for _, c := range order {
			if in[c] {
				continue
			}
			ok := true
			for _, mm := range members {
				if !conflict(&segs[c], &segs[mm]) {
					ok = false
					break
				}
			}
			if ok {
				members = append(members, c)
				in[c] = true
			}
		}
		if w := weight(members); w > best {
			best, bestT = w, m.t
		}
	}
	return max(best, in.LiveLB), bestT
}
