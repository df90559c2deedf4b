package check

import (
	"math"
	"sort"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
)

// The oracles below re-derive everything from the trace's steps, byte by byte and element
// by element, without strided's arithmetic, ranges or sync: layouts are enumerated one
// element at a time (internal/testutil's layout oracle, which shares no code with strided), happens-before is a
// transitive closure over booleans, and "element i over element i" compares address lists.

// oracleView is a data name's layout relative to its buffer.
type oracleView struct {
	buf            string
	off            int64
	shape, strides []int64
	elem           int64
	bytes          []bool
	addrs          []int64 // first byte of each element, row-major
	natural        bool    // a buffer's own name
	discardStep    int
}

type oracleOp struct {
	name, engine string
	step         int
	inplace      bool
	uses         []oracleUse
}

type oracleUse struct {
	name   string
	access trace.Access
}

type oracleModel struct {
	t        *trace.Trace
	views    map[string]*oracleView
	bufOrder []string
	size     map[string]int64
	external map[string]bool
	allocAt  map[string]int
	release  map[string]int // buffer -> release step (absent: held)
	ops      []oracleOp
	opIndex  map[string]int
	hb       [][]bool
}

func buildOracle(t *trace.Trace) *oracleModel {
	m := &oracleModel{t: t, views: map[string]*oracleView{}, size: map[string]int64{}, external: map[string]bool{},
		allocAt: map[string]int{}, release: map[string]int{}, opIndex: map[string]int{}}
	var synced [][]int // ops synced before each op's submission: indices
	var syncedSoFar []int
	for i, s := range t.Steps {
		switch s.Kind {
		case trace.KindAlloc, trace.KindExternal:
			v := &oracleView{buf: s.Name, natural: true, elem: 1, shape: []int64{s.Size}, strides: []int64{1}, discardStep: -1}
			if s.Shape != nil {
				v.shape, v.elem = s.Shape, s.Elem
				v.strides = make([]int64, len(s.Shape))
				st := s.Elem
				for d := len(s.Shape) - 1; d >= 0; d-- {
					v.strides[d] = st
					st *= s.Shape[d]
				}
			}
			v.bytes = enumerate(0, v.shape, v.strides, v.elem, s.Size)
			v.addrs = testutil.LayoutAddrs(0, v.shape, v.strides)
			m.views[s.Name] = v
			m.size[s.Name] = s.Size
			m.external[s.Name] = s.Kind == trace.KindExternal
			m.allocAt[s.Name] = i
			m.bufOrder = append(m.bufOrder, s.Name)
		case trace.KindView:
			parent := m.views[s.Of]
			off := parent.off + s.Offset
			v := &oracleView{buf: parent.buf, off: off, shape: s.Shape, strides: s.Strides, elem: s.Elem, discardStep: -1}
			v.bytes = enumerate(off, s.Shape, s.Strides, s.Elem, m.size[parent.buf])
			v.addrs = testutil.LayoutAddrs(off, s.Shape, s.Strides)
			m.views[s.Name] = v
		case trace.KindRelease:
			v := m.views[s.Name]
			if v.natural {
				m.release[s.Name] = i
			} else {
				v.discardStep = i
			}
		case trace.KindSync:
			syncedSoFar = append(syncedSoFar, m.opIndex[s.Name])
		case trace.KindOp:
			o := oracleOp{name: s.Name, engine: s.Engine, step: i, inplace: s.InPlace}
			add := func(n string, a trace.Access) {
				for k := range o.uses {
					if o.uses[k].name == n {
						o.uses[k].access |= a
						return
					}
				}
				o.uses = append(o.uses, oracleUse{n, a})
			}
			for _, n := range s.Reads {
				add(n, trace.AccessRead)
			}
			for _, n := range s.Writes {
				add(n, trace.AccessWrite)
			}
			m.opIndex[s.Name] = len(m.ops)
			m.ops = append(m.ops, o)
			synced = append(synced, append([]int(nil), syncedSoFar...))
		}
	}
	// Happens-before: direct predecessors, then the transitive closure in op order.
	n := len(m.ops)
	m.hb = make([][]bool, n)
	for b := 0; b < n; b++ {
		m.hb[b] = make([]bool, n)
	}
	for b := 0; b < n; b++ {
		var preds []int
		for a := b - 1; a >= 0; a-- {
			if m.ops[a].engine == m.ops[b].engine {
				preds = append(preds, a)
				break
			}
		}
		for _, w := range t.Steps[m.ops[b].step].Waits {
			preds = append(preds, m.opIndex[w])
		}
		preds = append(preds, synced[b]...)
		for _, a := range preds {
			m.hb[a][b] = true
			for x := 0; x < n; x++ {
				if m.hb[x][a] {
					m.hb[x][b] = true
				}
			}
		}
	}
	return m
}

// death returns the step that lets byte x of buffer buf go (math.MaxInt: held).
func (m *oracleModel) death(buf string, x int64) int {
	d := math.MaxInt
	if r, ok := m.release[buf]; ok {
		d = r
	}
	for _, v := range m.views {
		if v.buf == buf && !v.natural && v.discardStep >= 0 && v.bytes[x] && v.discardStep < d {
			d = v.discardStep
		}
	}
	return d
}

type oracleKey struct {
	rule                               string
	bufA, opA, nameA, bufB, opB, nameB string
}

// bruteCheck returns, per violation key, the number of violating arena bytes.
func bruteCheck(m *oracleModel, plan *trace.Plan) map[oracleKey]int64 {
	out := map[oracleKey]int64{}
	var bufs []string
	for _, b := range m.bufOrder {
		if !m.external[b] {
			bufs = append(bufs, b)
		}
	}
	type user struct {
		op   int
		name string
	}
	usersOf := func(buf string, x int64) []user {
		var us []user
		for k, o := range m.ops {
			for _, u := range o.uses {
				if v := m.views[u.name]; v.buf == buf && v.bytes[x] {
					us = append(us, user{k, u.name})
				}
			}
		}
		return us
	}
	for i, a := range bufs {
		for _, b := range bufs[i+1:] {
			offA, offB := plan.Offsets[a], plan.Offsets[b]
			lo, hi := max(offA, offB), min(offA+m.size[a], offB+m.size[b])
			for x := lo; x < hi; x++ {
				xa, xb := x-offA, x-offB
				da, db := m.death(a, xa), m.death(b, xb)
				first, second, xf, xs, dfirst := a, b, xa, xb, da
				if db < da || (db == da && m.allocAt[b] < m.allocAt[a]) {
					first, second, xf, xs, dfirst = b, a, xb, xa, db
				}
				_ = dfirst
				for _, uf := range usersOf(first, xf) {
					for _, us := range usersOf(second, xs) {
						rule := ""
						switch {
						case da == math.MaxInt && db == math.MaxInt:
							rule = ViolationHeld
						case uf.op == us.op:
							if !m.ops[uf.op].inplace || !sameAddrs(m.views[uf.name], plan.Offsets[first], m.views[us.name], plan.Offsets[second]) {
								rule = ViolationSameOp
							}
						case !m.hb[uf.op][us.op]:
							rule = ViolationUnordered
						}
						if rule != "" {
							out[oracleKey{rule, first, m.ops[uf.op].name, uf.name, second, m.ops[us.op].name, us.name}]++
						}
					}
				}
			}
		}
	}
	return out
}

// sameAddrs: element i of a (placed at offA) occupies the bytes of element i of b.
func sameAddrs(a *oracleView, offA int64, b *oracleView, offB int64) bool {
	if a.elem != b.elem || len(a.addrs) != len(b.addrs) {
		return false
	}
	for i := range a.addrs {
		if a.addrs[i]+offA != b.addrs[i]+offB {
			return false
		}
	}
	return true
}

// sameRelAddrs: the two views have the same element layout up to their first element.
func sameRelAddrs(a, b *oracleView) bool {
	if a.elem != b.elem || len(a.addrs) != len(b.addrs) {
		return false
	}
	for i := range a.addrs {
		if a.addrs[i]-a.addrs[0] != b.addrs[i]-b.addrs[0] {
			return false
		}
	}
	return true
}

// bruteLiveLB computes LiveLB by definition: for every granule of every alloc buffer and
// every time point of the schedule, is some byte of the granule live?
func bruteLiveLB(m *oracleModel, start, end []int64, makespan int64) int64 {
	g := m.t.Granule
	// Credits: per inplace op, per write, the first read of another non-external buffer
	// with the same relative element layout.
	credited := map[[2]int]bool{}
	for k, o := range m.ops {
		if !o.inplace {
			continue
		}
		for _, w := range o.uses {
			if w.access&trace.AccessWrite == 0 || len(m.views[w.name].addrs) == 0 {
				continue
			}
			for u, r := range o.uses {
				rv, wv := m.views[r.name], m.views[w.name]
				if len(rv.addrs) == 0 || r.access&trace.AccessRead == 0 || rv.buf == wv.buf || credited[[2]int{k, u}] || m.external[rv.buf] {
					continue
				}
				if sameRelAddrs(rv, wv) {
					credited[[2]int{k, u}] = true
					break
				}
			}
		}
	}
	type interval struct{ from, to int64 }
	var live [][]interval // per granule (all buffers): byte intervals
	times := []int64{makespan}
	for _, buf := range m.bufOrder {
		if m.external[buf] {
			continue
		}
		size := m.size[buf]
		granules := make([][]interval, (size+g-1)/g)
		for x := int64(0); x < size; x++ {
			from, to, lastOp, lastUse := int64(-1), int64(-1), -1, -1
			for k, o := range m.ops {
				for u, use := range o.uses {
					if v := m.views[use.name]; v.buf != buf || !v.bytes[x] {
						continue
					}
					if from < 0 || start[k] < from {
						from = start[k]
					}
					if end[k] > to {
						to, lastOp, lastUse = end[k], k, u
					}
				}
			}
			if lastOp < 0 {
				continue
			}
			if m.death(buf, x) == math.MaxInt {
				to = max(to, makespan)
			} else if credited[[2]int{lastOp, lastUse}] {
				to = max(from, start[lastOp])
			}
			granules[x/g] = append(granules[x/g], interval{from, to})
			times = append(times, from, to)
		}
		live = append(live, granules...)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var peak int64
	for _, t := range times {
		var n int64
		for _, ivs := range live {
			for _, iv := range ivs {
				if iv.from <= t && t < iv.to {
					n += g
					break
				}
			}
		}
		peak = max(peak, n)
	}
	return peak
}

// enumerate returns the bytes of a buffer of size bytes that a layout covers, by walking
// every element (internal/testutil's layout oracle).
func enumerate(off int64, shape, strides []int64, elem, size int64) []bool {
	cov := make([]bool, size)
	testutil.LayoutBytes(off, shape, strides, elem, func(b int64) { cov[b] = true })
	return cov
}
