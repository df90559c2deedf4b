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
	c := &placedCheck{m: m, plan: plan, host: map[string]string{}, foot: map[string][]int64{}, out: map[oracleKey]int64{}}
	for name, pl := range plan.Placements {
		c.host[name] = pl.Of
		c.foot[name] = testutil.LayoutAddrs(pl.Offset, pl.Shape, pl.Strides)
	}
	c.mapNames()
	c.group()
	c.betweenGroups()
	// Within each group: the host first, then by first op, then by allocation.
	for _, g := range c.groups {
		c.withinGroup(g)
	}
	return c.out
}

// placedName is a name's bytes and element addresses in the arena.
type placedName struct {
	buf   string
	bytes map[int64]bool
	addrs []int64
	elem  int64
}

// placedUser is one use of a name by an op.
type placedUser struct {
	op   int
	name string
}

// placedCheck is bruteCheckPlaced's state: the plan's footprints, every
// name mapped into the arena, the groups (a host and the buffers placed
// over it), and the violations found.
type placedCheck struct {
	m    *oracleModel
	plan *trace.Plan
	host map[string]string  // placed buffer → its host
	foot map[string][]int64 // placed buffer → its elements' offsets in the host
	info map[string]*placedName

	groups  []string            // the buffers with offsets, in buffer order
	members map[string][]string // group → its buffers, the host first
	final   map[string]int      // group → its last release (MaxInt: never)

	out map[oracleKey]int64
}

func (c *placedCheck) groupOf(buf string) string {
	if h, ok := c.host[buf]; ok {
		return h
	}
	return buf
}

// arena returns the arena byte of buf's byte x.
func (c *placedCheck) arena(buf string, x int64) int64 {
	if h, ok := c.host[buf]; ok {
		e := c.m.views[buf].elem
		return c.plan.Offsets[h] + c.foot[buf][x/e] + x%e
	}
	return c.plan.Offsets[buf] + x
}

// mapNames maps every name's bytes and element addresses into the arena.
func (c *placedCheck) mapNames() {
	c.info = map[string]*placedName{}
	for name, v := range c.m.views {
		if c.m.external[v.buf] {
			continue
		}
		ni := &placedName{buf: v.buf, bytes: map[int64]bool{}, elem: v.elem}
		for x, ok := range v.bytes {
			if ok {
				ni.bytes[c.arena(v.buf, int64(x))] = true
			}
		}
		for _, a := range v.addrs {
			ni.addrs = append(ni.addrs, c.arena(v.buf, a))
		}
		c.info[name] = ni
	}
}

func (c *placedCheck) sameArena(a, b string) bool {
	x, y := c.info[a], c.info[b]
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

// users returns the uses of arena byte a through a name of a buffer
// through accepts, in op order.
func (c *placedCheck) users(a int64, through func(buf string) bool) []placedUser {
	var us []placedUser
	for k, o := range c.m.ops {
		for _, u := range o.uses {
			if ni := c.info[u.name]; ni != nil && through(ni.buf) && ni.bytes[a] {
				us = append(us, placedUser{k, u.name})
			}
		}
	}
	return us
}

// group collects the groups, their members and their last releases.
func (c *placedCheck) group() {
	m := c.m
	c.members = map[string][]string{}
	for _, b := range m.bufOrder {
		if m.external[b] {
			continue
		}
		if _, placed := c.host[b]; !placed {
			c.groups = append(c.groups, b)
		}
		c.members[c.groupOf(b)] = append(c.members[c.groupOf(b)], b)
	}
	c.final = map[string]int{}
	for _, g := range c.groups {
		c.final[g] = -1
		for _, b := range c.members[g] {
			r, ok := m.release[b]
			if !ok {
				c.final[g] = math.MaxInt
				break
			}
			c.final[g] = max(c.final[g], r)
		}
	}
}

// death returns the step at which group g's byte a goes: the first
// discard covering it, else the group's last release.
func (c *placedCheck) death(g string, a int64) int {
	m := c.m
	d := c.final[g]
	for name, v := range m.views {
		if !v.natural && v.discardStep >= 0 && !m.external[v.buf] && c.groupOf(v.buf) == g && c.info[name].bytes[a] {
			d = min(d, v.discardStep)
		}
	}
	return d
}

// rule returns the violation of us after uf on one byte, or "".
func (c *placedCheck) rule(uf, us placedUser, held bool) string {
	switch {
	case held:
		return ViolationHeld
	case uf.op == us.op:
		if !c.m.ops[uf.op].inplace || !c.sameArena(uf.name, us.name) {
			return ViolationSameOp
		}
	case !c.m.hb[uf.op][us.op]:
		return ViolationUnordered
	}
	return ""
}

func (c *placedCheck) record(r string, uf, us placedUser) {
	if r != "" {
		m, info := c.m, c.info
		c.out[oracleKey{r, info[uf.name].buf, m.ops[uf.op].name, uf.name, info[us.name].buf, m.ops[us.op].name, us.name}]++
	}
}

// betweenGroups checks the groups against each other as buffers are.
func (c *placedCheck) betweenGroups() {
	m := c.m
	for i, a := range c.groups {
		for _, b := range c.groups[i+1:] {
			offA, offB := c.plan.Offsets[a], c.plan.Offsets[b]
			for x := max(offA, offB); x < min(offA+m.size[a], offB+m.size[b]); x++ {
				da, db := c.death(a, x), c.death(b, x)
				first, second := a, b
				if db < da || (db == da && m.allocAt[b] < m.allocAt[a]) {
					first, second = b, a
				}
				in := func(g string) func(string) bool { return func(buf string) bool { return c.groupOf(buf) == g } }
				for _, uf := range c.users(x, in(first)) {
					for _, us := range c.users(x, in(second)) {
						c.record(c.rule(uf, us, da == math.MaxInt && db == math.MaxInt), uf, us)
					}
				}
			}
		}
	}
}

// firstOp returns the first op using a name of buf (len(ops) if none).
func (c *placedCheck) firstOp(buf string) int {
	for k, o := range c.m.ops {
		for _, u := range o.uses {
			if ni := c.info[u.name]; ni != nil && ni.buf == buf {
				return k
			}
		}
	}
	return len(c.m.ops)
}

// heldBy reports whether buf, never released, still holds its byte a: no
// discard of one of its views covers it.
func (c *placedCheck) heldBy(buf string, a int64) bool {
	if _, ok := c.m.release[buf]; ok || !c.info[buf].bytes[a] {
		return false
	}
	for name, v := range c.m.views {
		if !v.natural && v.buf == buf && v.discardStep >= 0 && c.info[name].bytes[a] {
			return false
		}
	}
	return true
}

// withinGroup checks every earlier buffer of group g (the host, then by
// first op, then by allocation) against every later one.
func (c *placedCheck) withinGroup(g string) {
	m := c.m
	owners := c.members[g]
	if len(owners) < 2 {
		return
	}
	rest := owners[1:]
	sort.SliceStable(rest, func(i, j int) bool {
		fi, fj := c.firstOp(rest[i]), c.firstOp(rest[j])
		if fi != fj {
			return fi < fj
		}
		return m.allocAt[rest[i]] < m.allocAt[rest[j]]
	})
	off := c.plan.Offsets[g]
	for i, x := range owners {
		for _, y := range owners[i+1:] {
			is := func(b string) func(string) bool { return func(buf string) bool { return buf == b } }
			for a := off; a < off+m.size[g]; a++ {
				for _, ux := range c.users(a, is(x)) {
					for _, uy := range c.users(a, is(y)) {
						if c.heldBy(x, a) {
							c.record(ViolationTakenOver, ux, uy)
							continue
						}
						c.record(c.rule(ux, uy, false), ux, uy)
					}
				}
			}
		}
	}
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
