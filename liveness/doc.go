// Package liveness indexes the pending users of arena bytes and decides, byte
// range by byte range, when released bytes may return to reuse.
//
// # What it tracks
//
// A user is one op that reads or writes a view. It pins exactly the bytes the
// view covers — a set of half-open runs [lo, hi) of arena offsets, computed
// once per view by package strided — until its event completes. A user whose
// event is unknown (a reservation, an unmodelled consumer) pins its bytes
// until it is removed explicitly: it is never assumed finished.
//
// Held bytes are bytes the program has released (a buffer) or discarded (a
// view) that have not yet gone back to the arena. Under the safe modes a held
// byte stays held while a pending user covers it:
//
//	buffer     [=========================================)
//	Q readers  [#############)                                 (done)
//	K readers                [#############)                   (done)
//	V reader                               [#############)     (copy engine, pending)
//	returned   [==========================)                     subrange mode
//	returned   (nothing until V's reader completes)            whole mode
//
// # Structure
//
// Pending users live in an interval tree (keytree.go: a treap ordered by
// start, each node carrying its subtree's largest end), one key per
// distinct covered run [lo, hi); every key carries a group: the users
// covering exactly that run. Users are also kept in one FIFO queue per
// engine, ordered by sequence number, so a completion clock pops exactly
// the users it completes in O(completed users), without scanning the tree.
//
// Queries ("which pending users cover [lo, hi)?", "what is their fence?") are
// tree stabbing queries, O(log n + k) for the k keys they meet. A fence
// question (SafeRuns, TakeRanges' fence, the whole-mode check) reads each
// key's summary — its users' latest seq per engine and its count of
// unknown users — so it costs O(engines) per key however many users the
// key has: a reuse rule is monotone in the seq, so only each engine's
// latest user can refuse. A completion removes the completed
// users' keys and re-examines only the held bytes those users covered.
//
// The arena's unit is the granule: a granule goes back only when every one of
// its bytes is held and no pending user covers any of them (a partly-read
// granule stays pinned). In whole mode, a released buffer is one piece: none
// of it returns until no pending user covers any byte of it. The pieces'
// runs are kept in address order (a treap), so a completion, release or
// take looks only at the pieces over the bytes whose pins changed,
// O(log pieces) each, never at every piece still pinned.
//
// # Fences
//
// The fence of a set of pending users is the join of their events: for each
// engine, the highest sequence number among them. A writer at point P may take
// held bytes before their users complete when the fence is safe for P (every
// user happens-before P or has completed): SafeRuns lists the held runs
// safe for a writer, and the fenced policies take the bytes they choose
// with TakeRanges, which returns their fence. Unknown users have no fence:
// bytes they cover are never taken.
//
// # Costs and allocation
//
// Users, groups, queues and tree nodes are pooled and reuse their storage,
// so a steady stream of Use, Release and Complete does not grow the heap:
// no allocation once the pools have grown. The tree is written here rather
// than taken from github.com/rdleal/intervalst because intervalst allocates
// a node per Insert and a fresh slice per AllIntersections; its tests check
// the tree against intervalst, query by query.
//
// The union of the bytes pending users cover (PendingBytes, overall and per
// engine) is counted as users come and go, in segment trees of run counts
// over the arena's offsets; changes are logged and applied when the figure
// is asked for, so a user that completes before anyone asks costs nothing
// there, and a question costs O(engines) plus O(log arena) per change
// since the last one.
//
// An Index is not safe for concurrent use; the Allocator serializes access.
package liveness
