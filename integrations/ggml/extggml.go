//go:build subarena_extggml

package ggml

// Built with the subarena_extggml tag, the package links the ggml a host
// process has loaded instead of compiling ollama's vendored copy: the
// caller passes that ggml's headers (ggml/include, and ggml/src for
// ggml-impl.h) in CGO_CPPFLAGS, as integrations/llamacpp/build.sh does, and
// ggml's symbols are left for the dynamic linker to resolve in the process,
// wherever the host's libggml-base.so lies. The op and type tables are read
// when the first scanner is made, not at init, since the host may load
// ggml after this package is initialised. The CPU backend is the host's to
// load, and Online, which drives it, is left out. The scan reads the
// graph's private leaf list (struct ggml_cgraph), so that every leaf gets
// memory as under gallocr, read or not.

// #cgo CPPFLAGS: -DSA_GGML_GRAPH_LEAFS
// #cgo LDFLAGS: -Wl,--unresolved-symbols=ignore-all
import "C"

// hostGGML reports whether the package links a host's ggml: it does.
const hostGGML = true
