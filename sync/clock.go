package sync

import (
	"strconv"
	"strings"
)

// MaxEngines is the most engines one Timeline can hold. A Clock is a fixed
// [MaxEngines]Seq array rather than a map or a slice so that joining,
// comparing and copying clocks is a straight loop over 16 words (128 bytes,
// two cache lines) with no allocation and no bounds bookkeeping. Sixteen
// covers every device we model with room to spare: a few compute queues, a
// copy/DMA engine each way, the network and a host thread or two.
const MaxEngines = 16

// EngineID names an engine within one Timeline. IDs are dense: the i-th
// engine added gets ID i, so every valid ID is < MaxEngines.
type EngineID uint8

// Kind says what sort of hardware queue an engine models. It is descriptive
// only: happens-before and completion treat every kind alike.
type Kind uint8

// The engine kinds.
const (
	// Compute is a kernel queue (a CUDA stream, a Vulkan compute queue, a
	// CPU worker pool running one graph in order).
	Compute Kind = iota
	// Copy is a copy or DMA engine moving bytes between memories.
	Copy
	// Network is a collective or point-to-point transfer queue.
	Network
	// Host is a host thread issuing work in program order.
	Host
	numKinds
)

// String returns the lower-case name of k ("compute", "copy", "network",
// "host"), or "kind(N)" for a value outside the defined kinds.
func (k Kind) String() string {
	switch k {
	case Compute:
		return "compute"
	case Copy:
		return "copy"
	case Network:
		return "network"
	case Host:
		return "host"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool { return k < numKinds }

// Engine describes one strictly ordered queue: ops submitted to it start and
// complete in submission order.
type Engine struct {
	ID   EngineID
	Name string
	Kind Kind
}

// Seq numbers the ops of one engine in submission order. The first op is 1;
// 0 means "nothing", so a zero Clock covers no op at all.
type Seq uint64

// Event is the completion of one submitted op: the Seq-th op of Engine.
// The zero Event (engine 0, seq 0) names no op.
type Event struct {
	Engine EngineID
	Seq    Seq
}

// IsZero reports whether ev names no op (its Seq is 0).
func (ev Event) IsZero() bool { return ev.Seq == 0 }

// String formats ev as "e<engine>#<seq>", or "none" for a zero Event.
func (ev Event) String() string {
	if ev.IsZero() {
		return "none"
	}
	return "e" + strconv.Itoa(int(ev.Engine)) + "#" + strconv.FormatUint(uint64(ev.Seq), 10)
}

// Clock is a vector clock over the engines of one Timeline: c[e] = s says
// that every op of engine e with seq <= s is covered (happens-before, or has
// completed, depending on what the clock describes). Because ops on one
// engine are ordered, one number per engine is enough.
//
// The zero Clock covers nothing. Methods take pointers so that the 128-byte
// array is not copied on every call; a nil *Clock reads as the zero Clock,
// and the mutating methods do nothing on a nil receiver.
type Clock [MaxEngines]Seq

// joinFirst sets components [0, n) of c to the maximum of c's and o's:
// the whole join when o's components from n on are zero, as those of
// every clock a Timeline with n engines keeps are (its engines are
// [0, n)). It costs O(n), not O(MaxEngines). Neither may be nil.
func (c *Clock) joinFirst(o *Clock, n int) {
	cs := c[:n]
	os := o[:len(cs)]
	for i, s := range os {
		if s > cs[i] {
			cs[i] = s
		}
	}
}

// lessEqFirst reports whether c <= o when o's components from n on are
// zero (a Timeline's clocks, with n engines): c's first n components are
// compared and the rest must be zero. Neither may be nil.
func (c *Clock) lessEqFirst(o *Clock, n int) bool {
	var tail Seq
	for _, s := range c[n:] {
		tail |= s
	}
	if tail != 0 {
		return false
	}
	cs := c[:n]
	os := o[:len(cs)]
	for i, s := range cs {
		if s > os[i] {
			return false
		}
	}
	return true
}

// lessEqJoinFirst is c.lessEqFirst(o ⊔ p) without building the join: c's
// first n components are each at most o's or p's, and the rest are zero.
// p may be nil (the zero Clock); o may not.
func (c *Clock) lessEqJoinFirst(o, p *Clock, n int) bool {
	var tail Seq
	for _, s := range c[n:] {
		tail |= s
	}
	if tail != 0 {
		return false
	}
	if p == nil {
		p = &Clock{}
	}
	cs := c[:n]
	os, ps := o[:len(cs)], p[:len(cs)]
	for i, s := range cs {
		if s > os[i] && s > ps[i] {
			return false
		}
	}
	return true
}

// Join sets c to the component-wise maximum of c and o.
func (c *Clock) Join(o *Clock) {
	if c == nil || o == nil {
		return
	}
	for i := range c {
		if o[i] > c[i] {
			c[i] = o[i]
		}
	}
}

// Covers reports whether ev.Seq <= c[ev.Engine]: whether the op ev is among
// those c covers. A zero Event is covered by every clock; an event on an
// engine ID >= MaxEngines is covered by none.
func (c *Clock) Covers(ev Event) bool {
	if ev.Seq == 0 {
		return true
	}
	if c == nil || int(ev.Engine) >= MaxEngines {
		return false
	}
	return ev.Seq <= c[ev.Engine]
}

// LessEq reports whether c[e] <= o[e] for every engine e: whether o covers
// everything c covers.
func (c *Clock) LessEq(o *Clock) bool {
	var zero Clock
	if c == nil {
		c = &zero
	}
	if o == nil {
		o = &zero
	}
	for i := range c {
		if c[i] > o[i] {
			return false
		}
	}
	return true
}

// SafeUnder reports whether every op c covers has completed or
// happens-before an op whose clock is at: for every engine e,
// c[e] <= max(at[e], completed[e]). This is the reuse rule on clocks. With
// c the fence of released bytes and at a writer's point or op clock, it
// says the writer may take or use those bytes. Completed is safe, whatever
// the clocks say: an op whose ancestry was forgotten (Timeline.Forget) may
// not cover a completed component of c, and it need not. A nil c is safe
// under anything; a nil at or completed reads as the zero Clock.
func (c *Clock) SafeUnder(at, completed *Clock) bool {
	if c == nil {
		return true
	}
	var zero Clock
	if at == nil {
		at = &zero
	}
	if completed == nil {
		completed = &zero
	}
	for e, s := range c {
		if !(Event{Engine: EngineID(e), Seq: s}).SafeUnder(at, completed) {
			return false
		}
	}
	return true
}

// SafeUnder is the reuse rule for one op: ev has completed or
// happens-before an op whose clock is at, ev.Seq <= max(at[ev.Engine],
// completed[ev.Engine]). Clock.SafeUnder applies it to every component of a
// fence. An event on an engine ID >= MaxEngines is never safe.
func (ev Event) SafeUnder(at, completed *Clock) bool {
	if int(ev.Engine) >= MaxEngines {
		return false
	}
	return ev.Seq <= at[ev.Engine] || ev.Seq <= completed[ev.Engine]
}

// Observe raises c[ev.Engine] to ev.Seq if it is lower, so that c covers ev
// (and, by engine order, every earlier op of ev.Engine). An event on an
// engine ID >= MaxEngines is ignored.
func (c *Clock) Observe(ev Event) {
	if c == nil || int(ev.Engine) >= MaxEngines {
		return
	}
	if ev.Seq > c[ev.Engine] {
		c[ev.Engine] = ev.Seq
	}
}

// IsZero reports whether c covers nothing.
func (c *Clock) IsZero() bool {
	if c == nil {
		return true
	}
	return *c == Clock{}
}

// String lists the non-zero components as "{e0:3 e2:1}"; the zero Clock is
// "{}". It takes a value so that fmt prints Clock values this way too.
func (c Clock) String() string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for i, s := range c {
		if s == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString("e")
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(':')
		b.WriteString(strconv.FormatUint(uint64(s), 10))
	}
	b.WriteByte('}')
	return b.String()
}

// Point is where the next op on Engine will start. Clock is what
// happens-before that start: the engine's last submitted op itself,
// everything that happens-before that op (including its waits), and every
// op a HostSync has made happen-before all later submissions. It does NOT
// include the waits of ops submitted to Engine later: those are not known
// yet, and an allocation made at this point must not assume them.
type Point struct {
	Engine EngineID
	Clock  Clock
}
