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

// orderedLowerBound returns a lower bound on the arena of any safe plan for
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
func orderedLowerBound(in *Info) (int64, int64) {
	segs, conflict := orderedSegments(in)
	return orderedClique(in, segs, conflict)
}

// orderedSegments returns the segments of every alloc buffer and the
// relation "may not share an arena byte".
func orderedSegments(in *Info) ([]oseg, func(x, y *oseg) bool) {
	p := in.P
	var segs []oseg
	for b := range p.Buffers {
		if p.Buffers[b].External {
			continue
		}
		for _, sg := range in.Segments[b] {
			s := oseg{b: b, lo: sg.Lo, hi: sg.Hi, from: sg.From, to: sg.To, death: never}
			for _, ou := range in.UsesOf[b] {
				fp, _ := p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
				if fp.Contains(sg.Lo) {
					s.users = append(s.users, ou.Op)
				}
			}
			for _, pc := range in.Pieces[b] {
				if pc.Bytes.Contains(sg.Lo) {
					s.death = pc.Step
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
			return p.Ops[a].InPlace
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
	return segs, conflict
}

func orderedClique(in *Info, segs []oseg, conflict func(x, y *oseg) bool) (int64, int64) {
	g := in.P.Trace.Granule
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
	bySize := make([]int, len(segs))
	for i := range bySize {
		bySize[i] = i
	}
	sort.SliceStable(bySize, func(i, j int) bool {
		a, b := &segs[bySize[i]], &segs[bySize[j]]
		return a.hi-a.lo > b.hi-b.lo
	})
	// dist is how far a segment's life lies from t.
	dist := func(s *oseg, t int64) int64 {
		switch {
		case t < s.from:
			return s.from - t
		case t >= s.to:
			return t - s.to + 1
		}
		return 0
	}
	var best, bestT int64
	for _, m := range moments {
		byTime := slices.Clone(bySize)
		sort.SliceStable(byTime, func(i, j int) bool {
			return dist(&segs[byTime[i]], m.t) < dist(&segs[byTime[j]], m.t)
		})
		for _, order := range [][]int{bySize, byTime} {
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
		// Exact search among the segments nearest in time.
		near := byTime[:min(len(byTime), cliqueWindow)]
		if w := weight(maxClique(segs, near, conflict)); w > best {
			best, bestT = w, m.t
		}
	}
	return max(best, in.LiveLB), bestT
}

// cliqueWindow bounds the exact clique search to this many segments.
const cliqueWindow = 48

// maxClique returns a maximum-weight clique (weight: bytes) of the conflict
// graph on cand, by branch and bound with a node budget (on exhaustion it
// returns the best clique found, still a clique).
func maxClique(segs []oseg, cand []int, conflict func(x, y *oseg) bool) []int {
	n := len(cand)
	w := make([]int64, n)
	adj := make([][]bool, n)
	for i := range cand {
		w[i] = segs[cand[i]].hi - segs[cand[i]].lo
		adj[i] = make([]bool, n)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			c := conflict(&segs[cand[i]], &segs[cand[j]])
			adj[i][j], adj[j][i] = c, c
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return w[order[a]] > w[order[b]] })
	var best []int
	var bestW int64
	budget := 200000
	var cur []int
	var rec func(p []int, curW int64)
	rec = func(p []int, curW int64) {
		if budget--; budget < 0 {
			return
		}
		if curW > bestW {
			bestW = curW
			best = slices.Clone(cur)
		}
		var rest int64
		for _, v := range p {
			rest += w[v]
		}
		for k, v := range p {
			if curW+rest <= bestW {
				return
			}
			rest -= w[v]
			var np []int
			for _, u := range p[k+1:] {
				if adj[v][u] {
					np = append(np, u)
				}
			}
			cur = append(cur, v)
			rec(np, curW+w[v])
			cur = cur[:len(cur)-1]
		}
	}
	rec(order, 0)
	out := make([]int, len(best))
	for i, v := range best {
		out[i] = cand[v]
	}
	return out
}
