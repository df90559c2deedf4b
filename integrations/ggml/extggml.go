//go:build subarena_extggml

package ggml

// Built with the subarena_extggml tag, the package links no ggml library:
// ggml's symbols are left for the dynamic linker to resolve in the process
// that loads the result, wherever that process's libggml-base.so lies (the
// LD_PRELOAD library of integrations/llamacpp is built so). The headers are
// the same pinned release's either way. The op and type tables are read
// when the first scanner is made, not at init, since the host may load
// ggml after this package is initialised. The CPU backend is the host's to
// load, and Online, which drives it, is left out.

// #cgo LDFLAGS: -Wl,--unresolved-symbols=ignore-all
import "C"

// hostGGML reports whether the package links a host's ggml: it does.
const hostGGML = true
