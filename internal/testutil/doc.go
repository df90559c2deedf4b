// Package testutil holds the helpers the module's tests share that need
// nothing from the module's packages, so that any package's own tests can
// import it:
//
//   - Invariants fails a test at once when a structure's CheckInvariants
//     reports a broken invariant;
//   - BitRuns reads a bitmap that models a set of int64 values, the
//     reference the set and layout tests compare against;
//   - EachIndex, LayoutElements, LayoutAddrs and LayoutBytes are the
//     brute-force oracle of strided layouts: they walk a layout (its plain
//     fields: offset, shape, strides and element size) element by element in
//     row-major order and share no code with package strided, whose cover,
//     overlap and relayout arithmetic are checked against this walk. Layouts
//     given to them must be small: they visit every element;
//   - ProcessCPU reads the CPU time the process has used, for benchmarks
//     that report CPU time per op: on a shared machine it is steadier than
//     wall time;
//   - Glob, Read and Text find and read the repository's test data
//     (testdata/README.md), each caller passing the data's directory
//     relative to its own package, and Count sizes a sweep of random inputs
//     for -short and the race detector.
package testutil
