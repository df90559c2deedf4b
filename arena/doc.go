// Package arena manages the clean free space of one memory region: offsets
// [0, Capacity) in units of a granule.
package arena
