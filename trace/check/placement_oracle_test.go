package check

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// bruteCheckPlaced is bruteCheck for a plan with placements, byte by byte from the
// definition in Plan's doc: every name's bytes and elements are mapped into the arena
// (a placed buffer's byte x is byte x mod elem of its footprint's element x / elem); a host
// and the buffers placed over it are one group, whose bytes go at the first discard
// covering them or at the group's last release; groups are checked against each other as
// buffers are, and within a group every earlier buffer (the host, then by first op) against
// every later one.
func bruteCheckPlaced(m *oracleModel, plan *trace.Plan) map[oracleKey]int64 {
	host := map[string]string{}
	foot := map[string][]int64{}
	for name, pl := range plan.Placements {
		host[name] = pl.Of
		foot[name] = testutil.LayoutAddrs(pl.Offset, pl.Shape, pl.Strides)
	}
	groupOf := func(buf string) string {
		if h, ok := host[buf]; ok {
			return h
		}
		return buf
	}
	arena := func(buf string, x int64) int64 {
		if h, ok := host[buf]; ok {
			e := m.views[buf].elem
			return plan.Offsets[h] + foot[buf][x/e] + x%e
		}
		return plan.Offsets[buf] + x
	}
	type nameInfo struct {
		buf   string
		bytes map[int64]bool
		addrs []int64
		elem  int64
	}
	info := map[string]*nameInfo{}
	for name, v := range m.views {
		if m.external[v.buf] {
			continue
		}
		ni := &nameInfo{buf: v.buf, bytes: map[int64]bool{}, elem: v.elem}
		for x, c := range v.bytes {
			if c {
				ni.bytes[arena(v.buf, int64(x))] = true
			}
		}
		for _, a := range v.addrs {
			ni.addrs = append(ni.addrs, arena(v.buf, a))
		}
		info[name] = ni
	}
	sameArena := func(a, b string) bool {
		x, y := info[a], info[b]
		if x.elem != y.elem || len(x.addrs) != len(y.addrs) {
			return false
		}
		for i := range x.addrs {
			if x.addrs[i] != y.addrs[i] {
				return false
			}
		}
		return true
	}
	type user struct {
		op   int
		name string
	}
	users := func(a int64, through func(buf string) bool) []user {
		var us []user
		for k, o := range m.ops {
			for _, u := range o.uses {
				if ni := info[u.name]; ni != nil && through(ni.buf) && ni.bytes[a] {
					us = append(us, user{k, u.name})
				}
			}
		}
		return us
	}
	// Groups: the buffers with offsets, each with its placed buffers.
	var groups []string
	members := map[string][]string{}
	for _, b := range m.bufOrder {
		if m.external[b] {
			continue
		}
		if _, placed := host[b]; !placed {
			groups = append(groups, b)
		}
		members[groupOf(b)] = append(members[groupOf(b)], b)
	}
	final := map[string]int{}
	for _, g := range groups {
		final[g] = -1
		for _, b := range members[g] {
			r, ok := m.release[b]
			if !ok {
				final[g] = math.MaxInt
				break
			}
			final[g] = max(final[g], r)
		}
	}
	death := func(g string, a int64) int {
		d := final[g]
		for name, v := range m.views {
			if !v.natural && v.discardStep >= 0 && !m.external[v.buf] && groupOf(v.buf) == g && info[name].bytes[a] {
				d = min(d, v.discardStep)
			}
		}
		return d
	}
	out := map[oracleKey]int64{}
	rule := func(uf, us user, held bool) string {
		switch {
		case held:
			return ViolationHeld
		case uf.op == us.op:
			if !m.ops[uf.op].inplace || !sameArena(uf.name, us.name) {
				return ViolationSameOp
			}
		case !m.hb[uf.op][us.op]:
			return ViolationUnordered
		}
		return ""
	}
	record := func(r string, uf, us user) {
		if r != "" {
			out[oracleKey{r, info[uf.name].buf, m.ops[uf.op].name, uf.name, info[us.name].buf, m.ops[us.op].name, us.name}]++
		}
	}
	for i, a := range groups {
		for _, b := range groups[i+1:] {
			offA, offB := plan.Offsets[a], plan.Offsets[b]
			for x := max(offA, offB); x < min(offA+m.size[a], offB+m.size[b]); x++ {
				da, db := death(a, x), death(b, x)
				first, second := a, b
				if db < da || (db == da && m.allocAt[b] < m.allocAt[a]) {
					first, second = b, a
				}
				in := func(g string) func(string) bool { return func(buf string) bool { return groupOf(buf) == g } }
				for _, uf := range users(x, in(first)) {
					for _, us := range users(x, in(second)) {
						record(rule(uf, us, da == math.MaxInt && db == math.MaxInt), uf, us)
					}
				}
			}
		}
	}
	// Within each group: the host first, then by first op, then by allocation.
	for _, g := range groups {
		owners := members[g]
		if len(owners) < 2 {
			continue
		}
		firstOp := func(buf string) int {
			for k, o := range m.ops {
				for _, u := range o.uses {
					if ni := info[u.name]; ni != nil && ni.buf == buf {
						return k
					}
				}
			}
			return len(m.ops)
		}
		rest := owners[1:]
		sort.SliceStable(rest, func(i, j int) bool {
			fi, fj := firstOp(rest[i]), firstOp(rest[j])
			if fi != fj {
				return fi < fj
			}
			return m.allocAt[rest[i]] < m.allocAt[rest[j]]
		})
		heldBy := func(buf string, a int64) bool {
			if _, ok := m.release[buf]; ok || !info[buf].bytes[a] {
				return false
			}
			for name, v := range m.views {
				if !v.natural && v.buf == buf && v.discardStep >= 0 && info[name].bytes[a] {
					return false
				}
			}
			return true
		}
		off := plan.Offsets[g]
		for i, x := range owners {
			for _, y := range owners[i+1:] {
				is := func(b string) func(string) bool { return func(buf string) bool { return buf == b } }
				for a := off; a < off+m.size[g]; a++ {
					for _, ux := range users(a, is(x)) {
						for _, uy := range users(a, is(y)) {
							if heldBy(x, a) {
								record(ViolationTakenOver, ux, uy)
								continue
							}
							record(rule(ux, uy, false), ux, uy)
						}
					}
				}
			}
		}
	}
	return out
}

// randomPlacements gives some alloc buffers of p a random one-dimensional footprint (its
// stride a multiple of its element, possibly negative, at times a two-dimensional one)
// over an earlier buffer, and every other one a random offset.
func randomPlacements(rng *rand.Rand, p *trace.Program) *trace.Plan {
	plan := &trace.Plan{Trace: p.Trace.Name, Offsets: map[string]int64{}, Placements: map[string]trace.Placement{}}
	hosts := map[int]bool{}
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		if b > 0 && rng.IntN(2) == 0 {
			h := rng.IntN(b)
			H := &p.Buffers[h]
			e := buf.Layout.Elem
			n := buf.Size / e
			s := e * (1 + rng.Int64N(2))
			if rng.IntN(4) == 0 {
				s = -s
			}
			ext := (n-1)*abs64(s) + e
			_, hplaced := plan.Placements[H.Name]
			if !H.External && !hplaced && ext <= H.Size && !hosts[b] {
				room := H.Size - ext
				off := rng.Int64N(room + 1)
				if s < 0 {
					off += ext - e
				}
				pl := trace.Placement{Of: H.Name, Offset: off, Shape: []int64{n}, Strides: []int64{s}, Elem: e}
				if n%2 == 0 && rng.IntN(5) == 0 {
					pl.Shape, pl.Strides = []int64{2, n / 2}, []int64{s * (n / 2), s}
				}
				plan.Placements[buf.Name] = pl
				hosts[h] = true
				continue
			}
		}
		off := rng.Int64N(48)
		plan.Offsets[buf.Name] = off
		plan.Size = max(plan.Size, off+buf.Size)
	}
	return plan
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestCheckPlacementsAgainstOracle: on random traces with random placements, Plan agrees
// with bruteCheckPlaced violation by violation and byte by byte, and a placement CheckPlan
// rejects matches ErrPlacement.
func TestCheckPlacementsAgainstOracle(t *testing.T) {
	n := testutil.Count(300, 60)
	rng := rand.New(rand.NewPCG(7, 8))
	checked, rejected, placed := 0, 0, 0
	rules := map[string]int{}
	for i := 0; i < n; i++ {
		tr := tracetest.RandomTrace(rng, 10+rng.IntN(30))
		p := tracetest.Resolve(t, tr)
		m := buildOracle(tr)
		for j := 0; j < 3; j++ {
			plan := randomPlacements(rng, p)
			rep, err := Plan(p, plan)
			if err != nil {
				if !errors.Is(err, trace.ErrPlacement) || !errors.Is(err, trace.ErrPlan) {
					t.Fatalf("trace %d: %v", i, err)
				}
				rejected++
				continue
			}
			checked++
			placed += len(plan.Placements)
			if got, want := checkKeys(rep), bruteCheckPlaced(m, plan); !equalKeys(got, want) {
				t.Fatalf("trace %d: plan %v %v: check disagrees with the oracle\ngot  %v\nwant %v\n%s",
					i, plan.Offsets, plan.Placements, got, want, trace.Marshal(tr))
			}
			for _, v := range rep.Violations {
				rules[v.Rule]++
			}
			if err := p.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d plans checked (%d placements), %d rejected; violations by rule: %v", checked, placed, rejected, rules)
	if checked < n/2 || placed < n || rules[ViolationTakenOver] == 0 || rules[ViolationUnordered] == 0 || rules[ViolationSameOp] == 0 {
		t.Fatalf("the generator does not exercise placements: %d checked, %d placed, rules %v", checked, placed, rules)
	}
}
