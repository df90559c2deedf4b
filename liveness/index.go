package liveness

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// Sentinel errors. A call that returns one has changed nothing.
var (
	// ErrUnknownUser: the UserID is not a pending user of this Index (never
	// added, or already completed or removed).
	ErrUnknownUser = errors.New("liveness: unknown user")
	// ErrInvalidRange: a run is empty, negative or reversed.
	ErrInvalidRange = errors.New("liveness: invalid range")
	// ErrInvalidGranule: the granule is not a positive power of two.
	ErrInvalidGranule = errors.New("liveness: granule must be a positive power of two")
	// ErrInvalidMode: New was given a Mode that is not one of the five.
	ErrInvalidMode = errors.New("liveness: invalid mode")
	// ErrNotHeld: bytes released twice, or released while already held.
	ErrNotHeld = errors.New("liveness: bytes already held")
)

// UserID names one pending user. IDs are reused after the user is gone, so
// a UserID is meaningful only while its user is pending.
type UserID int32

// user is one op pinning the bytes of one view until its event completes.
//
// Invariants while live: runs is normalized (sorted, disjoint, non-empty);
// every run is a key of the tree whose group lists this user exactly once;
// a known user sits exactly once in queues[ev.Engine].
type user struct {
	ev      sasync.Event
	unknown bool
	live    bool
	// counted says that the user's runs are in the pending counts; until
	// then it is listed in Index.uncounted.
	counted bool
	gen     uint32
	// The runs are one[:] for a user of one run (most are: a dense view),
	// so that it needs no array of its own, and more for a user of
	// several (len(more) > 1; more keeps its storage for the slot's next
	// users).
	one  [1]ranges.Range
	more []ranges.Range
}

// runs returns u's runs. The slice is u's: valid until u's slot is
// reused, and for one run only while x.users does not grow (AddUser).
func (u *user) runs() []ranges.Range {
	if len(u.more) > 0 {
		return u.more
	}
	return u.one[:]
}

// setRuns stores a copy of runs (at least one) as u's.
func (u *user) setRuns(runs []ranges.Range) {
	if len(runs) == 1 {
		u.one[0] = runs[0]
		u.more = u.more[:0] // apart: a reslice of itself stores no pointer
		return
	}
	u.more = append(u.more[:0], runs...)
}

// countChange is one logged removal from the pending counts: a counted
// user's run r, on engine (or, for an unknown user, -1) as well as
// overall.
type countChange struct {
	r      ranges.Range
	engine int32
}

// maxCountLog bounds the log of pending-count removals and the list of
// users not yet counted: past it they are applied, so their memory stays
// bounded when no one asks for the figures.
const maxCountLog = 4096

// queued is one entry of an engine's FIFO: gen detects a user removed (and
// its slot reused) before its event completed.
type queued struct {
	seq sasync.Seq
	id  UserID
	gen uint32
}

// piece is a released buffer in whole mode: its held bytes return together.
type piece struct {
	bytes ranges.Set
	id    uint64 // names the piece to SafeRuns' scan (whole fenced mode)
}

// Index is the pending-user index over one arena's bytes, plus the held
// bytes waiting to return. The zero value is not usable; call New.
type Index struct {
	granule int64
	mode    Mode

	keyIndex      // the keys: every run some user or held byte names, and its group
	userQueues    // the users, and per engine the order they complete in
	heldIndex     // released bytes not yet returned, and (whole mode) their pieces
	pendingCounts // how many (user, run) pairs cover each byte, overall and per engine

	// broken records the first failure of the Index's own bookkeeping
	// (a count that would go below zero); CheckInvariants reports it.
	broken error

	groupAlloc // where groups come from
	scratch    // reused by queries and updates; holds nothing between calls but scan
}

// keyIndex is the Index's keys: tree and byRun hold the same keys and
// groups; recent caches byRun.
type keyIndex struct {
	tree keyTree
	keys int // number of keys in tree
	// empty counts keys whose group has no users. They stay in the tree so
	// that a view used again finds its key without an insertion (no
	// allocation), and are swept when they outnumber the others.
	empty int
	// byRun finds a key's group without descending the tree; the tree
	// answers only overlap queries. Same keys, same groups.
	byRun map[ranges.Range]*group
	// recent caches byRun: recent[recentSlot(r)] is the group of run r, or
	// of another run, or nil. A key's group is found here without hashing
	// through the map when its run was looked up lately (a view used
	// again, a buffer released while its user is pending). Every group it
	// holds is a key's: maybeSweep, the only place keys leave the tree,
	// empties it.
	recent [recentSlots]*group
}

// userQueues is the users by id and, per engine, in submission order.
type userQueues struct {
	users   []user
	freeIDs []UserID
	pending int // live users
	queues  [sasync.MaxEngines][]queued
	heads   [sasync.MaxEngines]int
	// queued has bit e set exactly when queues[e] has entries past
	// heads[e]: Complete looks at those engines only.
	queued uint32
}

// heldIndex is the released bytes waiting to return: heldBytes ==
// held.Len(), and in whole mode the pieces they came in.
type heldIndex struct {
	held      ranges.Set // released bytes not yet returned
	heldBytes int64      // held.Len(), kept up to date
	pieces    []piece    // whole mode: pinned released buffers (storage past len is reused)
	// pieceAt finds the pieces over given bytes (whole mode).
	pieceAt pieceIndex
	// pieceCand is scratch: the places of the pieces a reclaim or a take
	// looks at.
	pieceCand []int32
	// pieceVisits counts the pieces (and pieces' runs) reclaim and
	// TakeRanges have looked at: the work a test bounds.
	pieceVisits int
}

// pendingCounts is the covered counts of pending bytes.
type pendingCounts struct {
	// pendingAll counts the (user, run) pairs over every byte; pendingOn[e]
	// those of known users on engine e. Their covered counts are the union
	// of pending bytes, overall and per engine. A new user is listed in
	// uncounted (by id and generation) and counted when the figures are
	// asked for (or the list is long); the runs of a counted user that
	// goes are logged in countLog and taken out then too. A user that
	// comes and goes before anyone asks — a tensor's writer and readers,
	// added and completed together — is never counted: it costs an entry
	// in uncounted.
	pendingAll coverage
	pendingOn  [sasync.MaxEngines]coverage
	uncounted  []queued
	countLog   []countChange
	// countNodesBuilt is pendingAll's size after its last rebuild.
	countNodesBuilt int
}

// groupAlloc hands out groups: from the pool of freed ones, else from
// the current chunk.
type groupAlloc struct {
	groupPool  []*group
	groupChunk []group // groups not handed out yet (newGroup)
}

// scratch is reused so that queries and updates do not allocate. A
// SafeRuns pass keeps the granules the held bytes fill (wholeGranules;
// nearHeld for a piece's in whole mode), and for each run of those finds
// the bytes some pending user pins (pinned), the granules those touch
// (pinnedGranules) and what is left (unpinned); a whole-mode reclaim does
// the same for the fully held granules near the bytes it was told about
// (touched). A reclaim collects what returns in freed.
type scratch struct {
	pinned         ranges.Set
	unpinned       ranges.Set
	touched        ranges.Set // bytes whose pins just changed
	nearHeld       ranges.Set
	wholeGranules  ranges.Set
	pinnedGranules ranges.Set
	freed          []ranges.Range // the granules a reclaim returns
	// scan is what SafeRuns keeps from one pass to the next (take.go).
	scan safeScan
}

// New returns an empty Index for an arena with the given granule (a power of
// two) and mode. An undefined mode fails with ErrInvalidMode.
func New(granule int64, mode Mode) (*Index, error) {
	if granule <= 0 || granule&(granule-1) != 0 {
		return nil, fmt.Errorf("%w: %d", ErrInvalidGranule, granule)
	}
	if !mode.Valid() {
		return nil, fmt.Errorf("%w: %v", ErrInvalidMode, mode)
	}
	return &Index{
		granule:  granule,
		mode:     mode,
		keyIndex: keyIndex{byRun: make(map[ranges.Range]*group)},
	}, nil
}

// Mode returns the mode the Index was created with.
func (x *Index) Mode() Mode { return x.mode }

// Granule returns the granule the Index was created with.
func (x *Index) Granule() int64 { return x.granule }

// Pending returns the number of pending users (known and unknown).
func (x *Index) Pending() int { return x.pending }

// Held returns the released bytes that have not yet returned to the arena.
// The set is owned by the Index: read it, do not keep or modify it.
func (x *Index) Held() *ranges.Set { return &x.held }

// HeldBytes returns Held().Len() in O(1).
func (x *Index) HeldBytes() int64 { return x.heldBytes }

// AddUser records a pending user: the op behind ev pins exactly the bytes of
// runs (absolute arena offsets, normalized as a ranges.Set's runs are) until
// ev completes. An unknown user (unknown = true; ev is ignored) pins them
// until RemoveUser. runs is copied.
func (x *Index) AddUser(ev sasync.Event, unknown bool, runs []ranges.Range) (UserID, error) {
	if invariants.Enabled {
		defer x.verify()
	}
	for i, r := range runs {
		if r.Lo < 0 || r.Hi <= r.Lo || (i > 0 && r.Lo <= runs[i-1].Hi) {
			return -1, fmt.Errorf("%w: run %d %v", ErrInvalidRange, i, r)
		}
	}
	if !unknown && int(ev.Engine) >= sasync.MaxEngines {
		return -1, fmt.Errorf("%w: engine %d", sasync.ErrUnknownEngine, ev.Engine)
	}
	x.scan.added(runs)
	var id UserID
	if n := len(x.freeIDs); n > 0 {
		id = x.freeIDs[n-1]
		x.freeIDs = x.freeIDs[:n-1]
	} else {
		x.users = append(x.users, user{})
		id = UserID(len(x.users) - 1)
	}
	u := &x.users[id]
	u.ev, u.unknown, u.live, u.counted = ev, unknown, true, false
	u.gen++
	u.setRuns(runs)
	x.uncounted = append(x.uncounted, queued{id: id, gen: u.gen})
	for _, r := range runs {
		g, ok := x.group(r)
		if !ok {
			g = x.newGroup(r)
			x.tree.Insert(r.Lo, r.Hi, g)
			x.byRun[r] = g
			x.recent[recentSlot(r)] = g
			x.keys++
		} else if g.n == 0 {
			x.empty--
		}
		g.add(id)
		g.note(u)
	}
	if !unknown {
		x.enqueue(ev, id, u.gen)
	}
	x.pending++
	x.boundCountLog()
	return id, nil
}

// groupChunk is the number of groups newGroup makes at a time.
const groupChunk = 64

// recentSlots is the size of Index.recent.
const recentSlots = 256

// recentSlot returns r's slot in Index.recent: a multiplicative hash of
// its bounds.
func recentSlot(r ranges.Range) int {
	h := uint64(r.Lo)*0x9e3779b97f4a7c15 ^ uint64(r.Hi)*0xc2b2ae3d27d4eb4f
	return int(h >> 56) // 56 = 64 - log2(recentSlots)
}

// group returns the group of the key r, and whether r is a key.
func (x *Index) group(r ranges.Range) (*group, bool) {
	slot := recentSlot(r)
	if g := x.recent[slot]; g != nil && g.lo == r.Lo && g.hi == r.Hi {
		return g, true
	}
	g, ok := x.byRun[r]
	if ok {
		x.recent[slot] = g
	}
	return g, ok
}

func (x *Index) newGroup(r ranges.Range) *group {
	var g *group
	if n := len(x.groupPool); n > 0 {
		g = x.groupPool[n-1]
		x.groupPool = x.groupPool[:n-1]
	} else {
		// Groups are made groupChunk at a time, one object for the
		// collector to mark instead of one per key.
		if len(x.groupChunk) == 0 {
			x.groupChunk = make([]group, groupChunk)
		}
		g = &x.groupChunk[0]
		x.groupChunk = x.groupChunk[1:]
	}
	g.lo, g.hi, g.n = r.Lo, r.Hi, 0
	g.last, g.engines, g.unknown = sasync.Clock{}, 0, 0
	return g
}

// enqueue inserts (ev, id) into its engine's FIFO, keeping it sorted by seq.
// Events almost always arrive in order, so this is an append.
func (x *Index) enqueue(ev sasync.Event, id UserID, gen uint32) {
	q := x.queues[ev.Engine]
	e := queued{seq: ev.Seq, id: id, gen: gen}
	x.queued |= 1 << ev.Engine
	if n := len(q); n == x.heads[ev.Engine] || q[n-1].seq <= ev.Seq {
		// Appended to the queue itself: when it fits, only the length is
		// stored (no write barrier).
		x.queues[ev.Engine] = append(x.queues[ev.Engine], e)
		return
	}
	i := len(q)
	for i > x.heads[ev.Engine] && q[i-1].seq > ev.Seq {
		i--
	}
	q = append(q, queued{})
	copy(q[i+1:], q[i:])
	q[i] = e
	x.queues[ev.Engine] = q
}

// RemoveUser drops a pending user (a cancelled reservation, or an unknown
// user whose op turned out never to run) and returns its bytes to the held
// bytes' accounting: held bytes it alone pinned return through free.
func (x *Index) RemoveUser(id UserID, free func(ranges.Range)) error {
	if invariants.Enabled {
		defer x.verify()
	}
	if id < 0 || int(id) >= len(x.users) || !x.users[id].live {
		return fmt.Errorf("%w: %d", ErrUnknownUser, id)
	}
	x.removing(x.users[id].runs())
	x.touched.Reset()
	x.drop(id)
	x.reclaim(free)
	x.maybeSweep()
	return nil
}

// drop removes user id from the tree and marks it dead; each of its runs
// that no other user covers exactly is added to x.touched. A run another
// user still covers whole keeps every granule it touches pinned, so
// nothing there can return: reclaim need not look. Its queue entry, if
// any, is skipped later by generation.
func (x *Index) drop(id UserID) {
	u := &x.users[id]
	if !u.counted {
		x.unlist(id, u.gen)
	}
	for _, r := range u.runs() {
		if u.counted {
			x.uncount(r, u)
		}
		g, ok := x.group(r)
		if !ok {
			continue // unreachable while invariants hold
		}
		g.remove(id)
		g.forget(u, x.users)
		if g.n == 0 {
			x.empty++
			x.touched.Add(r)
		}
	}
	u.live = false
	x.pending--
	x.freeIDs = append(x.freeIDs, id)
}

// unlistWindow is how many of the latest uncounted users a user that goes
// uncounted is looked for among.
const unlistWindow = 16

// unlist takes user id, of generation gen, off the uncounted list when it
// is among the last few there (a tensor's users go soon after they come):
// the list then stays short while no one asks for the figures. One not
// found stays listed, and applyCounts skips it.
func (x *Index) unlist(id UserID, gen uint32) {
	l := x.uncounted
	for i := len(l) - 1; i >= max(0, len(l)-unlistWindow); i-- {
		if l[i].id == id && l[i].gen == gen {
			// Close the gap by hand: a few entries at most, usually none.
			for j := i + 1; j < len(l); j++ {
				l[j-1] = l[j]
			}
			x.uncounted = l[:len(l)-1]
			return
		}
	}
}

// uncount logs the removal of u's run r from the pending counts (u is
// counted).
func (x *Index) uncount(r ranges.Range, u *user) {
	c := countChange{r: r, engine: -1}
	if !u.unknown {
		c.engine = int32(u.ev.Engine)
	}
	x.countLog = append(x.countLog, c)
}

// boundCountLog applies the log and the uncounted users once either is
// long. It is called where every user's runs are counted as its liveness
// says (not halfway through adding or dropping one), since applying may
// rebuild the counts from the users.
func (x *Index) boundCountLog() {
	if len(x.countLog) >= maxCountLog || len(x.uncounted) >= maxCountLog {
		x.applyCounts()
	}
}

// applyCounts counts the users listed as uncounted that are still live,
// takes the logged removals out of the pending counts, and compacts them
// when they have grown.
func (x *Index) applyCounts() {
	for _, q := range x.uncounted {
		u := &x.users[q.id]
		if !u.live || u.gen != q.gen || u.counted {
			continue // gone before it was counted
		}
		u.counted = true
		for _, r := range u.runs() {
			x.pendingAll.add(r.Lo, r.Hi, +1)
			if !u.unknown {
				x.pendingOn[u.ev.Engine].add(r.Lo, r.Hi, +1)
			}
		}
	}
	x.uncounted = x.uncounted[:0]
	for _, c := range x.countLog {
		ok := x.pendingAll.add(c.r.Lo, c.r.Hi, -1)
		if c.engine >= 0 {
			ok = x.pendingOn[c.engine].add(c.r.Lo, c.r.Hi, -1) && ok
		}
		if !ok && x.broken == nil {
			x.broken = fmt.Errorf("liveness: internal: pending count of %v below zero", c.r)
		}
	}
	x.countLog = x.countLog[:0]
	x.compactCounts()
}

// compactCounts rebuilds the pending counts from the live users once their
// trees hold many more nodes than the users need (runs that came and went
// at many distinct offsets while some user stayed pending throughout):
// when they have grown to twice their size after the last rebuild. The log
// and the list of uncounted users must be empty. Amortized O(log arena)
// per logged change.
func (x *Index) compactCounts() {
	if n := x.pendingAll.size(); n < 1<<14 || n < 2*x.countNodesBuilt {
		return
	}
	x.pendingAll.reset()
	for e := range x.pendingOn {
		x.pendingOn[e].reset()
	}
	for id := range x.users {
		u := &x.users[id]
		if !u.live {
			continue
		}
		for _, r := range u.runs() {
			x.pendingAll.add(r.Lo, r.Hi, +1)
			if !u.unknown {
				x.pendingOn[u.ev.Engine].add(r.Lo, r.Hi, +1)
			}
		}
	}
	x.countNodesBuilt = x.pendingAll.size()
}

// Complete removes every known user whose event is covered by the
// completed clock, and returns through free the held bytes that thereby
// lost their last pending user. It returns the number of users completed.
func (x *Index) Complete(completed *sasync.Clock, free func(ranges.Range)) int {
	if invariants.Enabled {
		defer x.verify()
	}
	x.touched.Reset()
	n := 0
	for m := x.queued; m != 0; m &= m - 1 {
		e := bits.TrailingZeros32(m)
		q, h := x.queues[e], x.heads[e]
		if q[h].seq > completed[e] {
			continue // nothing of engine e completed: leave its queue as it is
		}
		x.scan.completed(e, completed[e])
		for h < len(q) && q[h].seq <= completed[e] {
			en := q[h]
			h++
			u := &x.users[en.id]
			if !u.live || u.gen != en.gen {
				continue
			}
			x.drop(en.id)
			n++
		}
		if h == len(q) {
			x.queues[e] = x.queues[e][:0]
			h = 0
			x.queued &^= 1 << e
		} else if h > 64 && h > len(q)/2 {
			m := copy(q, q[h:])
			x.queues[e] = q[:m]
			h = 0
		}
		x.heads[e] = h
	}
	if n > 0 {
		x.reclaim(free)
		x.maybeSweep()
	}
	return n
}

// maybeSweep deletes the empty keys once they are more than half of all
// keys (and more than a few): amortized O(log n) per removed user.
func (x *Index) maybeSweep() {
	x.boundCountLog()
	if x.empty <= 256 || x.empty <= x.keys/2 {
		return
	}
	x.recent = [recentSlots]*group{}
	for r, g := range x.byRun {
		if g.n == 0 {
			x.tree.Delete(r.Lo, r.Hi)
			delete(x.byRun, r)
			x.keys--
			x.groupPool = append(x.groupPool, g)
		}
	}
	x.empty = 0
}

// Covered reports whether any pending user covers a byte of r.
func (x *Index) Covered(r ranges.Range) bool {
	return !x.tree.Overlapping(r.Lo, r.Hi, func(g *group) bool { return g.n == 0 })
}

// Users calls fn for each pending user covering a byte of r, once per
// covering run (a user covering r with several runs is reported once per
// run). It stops early when fn returns false.
func (x *Index) Users(r ranges.Range, fn func(id UserID, ev sasync.Event, unknown bool) bool) {
	x.tree.Overlapping(r.Lo, r.Hi, func(g *group) bool {
		for _, id := range g.list() {
			u := &x.users[id]
			if !fn(id, u.ev, u.unknown) {
				return false
			}
		}
		return true
	})
}

// Fence returns the join of the events of the pending users covering any
// byte of r, and whether an unknown user covers any of it (then no fence
// exists: the bytes are pinned until that user is removed). It reads each
// covering key's summary: O(log n + k·engines) for k keys, whatever the
// number of users.
func (x *Index) Fence(r ranges.Range) (fence sasync.Clock, unknown bool) {
	x.tree.Overlapping(r.Lo, r.Hi, func(g *group) bool {
		unknown = g.joinFence(&fence) || unknown
		return true
	})
	return fence, unknown
}
