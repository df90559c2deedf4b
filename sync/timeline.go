package sync

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/subarena/subarena/internal/invariants"
)

// Timeline records the engines of one device, the ops submitted to them,
// the waits between them, host syncs and completions, and answers
// happens-before and reuse-safety questions about them.
//
// The zero Timeline is ready to use (NewTimeline returns one). A Timeline
// is safe for concurrent use by any number of goroutines.
type Timeline struct {
	// mu guards every field below except subs and the subscriber fields.
	// It is a plain Mutex, not an RWMutex: every critical section is a few
	// comparisons and copies, and an RWMutex's write lock costs two atomic
	// operations more on Submit and Complete, while its readers contend on
	// one shared counter anyway.
	mu sync.Mutex

	// n is the number of engines: valid IDs are [0, n). n <= MaxEngines.
	n int
	// engines[i] describes engine i for i < n; engines[i].ID == i.
	engines [MaxEngines]Engine
	// names maps each engine's name to its ID; len(names) == n.
	names map[string]EngineID

	// hist[e] holds the clock of every op submitted to engine e; its
	// length hist[e].n is the last submitted seq. Clocks are monotone in
	// seq and hist[e].at(s)[e] == s.
	hist [MaxEngines]history
	// completed covers every op known to have completed. It is closed
	// under happens-before, and completed[e] <= hist[e].n.
	completed Clock
	// delivered covers every op whose completion every subscriber has
	// been called with: the join of the clocks of the Completes that have
	// finished calling their subscribers. delivered <= completed.
	delivered Clock
	// delivery is broadcast when delivered grows while someone waits on
	// it (awaiting counts them); its L is &mu, set by the first waiter.
	delivery sync.Cond
	awaiting int
	// host covers every op a HostSync has ordered before all later
	// submissions: the join of the clocks of the synced events. It is
	// closed under happens-before too.
	host Clock
	// spare holds dropped history chunks (length 0, capacity chunkLen) for
	// reuse; len(spare) <= maxSpare.
	spare [][]Clock
	// retain, when > 0, is how many completed ops per engine Complete
	// keeps remembered behind the engine's last completed one (Retain);
	// older ones are forgotten as Complete goes, a chunk at a time.
	retain Seq

	// Copies of each engine's submitted seq and of completed, stored
	// under mu as each changes and read without it, so that Status, the
	// check an allocator makes of every use, takes no lock:
	// submitted[e] == hist[e].n and completedSeq[e] == completed[e]
	// whenever mu is free (both 0 for an engine not added).
	submitted    [MaxEngines]atomic.Uint64
	completedSeq [MaxEngines]atomic.Uint64

	// subMu serializes Subscribe and unsubscribe; subs is the current
	// subscriber list, replaced (never mutated) on change so that Complete
	// can read it without a lock and without allocating.
	subMu   sync.Mutex
	subs    atomic.Pointer[[]subscriber]
	nextSub uint64
}

type subscriber struct {
	id uint64
	fn func(completed Clock)
}

// NewTimeline returns an empty Timeline with no engines.
func NewTimeline() *Timeline { return &Timeline{} }

// AddEngine adds an engine named name of the given kind and returns its ID.
// IDs are handed out densely from 0. It fails with ErrInvalidEngine for an
// empty name or undefined kind, ErrDuplicateEngine if the name is taken and
// ErrTooManyEngines once MaxEngines engines exist.
func (t *Timeline) AddEngine(name string, kind Kind) (EngineID, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if invariants.Enabled {
		defer t.verifyLocked()
	}
	if name == "" {
		return 0, fmt.Errorf("add engine: empty name: %w", ErrInvalidEngine)
	}
	if !kind.Valid() {
		return 0, fmt.Errorf("add engine %q: %v: %w", name, kind, ErrInvalidEngine)
	}
	if _, dup := t.names[name]; dup {
		return 0, fmt.Errorf("add engine %q: %w", name, ErrDuplicateEngine)
	}
	if t.n == MaxEngines {
		return 0, fmt.Errorf("add engine %q: already %d engines: %w", name, MaxEngines, ErrTooManyEngines)
	}
	if t.names == nil {
		t.names = make(map[string]EngineID)
	}
	id := EngineID(t.n)
	t.engines[id] = Engine{ID: id, Name: name, Kind: kind}
	t.names[name] = id
	t.n++
	return id, nil
}

// Engines returns every engine in ID order, in a new slice.
func (t *Timeline) Engines() []Engine {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Engine(nil), t.engines[:t.n]...)
}

// NumEngines returns the number of engines; their IDs are [0, NumEngines()).
func (t *Timeline) NumEngines() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// Engine returns the description of engine id, or ErrUnknownEngine.
func (t *Timeline) Engine(id EngineID) (Engine, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkEngineLocked(id); err != nil {
		return Engine{}, err
	}
	return t.engines[id], nil
}

// EngineByName returns the ID of the engine called name, and whether there
// is one.
func (t *Timeline) EngineByName(name string) (EngineID, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.names[name]
	return id, ok
}

// Submit records one op on engine e that starts only after every op in
// waits has completed (and, as on every engine, after the previous op of e
// has completed), and returns the event of its completion. Each wait must
// name an op already submitted (any engine, including e itself); otherwise
// Submit fails with ErrUnknownEvent (and ErrUnknownEngine if the wait's
// engine does not exist). An unknown e fails with ErrUnknownEngine.
//
// The new op's clock is the join of the previous op's clock on e, the
// clocks of the waited events, and every HostSync so far. Cost:
// O(MaxEngines·(1+len(waits))), whatever the history length.
func (t *Timeline) Submit(e EngineID, waits ...Event) (Event, error) {
	t.mu.Lock()
	ev, _, err := t.submitLocked(e, waits)
	if invariants.Enabled {
		defer t.mu.Unlock()
		t.verifyLocked()
		return ev, err
	}
	t.mu.Unlock()
	return ev, err
}

// submitClock is Submit that also returns a copy of the new op's clock.
func (t *Timeline) submitClock(e EngineID, waits []Event) (Event, Clock, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if invariants.Enabled {
		defer t.verifyLocked()
	}
	ev, c, err := t.submitLocked(e, waits)
	if err != nil {
		return ev, Clock{}, err
	}
	return ev, *c, nil
}

// submitLocked implements Submit and also returns the new op's clock,
// which stays valid until the next submission to e. t.mu must be held for
// writing.
func (t *Timeline) submitLocked(e EngineID, waits []Event) (Event, *Clock, error) {
	if err := t.checkEngineLocked(e); err != nil {
		return Event{}, nil, fmt.Errorf("submit: %w", err)
	}
	for i := range waits {
		if err := t.checkEventLocked(waits[i]); err != nil {
			return Event{}, nil, fmt.Errorf("submit to engine %q: wait %d: %w", t.engines[e].Name, i, err)
		}
	}
	// The new op's clock is built in its history slot: a copy of the
	// previous op's, joined with the host clock and the waits.
	h := &t.hist[e]
	c := h.pushLast(&t.spare, t.n)
	c.joinFirst(&t.host, t.n)
	for i := range waits {
		t.joinEventLocked(c, waits[i])
	}
	c[e] = h.n
	t.submitted[e].Store(uint64(h.n))
	return Event{Engine: e, Seq: h.n}, c, nil
}

// Submitted returns the seq of the last op submitted to e: 0 if none, or if
// e is unknown.
func (t *Timeline) Submitted(e EngineID) Seq {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(e) >= t.n {
		return 0
	}
	return t.hist[e].n
}

// Point returns where the next op on e will start: see Point. It fails with
// ErrUnknownEngine for an unknown e.
func (t *Timeline) Point(e EngineID) (p Point, err error) {
	t.mu.Lock()
	if err := t.checkEngineLocked(e); err != nil {
		t.mu.Unlock()
		return Point{}, fmt.Errorf("point: %w", err)
	}
	// Built in the result itself: a Point is 136 bytes, not copied again.
	p.Engine, p.Clock = e, t.host
	if last := t.hist[e].last(); last != nil {
		p.Clock.joinFirst(last, t.n)
	}
	t.mu.Unlock()
	return p, nil
}

// HostSync records that the host observed ev complete before going on:
// every op submitted afterwards, on any engine, happens-after ev (and so
// after everything that happens-before ev). It orders only; it does not
// mark ev completed — call Complete for that (Executor.Wait does both).
// It fails with ErrUnknownEvent if ev has not been submitted.
func (t *Timeline) HostSync(ev Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if invariants.Enabled {
		defer t.verifyLocked()
	}
	if err := t.checkEventLocked(ev); err != nil {
		return fmt.Errorf("host sync: %w", err)
	}
	t.joinEventLocked(&t.host, ev)
	return nil
}

// HostClock returns what every op submitted from now on will happen-after
// because of HostSync: the join of the clocks of all synced events.
func (t *Timeline) HostClock() Clock {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.host
}

// Complete records that ev has completed. Engines are FIFO, so this also
// completes every earlier op of ev's engine, and every op that
// happens-before ev. Completing an op that is already completed (twice, or
// after a later op of its engine, or after an op it happens-before) fails
// with ErrAlreadyCompleted; an op not yet submitted fails with
// ErrUnknownEvent.
//
// After a successful Complete, every subscriber is called with the new
// completed clock; see Subscribe. Cost: O(MaxEngines) plus the
// subscribers.
func (t *Timeline) Complete(ev Event) error {
	t.mu.Lock()
	if err := t.checkEventLocked(ev); err != nil {
		t.mu.Unlock()
		return fmt.Errorf("complete: %w", err)
	}
	if t.completed[ev.Engine] >= ev.Seq {
		done := t.completed[ev.Engine]
		t.mu.Unlock()
		return fmt.Errorf("complete %v: engine %d has completed through seq %d: %w", ev, ev.Engine, done, ErrAlreadyCompleted)
	}
	// completed ⊔= ev's clock, publishing each component that grows;
	// only an engine whose completed seq grew may have a chunk to forget.
	evc := t.hist[ev.Engine].at(ev.Seq)
	var grew uint32
	for e, s := range evc[:t.n] {
		if s > t.completed[e] {
			t.completed[e] = s
			t.completedSeq[e].Store(uint64(s))
			grew |= 1 << e
		}
	}
	if t.retain > 0 {
		for ; grew != 0; grew &= grew - 1 {
			t.retireEngineLocked(bits.TrailingZeros32(grew))
		}
	}
	completed := t.completed
	if invariants.Enabled {
		t.verifyLocked()
	}
	t.mu.Unlock()

	if subs := t.subs.Load(); subs != nil {
		for _, s := range *subs {
			s.fn(completed)
		}
	}
	t.mu.Lock()
	t.delivered.joinFirst(&completed, t.n)
	if invariants.Enabled {
		t.verifyLocked()
	}
	// A waiter counts itself under mu before it looks at delivered: one
	// that has not yet will see what was just joined.
	waiting := t.awaiting > 0
	t.mu.Unlock()
	if waiting {
		t.delivery.Broadcast()
	}
	return nil
}

// Completed reports whether ev has completed. A zero Event reads as
// completed; an event never submitted reads as not completed.
func (t *Timeline) Completed(ev Event) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.completed.Covers(ev)
}

// Status reports whether ev has completed, after checking that ev names a
// submitted op: it fails with ErrUnknownEvent (and ErrUnknownEngine) as
// EventClock does, but never with ErrForgotten. No lock and no clock
// copied for an event that names a submitted op: the check an allocator
// makes of every use.
func (t *Timeline) Status(ev Event) (completed bool, err error) {
	// The submitted seq is read before the completed one: both only grow,
	// so ev was submitted when the completed seq is read, the moment the
	// answer is for.
	// An engine not added has submitted nothing: its seq reads 0.
	if int(ev.Engine) < MaxEngines && ev.Seq != 0 && uint64(ev.Seq) <= t.submitted[ev.Engine].Load() {
		return uint64(ev.Seq) <= t.completedSeq[ev.Engine].Load(), nil
	}
	t.mu.Lock()
	if err := t.checkEventLocked(ev); err != nil {
		t.mu.Unlock()
		return false, fmt.Errorf("status: %w", err)
	}
	completed = t.completed.Covers(ev)
	t.mu.Unlock()
	return completed, nil
}

// Delivered reports whether ev has completed and every subscriber has
// been called with a completed clock that covers it (see Subscribe), so
// that what a subscriber keeps, such as an Allocator's free space, already
// reflects ev. Completed turns true first: Complete records ev, then calls
// the subscribers. A zero Event reads as delivered.
func (t *Timeline) Delivered(ev Event) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delivered.Covers(ev)
}

// DeliveredClock returns the clock of delivered completions: c[e] is the
// last seq of engine e that every subscriber has been told of. It only
// grows, and never passes CompletedClock.
func (t *Timeline) DeliveredClock() Clock {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delivered
}

// awaitDelivered blocks until Delivered(ev). ev must have completed: the
// Complete that recorded it is then calling the subscribers, and marks ev
// delivered when they return.
func (t *Timeline) awaitDelivered(ev Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.delivery.L == nil {
		t.delivery.L = &t.mu
	}
	t.awaiting++
	for !t.delivered.Covers(ev) {
		t.delivery.Wait()
	}
	t.awaiting--
}

// CompletedClock returns the clock of completed ops: c[e] is the last
// completed seq of engine e.
func (t *Timeline) CompletedClock() Clock {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.completed
}

// EventClock returns everything that happens-before ev, including ev
// itself. It fails with ErrUnknownEvent if ev has not been submitted and
// ErrForgotten if Forget has dropped it.
func (t *Timeline) EventClock(ev Event) (Clock, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, err := t.rememberedLocked(ev)
	if err != nil {
		return Clock{}, fmt.Errorf("event clock: %w", err)
	}
	return *c, nil
}

// HappensBefore reports whether a happens-before b: a precedes b on one
// engine, or b waits for a, or a was host-synced before b was submitted, or
// a chain of these links them; a link to an op Forget dropped stands for
// every op completed when the link was made (see Forget). It is a strict order: an event does not
// happen-before itself. It fails with ErrUnknownEvent if either has not
// been submitted, and ErrForgotten if b has been forgotten (see Forget for
// what forgetting does to the answer). Cost: O(1).
func (t *Timeline) HappensBefore(a, b Event) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkEventLocked(a); err != nil {
		return false, fmt.Errorf("happens-before: first: %w", err)
	}
	bc, err := t.rememberedLocked(b)
	if err != nil {
		return false, fmt.Errorf("happens-before: second: %w", err)
	}
	return a != b && bc.Covers(a), nil
}

// HappensBeforePoint reports whether ev happens-before point p, that is
// p.Clock.Covers(ev). A zero Event happens-before every point.
func (t *Timeline) HappensBeforePoint(ev Event, p Point) bool {
	return p.Clock.Covers(ev)
}

// SafeFor reports whether bytes fenced by fence may be handed to a writer
// at point p: for every engine e, fence[e] <= max(p.Clock[e], completed[e]),
// so every op the fence covers has completed or happens-before p. A nil
// fence covers nothing and is safe everywhere.
func (t *Timeline) SafeFor(fence *Clock, p Point) bool {
	if fence == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return fence.SafeUnder(&p.Clock, &t.completed)
}

// OrderedAfter reports whether the op ev may use bytes fenced by fence:
// every op the fence covers happens-before ev (fence <= ev's clock), so ev
// cannot start before they complete. That a fence has completed by the
// time of asking is not enough: ev may have been submitted, and started,
// before it did. Ordering through an op that Forget dropped is kept (see
// Forget). A forgotten ev is answered from its clock while its chunk of
// history is kept (Forget and Retain drop whole chunks only). It fails with
// ErrUnknownEvent if ev has not been submitted and with ErrForgotten once
// ev's chunk was dropped.
func (t *Timeline) OrderedAfter(fence *Clock, ev Event) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkEventLocked(ev); err != nil {
		return false, fmt.Errorf("ordered after: %w", err)
	}
	c := t.hist[ev.Engine].stored(ev.Seq)
	if c == nil {
		return false, fmt.Errorf("ordered after: %w", t.forgottenErrLocked(ev))
	}
	return fence.LessEq(c), nil
}

// CheckPoint reports whether p is a point this Timeline could have
// produced: its engine exists and everything its clock covers
// happens-before the next op of that engine (p.Clock <= Point(p.Engine)
// now). A point taken earlier on the same engine passes, since it claims
// less than is true now; a forged point (a clock covering ops never
// submitted, or ops the engine does not wait for) or one from another
// Timeline fails with ErrInvalidPoint.
func (t *Timeline) CheckPoint(p Point) error {
	t.mu.Lock()
	if err := t.checkEngineLocked(p.Engine); err != nil {
		t.mu.Unlock()
		return fmt.Errorf("point: %w", err)
	}
	if !p.Clock.lessEqJoinFirst(&t.host, t.hist[p.Engine].last(), t.n) {
		now := t.host
		if last := t.hist[p.Engine].last(); last != nil {
			now.joinFirst(last, t.n)
		}
		name := t.engines[p.Engine].Name
		t.mu.Unlock()
		return fmt.Errorf("%w: clock %v on engine %q is not covered by its next op's %v", ErrInvalidPoint, p.Clock, name, now)
	}
	t.mu.Unlock()
	return nil
}

// AllCompleted reports whether every op fence covers has completed:
// fence <= CompletedClock(). Bytes so fenced are clean, safe for any point.
func (t *Timeline) AllCompleted(fence *Clock) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fence.LessEq(&t.completed)
}

// Subscribe registers fn to be called after every successful Complete with
// the completed clock as it was right after that Complete. fn runs on the
// completing goroutine, after the Timeline's lock is released, so it may
// call back into the Timeline. Completions may come from several goroutines
// at once, so fn may be called concurrently with itself and the clocks it
// sees may arrive out of order (each is monotone in what it covers, but a
// later call can carry an older clock); fn must be safe for that, for
// example by joining what it receives. fn must not block for long: it
// delays the completing goroutine, and Executor.Wait, which returns only
// once every subscriber has seen the event (see Delivered); so fn must not
// call Executor.Wait either.
//
// unsubscribe removes fn; it may be called more than once. A Complete that
// began before unsubscribe returned may still call fn once more. A nil fn
// registers nothing.
func (t *Timeline) Subscribe(fn func(completed Clock)) (unsubscribe func()) {
	if fn == nil {
		return func() {}
	}
	t.subMu.Lock()
	t.nextSub++
	id := t.nextSub
	var next []subscriber
	if cur := t.subs.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, subscriber{id: id, fn: fn})
	t.subs.Store(&next)
	t.subMu.Unlock()

	return func() {
		t.subMu.Lock()
		defer t.subMu.Unlock()
		cur := t.subs.Load()
		if cur == nil {
			return
		}
		next := make([]subscriber, 0, len(*cur))
		for _, s := range *cur {
			if s.id != id {
				next = append(next, s)
			}
		}
		if len(next) == len(*cur) {
			return
		}
		t.subs.Store(&next)
	}
}

// checkEvent returns a wrapped ErrUnknownEvent unless ev names a
// submitted op.
func (t *Timeline) checkEvent(ev Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checkEventLocked(ev)
}

// rememberedLocked returns the stored clock of ev, or a wrapped
// ErrUnknownEvent or ErrForgotten. t.mu must be held.
func (t *Timeline) rememberedLocked(ev Event) (*Clock, error) {
	if err := t.checkEventLocked(ev); err != nil {
		return nil, err
	}
	c := t.hist[ev.Engine].remembered(ev.Seq)
	if c == nil {
		return nil, t.forgottenErrLocked(ev)
	}
	return c, nil
}

// forgottenErrLocked is the ErrForgotten error for ev. t.mu must be held.
func (t *Timeline) forgottenErrLocked(ev Event) error {
	return fmt.Errorf("%w %v: engine %q forgot seqs up to %d", ErrForgotten, ev, t.engines[ev.Engine].Name, t.hist[ev.Engine].floor)
}

// joinEventLocked joins ev's clock into c, or, if ev is forgotten, the
// completed clock, which covers ev and its whole forgotten ancestry: ev has
// completed, so everything before it has too, and every op completed now
// completed before the op or point c describes can start. The clock that
// results is never smaller than the one a remembered ev would give. ev
// must have been checked. t.mu must be held.
func (t *Timeline) joinEventLocked(c *Clock, ev Event) {
	if ec := t.hist[ev.Engine].remembered(ev.Seq); ec != nil {
		c.joinFirst(ec, t.n)
		return
	}
	c.joinFirst(&t.completed, t.n)
	c.Observe(ev)
}

// checkEngineLocked returns a wrapped ErrUnknownEngine unless e exists.
// t.mu must be held.
func (t *Timeline) checkEngineLocked(e EngineID) error {
	if int(e) >= t.n {
		return t.unknownEngineLocked(e)
	}
	return nil
}

// unknownEngineLocked is checkEngineLocked's error, apart so that the
// check inlines. t.mu must be held.
func (t *Timeline) unknownEngineLocked(e EngineID) error {
	return fmt.Errorf("engine %d (have %d): %w", e, t.n, ErrUnknownEngine)
}

// checkEventLocked returns a wrapped ErrUnknownEvent unless ev names a
// submitted op. t.mu must be held.
func (t *Timeline) checkEventLocked(ev Event) error {
	if int(ev.Engine) >= t.n || ev.Seq == 0 || ev.Seq > t.hist[ev.Engine].n {
		return t.unknownEventLocked(ev)
	}
	return nil
}

// unknownEventLocked is checkEventLocked's error for an ev that names no
// submitted op, apart so that the check stays small enough to inline.
// t.mu must be held.
func (t *Timeline) unknownEventLocked(ev Event) error {
	if int(ev.Engine) >= t.n {
		return fmt.Errorf("%w %v: engine %d (have %d): %w", ErrUnknownEvent, ev, ev.Engine, t.n, ErrUnknownEngine)
	}
	if ev.Seq == 0 {
		return fmt.Errorf("%w %v: seq 0 names no op", ErrUnknownEvent, ev)
	}
	return fmt.Errorf("%w %v: engine %q has submitted %d ops", ErrUnknownEvent, ev, t.engines[ev.Engine].Name, t.hist[ev.Engine].n)
}
