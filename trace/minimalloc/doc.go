// Package minimalloc reads and writes the CSV format of MiniMalloc
// (github.com/google/minimalloc), a solver for static memory placement: a header row,
// then one buffer per row with its lifetime [lower, upper), its size and, in a solution,
// its offset. It turns such a problem into a subarena-trace/v1 trace (package trace),
// reads a solution's offsets as a plan, and writes a trace's buffers (and a plan's
// offsets) back as a MiniMalloc CSV, so that the planner and MiniMalloc can be compared
// on the same problems.
//
// # What a problem becomes
//
// Parse reads the CSV as MiniMalloc's reader does (legacy column names, an inclusive end
// column, alignment, gaps and offset understood, other columns ignored, a blank line ends
// the input). CSV.Trace (and Import) makes it one engine (Engine) with one op per distinct
// lower time: a buffer is allocated before the op at its lower time, written by it, read
// by the op at the last lower time below its upper time, and released after that op, so
// two buffers overlap in op time exactly when their half-open lifetimes intersect. Gaps
// are read and ignored, which is conservative; the granule is the largest power of two up
// to trace.DefaultGranule dividing every size, raised to the largest alignment. CSV.Plan
// gives a solution's offsets as a trace.Plan. Write is the way back: buffer lifetimes in
// op submission order, an interval approximation of the happens-before lifetimes package
// trace/check uses.
//
// # Invariants
//
// Errors match package trace's sentinels (trace.ErrSyntax with the line for malformed
// rows, trace.ErrMissingKey, trace.ErrDuplicateName, trace.ErrInvalidSize,
// trace.ErrOverflow); no input panics. A trace CSV.Trace returns is validated and
// normalized as trace.Parse's are; CSV.Program returns its resolved Program at no extra
// cost.
//
// # Use
//
// Package trace/tracefile's Read and Load tell a MiniMalloc CSV by its header row
// (Header) and import it, and its ReadPlan reads a solution as a plan; call this package
// directly to inspect the rows or to export.
package minimalloc
