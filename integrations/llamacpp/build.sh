#!/usr/bin/env bash
# build.sh OUTDIR: builds OUTDIR/libsubarena-ggml.so (LD_PRELOAD it into a
# llama.cpp program) and the tests' drivers (OUTDIR/llama-drive,
# OUTDIR/gallocr-check, OUTDIR/kernel-check, OUTDIR/local-host) against the
# pinned llama.cpp release: node-llama-cpp 3.21.1's prebuilt Linux x86-64
# libraries (llama.cpp v0.4.0, ggml 0.23.0) and the matching sources.
#
# The release is integrations/ggml's (../ggml/release.sh fetches it with
# `npm pack` when missing, checks its SHA-1 sums and unpacks it into
# integrations/ggml/.release). OUTDIR/release.env names the libraries and
# vocabularies used, for the tests and llamazoo.
# Needs go, gcc, git, npm (only to fetch), sha1sum, tar.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
ggml_version=0.23.0
# The release: integrations/ggml links and compiles against it too.
bash "$here/../ggml/release.sh"
rel=$(cd "$here/../ggml/.release" && pwd)
bins=$rel/bins
src=$rel/llama.cpp

# The interposer: Go c-shared with shim.c, ggml's symbols resolved in the
# host process at run time.
(
  cd "$here/preload"
  CGO_ENABLED=1 go build -buildmode=c-shared -tags subarena_extggml -trimpath \
    -ldflags "-X main.ggmlVersion=$ggml_version" -o "$out/libsubarena-ggml.so" .
  rm -f "$out/libsubarena-ggml.h"
)

# Every ggml symbol the library leaves undefined must be one the release's
# libggml-base.so defines.
missing=$(comm -23 \
  <(nm -D --undefined-only "$out/libsubarena-ggml.so" | awk '{print $2}' | grep -E '^(ggml|gguf)_' | sort -u) \
  <(nm -D --defined-only "$bins/libggml-base.so" | awk '{print $3}' | sort -u))
if [ -n "$missing" ]; then
  echo "build.sh: libsubarena-ggml.so needs symbols libggml-base.so lacks: $missing" >&2
  exit 1
fi

gcc -O2 -Wall -o "$out/llama-drive" "$here/driver/llama-drive.c" \
  -I"$src/include" -I"$src/ggml/include" -L"$bins" -lllama -lggml -lggml-base -Wl,-rpath,"$bins"

gcc -O2 -Wall -o "$out/gallocr-check" "$here/driver/gallocr-check.c" \
  -Wno-unused-function -I"$src/ggml/include" -I"$src/ggml/src" -L"$bins" -lggml -lggml-base -lm -ldl -Wl,-rpath,"$bins"

gcc -O2 -Wall -o "$out/kernel-check" "$here/driver/kernel-check.c" \
  -Wno-unused-function -I"$src/ggml/include" -I"$src/ggml/src" -L"$bins" -lggml -lggml-base -lm -ldl -Wl,-rpath,"$bins"

gcc -O2 -Wall -o "$out/local-host" "$here/driver/local-host.c" -ldl

cat >"$out/release.env" <<ENV
SUBARENA_LLAMACPP_BINS=$bins
SUBARENA_LLAMACPP_MODELS=$src/models
SUBARENA_LLAMACPP_GGML=$ggml_version
ENV
echo "build.sh: wrote $out/libsubarena-ggml.so, llama-drive, gallocr-check, kernel-check and local-host" >&2
