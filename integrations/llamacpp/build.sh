#!/usr/bin/env bash
# build.sh OUTDIR: builds OUTDIR/libsubarena-ggml.so (LD_PRELOAD it into a
# llama.cpp program) and the tests' drivers (OUTDIR/llama-drive,
# OUTDIR/gallocr-check, OUTDIR/kernel-check, OUTDIR/local-host) against the
# pinned llama.cpp release: node-llama-cpp 3.21.1's prebuilt Linux x86-64
# libraries (llama.cpp v0.4.0, ggml 0.23.0) and the matching sources.
#
# The release is fetched with `npm pack` into the cache directory
# ($SUBARENA_LLAMACPP_CACHE, else integrations/llamacpp/.cache) when
# missing, and checked against the SHA-1 sums below. OUTDIR/release.env
# names the libraries and vocabularies used, for the tests and llamazoo.
# Needs go, gcc, git, npm (only to fetch), sha1sum, tar.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
cache=${SUBARENA_LLAMACPP_CACHE:-$here/.cache}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

ggml_version=0.23.0
# npm package, tarball, sha1
pins=(
  "@node-llama-cpp/linux-x64@3.21.1 node-llama-cpp-linux-x64-3.21.1.tgz 5bb457bc7e58828cc26d06eb8f83c42f8cb66932"
  "node-llama-cpp@3.21.1 node-llama-cpp-3.21.1.tgz f7579ace3d45c8e93856cebbd8671fa43c2eef1b"
)

for pin in "${pins[@]}"; do
  read -r pkg file sum <<<"$pin"
  if [ ! -f "$cache/$file" ] || [ "$(sha1sum "$cache/$file" | cut -d' ' -f1)" != "$sum" ]; then
    echo "build.sh: fetching $pkg" >&2
    rm -f "$cache/$file"
    (cd "$cache" && npm pack --silent "$pkg" >/dev/null)
  fi
  got=$(sha1sum "$cache/$file" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    echo "build.sh: $file has sha1 $got, want $sum" >&2
    exit 1
  fi
done

rel=$cache/release-3.21.1
bins=$rel/bins
src=$rel/llama.cpp
if [ ! -f "$rel/.unpacked.v2" ]; then
  rm -rf "$rel"
  mkdir -p "$rel/tmp"
  tar -xzf "$cache/node-llama-cpp-linux-x64-3.21.1.tgz" -C "$rel/tmp" package/bins/linux-x64
  mv "$rel/tmp/package/bins/linux-x64" "$bins"
  tar -xzf "$cache/node-llama-cpp-3.21.1.tgz" -C "$rel/tmp" package/llama/gitRelease.bundle
  git clone -q --no-checkout "$rel/tmp/package/llama/gitRelease.bundle" "$src"
  git -C "$src" -c advice.detachedHead=false checkout -q FETCH_HEAD -- include ggml/include ggml/src/ggml-impl.h ggml/src/ggml-backend-impl.h models 2>/dev/null ||
    git -C "$src" -c advice.detachedHead=false checkout -q HEAD -- include ggml/include ggml/src/ggml-impl.h ggml/src/ggml-backend-impl.h models
  rm -rf "$rel/tmp"
  # The libraries carry versioned SONAMEs; -lllama and -lggml need these.
  ln -sf libllama.v0.4.0.so "$bins/libllama.so"
  ln -sf libggml.v0.4.0.so "$bins/libggml.so"
  touch "$rel/.unpacked.v2"
fi

# The interposer: Go c-shared with shim.c, ggml's symbols resolved in the
# host process at run time.
(
  cd "$here/preload"
  CGO_ENABLED=1 CGO_CPPFLAGS="-I$src/ggml/include -I$src/ggml/src" \
    go build -buildmode=c-shared -tags subarena_extggml -trimpath \
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
