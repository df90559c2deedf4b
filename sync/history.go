package sync

// history holds the clock of every remembered op of one engine, indexed by
// seq, in fixed-size chunks.
//
//	seq:     1 ........ base | base+1 ...... floor | floor+1 ........ n
//	         dropped chunks  | stored, forgotten   | stored, remembered
//
// Chunk i holds the clocks of seqs [base+i·chunkLen+1, base+(i+1)·chunkLen+1).
// Looking a seq up is a subtraction, a shift and a mask: O(1) whatever the
// history length. Growing never copies old clocks (only the very first
// chunk starts small and doubles up to chunkLen, so that an engine that
// runs three ops does not pay 64 KiB), so a growth step never stalls a
// submit; each later chunk is one allocation per chunkLen submissions,
// which amortizes to 0 allocs/op.
//
// Ops with seq <= floor are forgotten (Timeline.Forget): their clocks are no
// longer consulted, and whole chunks of them are dropped (base advances)
// and kept on the Timeline's spare list for reuse, so a Timeline that
// forgets regularly reaches a steady state with no allocation and no fresh
// memory at all.
//
// Cost: one Clock (MaxEngines·8 = 128 bytes) per remembered op.
type history struct {
	// chunks[i] has length chunkLen for every i < len(chunks)-1; the last
	// chunk holds the remainder, so the total length is n-base.
	chunks [][]Clock
	// n is the engine's last submitted seq.
	n Seq
	// base is the number of leading seqs whose chunks were dropped; a
	// multiple of chunkLen, base <= floor.
	base Seq
	// floor is the last forgotten seq: floor <= completed[e], and
	// floor < n whenever n > 0, so the last op's clock is always kept.
	floor Seq
}

const (
	chunkShift = 9
	// chunkLen clocks per chunk: 512 · 128 B = 64 KiB, large enough that
	// chunk allocations are rare, small enough not to stall a submit.
	chunkLen      = 1 << chunkShift
	chunkMask     = chunkLen - 1
	firstChunkCap = 4
	// maxSpare bounds the spare chunks a Timeline keeps for reuse:
	// 64 · 64 KiB = 4 MiB.
	maxSpare = 64
)

// at returns the stored clock of seq s. It requires base < s <= n.
func (h *history) at(s Seq) *Clock {
	i := s - 1 - h.base
	return &h.chunks[i>>chunkShift][i&chunkMask]
}

// remembered returns the clock of seq s, or nil if s is forgotten. It
// requires 1 <= s <= n.
func (h *history) remembered(s Seq) *Clock {
	if s <= h.floor {
		return nil
	}
	return h.at(s)
}

// stored returns the clock of seq s while its chunk is kept, forgotten or
// not, or nil once the chunk has been dropped. It requires 1 <= s <= n.
func (h *history) stored(s Seq) *Clock {
	if s <= h.base {
		return nil
	}
	return h.at(s)
}

// last returns the clock of the last submitted op, or nil if none.
func (h *history) last() *Clock {
	if h.n == 0 {
		return nil
	}
	return h.at(h.n)
}

// pushLast stores a copy of the last clock (the zero Clock when nothing
// was submitted) as the clock of op n+1 and returns it, for the caller to
// complete in place. A new chunk comes from spare when there is one; the
// first chunk starts small and doubles up to chunkLen.
//
// engines is the Timeline's engine count: components from it on are zero
// in every clock the Timeline stores, now and before (an engine added
// later has no op in an older clock), so in a slot already used, when the
// last clock is beside it, only the first engines components are copied.
func (h *history) pushLast(spare *[][]Clock, engines int) *Clock {
	ci := int((h.n - h.base) >> chunkShift)
	if ci < len(h.chunks) {
		// The usual case: the last chunk has room, and the last clock is
		// in it.
		if ch := h.chunks[ci]; len(ch) > 0 && len(ch) < cap(ch) {
			n := len(ch)
			h.chunks[ci] = h.chunks[ci][:n+1]
			ch = ch[:n+1]
			dst, src := ch[n][:engines], ch[n-1][:engines]
			for i, s := range src { // a few words: no call to memmove
				dst[i] = s
			}
			h.n++
			return &ch[n]
		}
	}
	// The last op's clock is never dropped (forget keeps floor < n, and
	// base <= floor): with n > 0 it is stored, here or in the chunk before.
	var last Clock
	if h.n > 0 {
		last = *h.at(h.n)
	}
	if ci == len(h.chunks) {
		var ch []Clock
		switch {
		case h.n == 0:
			ch = make([]Clock, 0, firstChunkCap)
		case len(*spare) > 0:
			last := len(*spare) - 1
			ch = (*spare)[last]
			(*spare)[last] = nil
			*spare = (*spare)[:last]
		default:
			ch = make([]Clock, 0, chunkLen)
		}
		h.chunks = append(h.chunks, ch)
	}
	ch := h.chunks[ci]
	if len(ch) == cap(ch) {
		grown := make([]Clock, len(ch), min(2*cap(ch), chunkLen))
		copy(grown, ch)
		ch = grown
	}
	ch = append(ch, last)
	h.chunks[ci] = ch
	h.n++
	return &ch[len(ch)-1]
}

// forget raises floor to upTo (which must be < n and <= the engine's
// completed seq), drops every chunk that now holds only forgotten seqs
// onto spare (up to maxSpare), and returns how many clocks it dropped.
func (h *history) forget(upTo Seq, spare *[][]Clock) int {
	if upTo <= h.floor {
		return 0
	}
	h.floor = upTo
	k := int((h.floor - h.base) >> chunkShift)
	if k == 0 {
		return 0
	}
	for _, ch := range h.chunks[:k] {
		if len(*spare) < maxSpare && cap(ch) == chunkLen {
			*spare = append(*spare, ch[:0])
		}
	}
	n := copy(h.chunks, h.chunks[k:])
	clear(h.chunks[n:])
	h.chunks = h.chunks[:n]
	h.base += Seq(k) * chunkLen
	return k * chunkLen
}

// clone returns a deep copy of h.
func (h *history) clone() history {
	out := *h
	out.chunks = make([][]Clock, len(h.chunks))
	for i, ch := range h.chunks {
		out.chunks[i] = append(make([]Clock, 0, cap(ch)), ch...)
	}
	return out
}
