package sync

// history holds the clock of every op submitted to one engine, indexed by
// seq, in fixed-size chunks.
//
// Chunk i holds the clocks of seqs [i·chunkLen+1, (i+1)·chunkLen+1). Looking
// a seq up is a shift and a mask, O(1) whatever the history length. Growing
// never copies old clocks (only the first chunk starts small and doubles up
// to chunkLen, so that an engine that runs three ops does not pay 64 KiB),
// which keeps the pause of a growth step bounded; each later chunk is one
// allocation per chunkLen submissions, so the amortized cost rounds to 0
// allocs/op.
//
// Cost: one Clock (MaxEngines·8 = 128 bytes) per submitted op, kept for the
// life of the Timeline.
type history struct {
	// chunks[i] has length chunkLen for every i < len(chunks)-1; the last
	// chunk holds the remainder. The total length is n.
	chunks [][]Clock
	// n is the number of clocks stored: the engine's last submitted seq.
	n Seq
}

const (
	chunkShift = 9
	// chunkLen clocks per chunk: 512 · 128 B = 64 KiB, large enough that
	// chunk allocations are rare, small enough not to stall a submit.
	chunkLen      = 1 << chunkShift
	chunkMask     = chunkLen - 1
	firstChunkCap = 4
)

// at returns the stored clock of seq s. It requires 1 <= s <= h.n.
func (h *history) at(s Seq) *Clock {
	i := s - 1
	return &h.chunks[i>>chunkShift][i&chunkMask]
}

// last returns the clock of the last submitted op, or nil if none.
func (h *history) last() *Clock {
	if h.n == 0 {
		return nil
	}
	return h.at(h.n)
}

// push appends c as the clock of seq h.n+1.
func (h *history) push(c *Clock) {
	ci := int(h.n >> chunkShift)
	if ci == len(h.chunks) {
		capacity := chunkLen
		if ci == 0 {
			capacity = firstChunkCap
		}
		h.chunks = append(h.chunks, make([]Clock, 0, capacity))
	}
	ch := h.chunks[ci]
	if len(ch) == cap(ch) {
		grown := make([]Clock, len(ch), min(2*cap(ch), chunkLen))
		copy(grown, ch)
		ch = grown
	}
	h.chunks[ci] = append(ch, *c)
	h.n++
}

// clone returns a deep copy of h.
func (h *history) clone() history {
	out := history{n: h.n, chunks: make([][]Clock, len(h.chunks))}
	for i, ch := range h.chunks {
		out.chunks[i] = append(make([]Clock, 0, cap(ch)), ch...)
	}
	return out
}
