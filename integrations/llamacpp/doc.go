// Package llamacpp holds the tests of libsubarena-ggml.so, subarena's
// drop-in for ggml's graph allocator (gallocr) in llama.cpp programs, and
// the helpers they share with cmd/llamazoo. The library itself is the
// preload directory, built by build.sh against the pinned llama.cpp
// release (node-llama-cpp 3.21.1's prebuilt libraries, ggml 0.23.0):
//
//	bash integrations/llamacpp/build.sh OUT
//	LD_PRELOAD=OUT/libsubarena-ggml.so llama-server -m model.gguf
//
// The tests build the model zoo (package gguf: small models of the llama,
// phi3, gpt2 and qwen2 architectures with random weights and the release's
// real tokenizers), run each through llama.cpp's llama_decode with and
// without the library (OUT/llama-drive), and compare every step's logits
// byte for byte, the tokens, and the compute buffer llama.cpp reports
// (no larger than gallocr's, at the planner's proven lower bound). They
// also run OUT/kernel-check for every kernel of integrations/ggml/kernels,
// the table of CPU kernels verified to run in place beyond ggml's list.
// They look for build.sh's output in $SUBARENA_LLAMACPP_OUT, else in
// .cache/out; they skip when it is absent, except under CI=true, where
// they fail.
package llamacpp
