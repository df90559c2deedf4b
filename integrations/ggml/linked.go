//go:build !subarena_extggml

package ggml

// Built without the subarena_extggml tag, the package links the pinned
// llama.cpp release's libggml-base.so, which release.sh unpacks into
// .release/bins; the binaries it makes find it there (rpath).

// #cgo LDFLAGS: -L${SRCDIR}/.release/bins -lggml-base -Wl,-rpath,${SRCDIR}/.release/bins
import "C"

// hostGGML reports whether the package links a host's ggml (see extggml.go).
const hostGGML = false
