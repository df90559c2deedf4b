// Package cputime reads the CPU time the process has used, for benchmarks
// that report CPU time per op: on a shared machine it is steadier than wall
// time.
package cputime
