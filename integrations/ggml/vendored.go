//go:build !subarena_extggml

package ggml

import (
	// ggml itself: compiles ollama's vendored ggml and registers the CPU backend.
	_ "github.com/ollama/ollama/ml/backend/ggml/ggml/src"
)

// hostGGML reports whether the package links a host's ggml (see extggml.go).
const hostGGML = false
