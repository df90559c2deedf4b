package liveness

import (
	"math/bits"

	sasync "github.com/subarena/subarena/sync"
)

// group is the value of one tree key: the users covering exactly [lo, hi)
// (list). A key with none stays in the tree until a sweep (Index.empty).
type group struct {
	lo, hi int64
	// The users are inl[:n] while they fit (a key usually has one or two:
	// a tensor's writer, a reader), so that such a group holds no pointer
	// for the collector to follow, and more[:n] beyond (more keeps its
	// storage when they fit again).
	n    int32
	inl  [inlineUsers]UserID
	more []UserID
	// A summary of users for the fence questions, which depend only on
	// each engine's latest user (reuse rules are monotone in the seq):
	// last[e] is the highest seq of a user on engine e, engines has bit e
	// set exactly when some user is on e, and unknown counts the unknown
	// users. Kept by AddUser and drop.
	last    [sasync.MaxEngines]sasync.Seq
	engines uint32
	unknown int32
}

// inlineUsers is how many users a group lists without an array of its own.
const inlineUsers = 2

// list returns g's users. The slice is g's: valid until g changes.
func (g *group) list() []UserID {
	if g.n <= inlineUsers {
		return g.inl[:g.n]
	}
	return g.more[:g.n]
}

// add lists user id.
func (g *group) add(id UserID) {
	switch {
	case g.n < inlineUsers:
		g.inl[g.n] = id
	case g.n == inlineUsers:
		g.more = append(append(g.more[:0], g.inl[:]...), id)
	default:
		g.more = append(g.more[:g.n], id)
	}
	g.n++
}

// remove takes user id off the list, if listed; the last user takes its
// place.
func (g *group) remove(id UserID) {
	l := g.list()
	for j, v := range l {
		if v == id {
			l[j] = l[len(l)-1]
			g.n--
			if g.n == inlineUsers {
				copy(g.inl[:], g.more[:inlineUsers])
			}
			return
		}
	}
}

// note adds user u to g's summary.
func (g *group) note(u *user) {
	if u.unknown {
		g.unknown++
		return
	}
	e := u.ev.Engine
	g.last[e] = max(g.last[e], u.ev.Seq)
	g.engines |= 1 << e
}

// forget removes user u (already taken off g's list) from g's summary:
// when u was its engine's latest, the next latest is found among the
// users left (rare: an engine's users complete in seq order, so its
// latest goes last).
func (g *group) forget(u *user, users []user) {
	if u.unknown {
		g.unknown--
		return
	}
	e := u.ev.Engine
	if u.ev.Seq < g.last[e] {
		return
	}
	g.last[e], g.engines = 0, g.engines&^(1<<e)
	for _, id := range g.list() {
		if o := &users[id]; !o.unknown && o.ev.Engine == e {
			g.last[e] = max(g.last[e], o.ev.Seq)
			g.engines |= 1 << e
		}
	}
}

// safe reports whether every user of g is known and passes safe, asking
// only each engine's latest: safe must be monotone in the seq (if it holds
// for e#s, it holds for every earlier op of e), as a reuse rule is.
func (g *group) safe(safe func(sasync.Event) bool) bool {
	if g.unknown > 0 {
		return false
	}
	for m := g.engines; m != 0; m &= m - 1 {
		e := sasync.EngineID(bits.TrailingZeros32(m))
		if !safe(sasync.Event{Engine: e, Seq: g.last[e]}) {
			return false
		}
	}
	return true
}

// joinFence joins g's users' events into fence (per engine, the latest)
// and reports whether g has an unknown user.
func (g *group) joinFence(fence *sasync.Clock) (unknown bool) {
	for m := g.engines; m != 0; m &= m - 1 {
		e := bits.TrailingZeros32(m)
		fence[e] = max(fence[e], g.last[e])
	}
	return g.unknown > 0
}
