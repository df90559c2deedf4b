// Package arena manages the clean free space of one memory region: which
// granule-aligned byte ranges of [0, Capacity) are free to hand out. It knows
// nothing of views, engines or fences; the layers above decide when bytes are
// safe to reuse and give them back here.
//
// Every range in this package is half-open: [lo, hi) holds lo and not hi.
//
// # What it does
//
// An Arena hands out blocks (Alloc) and takes back ranges (Free), in units of
// a granule, a power of two (256 B by default). Two things set it apart from
// a textbook allocator.
//
// Free takes any granule-aligned subrange of allocated space, not a handle:
// a whole block, a piece of one, or a span across adjacent blocks. A tensor
// buffer whose parts die at different times comes back in pieces, each the
// moment it is released, and each piece coalesces at once with the free
// space around it. Freeing a byte that is already free is an error, so the
// arena can tell a double release from a legitimate piece.
//
// AllocAt is the inverse of Free: it takes exactly a given free range, any
// granule-aligned part of one free region.
//
// In planning mode (Config.Unbounded) an allocation that fits nowhere
// grows the arena at the top instead of failing, and Stats().HighWater is
// the answer: the arena size a replayed graph needs.
//
// # Structure
//
// Only free space is represented. Each maximal free region [lo, hi), in
// granules, is a node in a slice addressed by uint32 handles; retired slots
// are reused, so the slice stops growing once the number of free regions
// stops growing, and Alloc and Free allocate nothing in steady state. A
// handle is its slot's offset in the slice in units of 8 bytes (a node is
// 32), so that Alloc and Free reach a node with one scaled-index address
// and no bounds check (see Costs).
//
// Size index. Regions are binned by size in a two-level segregated-fit
// index (the TLSF scheme): sizes below 32 granules get one class each, and
// each octave above is cut into 32 classes, so a class spans at most 1/32 of
// its lower bound. Each class is a circular doubly linked list through a
// head node of its own, so linking and unlinking take no branch on an empty
// neighbour. The heads are the first slots of the node slice, one per class
// up to the arena's size (577, 18 KiB, for 1 GiB in 256-byte granules; all
// 928 when unbounded). A two-level bitmap of non-empty classes finds the
// first non-empty class at or above any class with two TrailingZeros64. A
// region changes class only when its size does.
//
// Address index. Free must find, from an offset alone, the free regions
// around the range and prove that none meets it. The granules are cut into
// buckets of 64, and every region is chained under the bucket of its last
// granule, the chain ordered by end; a hierarchical bitmap marks the
// non-empty buckets. A chain holds at most 64 regions and almost always none
// or one. Free walks the chain of its first granule's bucket up to the first
// region ending after lo, which yields the left neighbour (the region ending
// at lo) on the way; if that bucket has none, one successor search of the
// bitmap (at most two words per level, five levels at the 2^32-granule
// limit; the two level-0 words after the bucket are read inline, since
// free regions are seldom farther apart) finds the next non-empty bucket,
// whose chain starts with the region wanted. The first region ending after
// lo either meets [lo, hi), and the free is refused, or starts at hi and is
// the right neighbour, or lies beyond.
//
// Why not boundary tags, the classic answer? Tags per granule (the region
// owning each boundary) make the neighbour lookup a single load, but they
// cost 4 to 8 bytes per granule, 1.6 to 3% of the arena in host memory at
// 256-byte granules (1.3 to 2.5 GB for an 80 GB device), and they still
// cannot tell a double free of a granule inside a free region without a
// search. A balanced tree of regions keyed by address costs O(log n) pointer
// chasing on every Free. The bucket chains cost 4 bytes plus one bit per 64
// granules (0.025% of the arena) and 32 bytes per free region, and answer
// every query in O(1) bucket work plus an O(depth) bitmap search.
//
// # Placement
//
// Alloc rounds the request up to whole granules and carves it from the low
// end of the region it picks; what remains keeps its tail, so only its class
// may change. Two strategies (Config.Fit):
//
//   - FitFast rounds the request up to the first class whose every region
//     fits and takes the first region of the first non-empty class from
//     there: one bitmap search. Lists are LIFO.
//   - FitLean (the default) first walks up to 8 regions of the request's
//     own class when the request does not start that class (the class then
//     holds regions both smaller and larger) and takes the first that
//     fits. Failing that, it takes the lower-addressed of the first regions
//     of the two smallest non-empty classes that all fit, the second looked
//     for only in the same word of the class bitmap (64 classes, two
//     octaves), where the first search left it. Lists put a region second
//     when the first lies lower, so a list's first region tends to be its
//     lowest. Reusing low addresses first keeps live blocks packed and the
//     space above them in one piece. Whether the request starts its class
//     is one test on the same float64 bits the class comes from, so the
//     walk costs nothing when the class is passed by.
//
// When neither finds a region, the request's own class, which holds
// regions both smaller and larger, is walked in full, so a bounded arena
// fails with ErrNoSpace only when no free region is large enough; the
// NoSpaceError carries the request, the total free and the largest free
// region.
//
// Chosen by measurement on the W1 churn workload (2^30 B, sizes log-uniform
// from 256 B to 1 MiB, bench package) and the W2 inference-LIFO workload
// (1M pairs). Fragmentation (1 - largest free / total free) is at the end
// of the run, after 10M free+alloc pairs and, in brackets, after 1M;
// churn-10k runs 10M pairs. Each row is the output of
// `go run ./bench/cmd/churn -workload W -pairs N -fit F -json`
// (TestChurnFiguresInArenaDoc runs them and compares). Instructions are the
// arena's own per free+alloc pair at 1M pairs (callgrind, harness
// subtracted as bench/cmd/churn describes; Go 1.26, GOAMD64=v1):
//
//	                    churn-6k frag     churn-10k   W2 high-water   instr/pair (1M pairs)
//	strategy            10M (1M) pairs    live end    (B)             churn-6k  W2
//	FitLean (default)   0.220 (0.328)     7,223       151,662,592     299       319
//	FitFast             0.485 (0.425)     6,982       151,662,592     283       -
//
// Peers, quoted and not reproduced (no peer code is vendored here): measured
// outside this repository with their own code (C++, g++ -O2, Linux x86-64,
// 2 cores) on the same W1 and W2 sequences, which the bench package's
// generator reproduces (TestChurn6kTraceHashes). sebbbi's OffsetAllocator
// ends churn-6k at 0.550, churn-10k with 6,672 live, at 298 instructions per
// pair on churn-6k; VMA's TLSF with its min-memory strategy at 0.381, 7,067
// and 520. Both pack W2 to the same 151,662,592 B at 350-412 instructions
// per pair.
//
// The decisions behind FitLean, each with the figure that made it. The end
// value of churn-6k's fragmentation swings by ±0.05 with tiny policy
// changes, so the mean of samples every 500k pairs decided: 0.290 for
// FitLean, 0.417 for FitFast.
//
//   - Address-ordered class lists: without them FitLean's mean is 0.417.
//   - One comparison on insertion, not fully sorted lists: sorting bought
//     little (a mean of 0.277 with two steps, 0.270 with eight) for a list
//     walk per insertion.
//   - 32 classes per octave: sixteen give a mean of 0.302 and 7,182 live
//     blocks, sixty-four 0.286 and 7,203, no gain worth a larger bitmap.
//   - The second class: without it churn-6k ends at 0.413 (mean 0.359).
//   - The walk of the request's own class: without it churn-6k ends at
//     0.253 for 12 fewer instructions per pair, but the bench package's
//     replayed workloads need up to 22% more memory (cnn-concat under
//     subrange-fenced 2.45 MB instead of 2.01 MB, batching under
//     whole-fenced 43.1 MB instead of 39.2 MB).
//
// # Costs
//
// Alloc: a class computation, one class-bitmap search (and a look at the
// rest of the same word), then either a class change of the remainder
// (unlink and link) or the removal of an exactly fitting region. Free: one
// bucket chain walk, at most one bitmap successor search, and one of four
// merges (new region, extend left, extend right, join both), each a
// constant amount of list and chain work. Neither allocates once the node
// slice has reached the peak number of free regions; Free grows it, if
// ever, only after its work is done, since a spare retired slot is kept
// for it.
//
// In Go every call clobbers every register, so a value live across a call
// is saved and restored around it, and an inlined call is often cheaper
// than the call instruction alone. Alloc and Free therefore have the list
// and chain surgery written out in their bodies, Free's joins of two
// regions and moves of a tail to another bucket included. Free looks the
// bitmap up first, while little is live across the rare call into its
// deeper levels, and refills the spare slot only when nothing is left to
// do after. Classes come from the bits of float64(n), without the variable
// shift of the integer formula (see classOf), and the class bitmap is
// indexed with masks rather than bounds checks. Alloc and Free are the
// arena's hot paths; Free, written out so, is one long function on purpose
// (cyclomatic complexity 49, the one function of the arena gocyclo lists
// over 40).
//
// A checked slice access to a node costs a sign or zero extension, a
// compare and a branch, a shift by 5 and often a copy of the handle the
// shift destroys: four to five instructions, some 18 times per free+alloc
// pair on churn-6k. Masking the index into a power-of-two slice saved one
// of them. Alloc and Free therefore address nodes without checks, the
// handle scaled by 8 straight into the address (at, in handle.go): 37
// instructions per pair on churn-6k. Handles never come from a caller,
// only from the arena's own slots; CheckInvariants proves every stored
// handle a used slot's, and built with the arenachecked tag the same code
// checks every access, so a handle bug panics instead (the tests and
// fuzzers pass under it). The rarer paths keep checked access. Stats walks
// the largest class; AppendFreeRegions walks the buckets; CheckInvariants
// walks everything.
//
// # Invariants
//
// CheckInvariants verifies all of these; the property and fuzz tests call it
// after every operation.
//
//   - The free regions are non-empty, inside [0, Capacity), disjoint and
//     fully coalesced: no two touch. In-use plus free bytes equal Capacity.
//   - Every free region is in exactly one class list, the list of the class
//     of its size, and chained exactly once, under the bucket of its last
//     granule, the chain in increasing order of end. The class and bucket
//     bitmaps mark exactly the non-empty lists and chains, and every
//     summary bit agrees with the word below it.
//   - Every used node slot is a class head, a live node or a retired one,
//     and at least one is retired. The heads are those of the classes up to
//     that of the capacity (all of them when unbounded), unchanged but for
//     their links. Every stored handle is a used slot's.
//   - 0 <= InUse <= Capacity, PeakInUse >= InUse, HighWater <= Capacity.
//
// A failed call leaves all of this, and every counter, exactly as it was.
//
// An Arena is not safe for concurrent use.
package arena
