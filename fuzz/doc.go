// Package fuzz holds the native Go fuzz targets that reach across subarena's packages, and
// the interleaving simulator they drive. It has no API of its own: run it with
// `go test -fuzz=<Target> ./fuzz`.
package fuzz
