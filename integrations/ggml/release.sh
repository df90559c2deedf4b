#!/usr/bin/env bash
# release.sh: fetches and unpacks the pinned llama.cpp release that this
# module compiles and links against, into integrations/ggml/.release:
#
#   .release/bins       node-llama-cpp 3.21.1's prebuilt Linux x86-64
#                       libraries (libggml-base.so, libggml.so, libllama.so,
#                       and the libggml-cpu-<arch>.so variants that
#                       ggml_backend_load_all_from_path loads)
#   .release/llama.cpp  the matching sources: include/, ggml/include/,
#                       ggml/src/ggml-impl.h and ggml-backend-impl.h, and
#                       models/ (the ggml-vocab-*.gguf tokenizers)
#
# llama.cpp v0.4.0, ggml 0.23.0. The two npm tarballs are fetched with
# `npm pack` into $SUBARENA_LLAMACPP_CACHE (else .release/npm) when missing
# and checked against the SHA-1 sums below. Run it once before building the
# module (go build, go test); it returns at once when the release is there.
# Needs npm (only to fetch), git, sha1sum, tar.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rel=$here/.release
stamp=$rel/.unpacked.3.21.1.v3
if [ -f "$stamp" ]; then
  exit 0
fi
cache=${SUBARENA_LLAMACPP_CACHE:-$rel/npm}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# npm package, tarball, sha1
pins=(
  "@node-llama-cpp/linux-x64@3.21.1 node-llama-cpp-linux-x64-3.21.1.tgz 5bb457bc7e58828cc26d06eb8f83c42f8cb66932"
  "node-llama-cpp@3.21.1 node-llama-cpp-3.21.1.tgz f7579ace3d45c8e93856cebbd8671fa43c2eef1b"
)
for pin in "${pins[@]}"; do
  read -r pkg file sum <<<"$pin"
  if [ ! -f "$cache/$file" ] || [ "$(sha1sum "$cache/$file" | cut -d' ' -f1)" != "$sum" ]; then
    echo "release.sh: fetching $pkg" >&2
    rm -f "$cache/$file"
    (cd "$cache" && npm pack --silent "$pkg" >/dev/null)
  fi
  got=$(sha1sum "$cache/$file" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    echo "release.sh: $file has sha1 $got, want $sum" >&2
    exit 1
  fi
done

rm -rf "$rel/bins" "$rel/llama.cpp" "$rel/tmp"
mkdir -p "$rel/tmp"
tar -xzf "$cache/node-llama-cpp-linux-x64-3.21.1.tgz" -C "$rel/tmp" package/bins/linux-x64
mv "$rel/tmp/package/bins/linux-x64" "$rel/bins"
tar -xzf "$cache/node-llama-cpp-3.21.1.tgz" -C "$rel/tmp" package/llama/gitRelease.bundle
git clone -q --no-checkout "$rel/tmp/package/llama/gitRelease.bundle" "$rel/llama.cpp"
paths=(include ggml/include ggml/src/ggml-impl.h ggml/src/ggml-backend-impl.h models LICENSE)
git -C "$rel/llama.cpp" -c advice.detachedHead=false checkout -q FETCH_HEAD -- "${paths[@]}" 2>/dev/null ||
  git -C "$rel/llama.cpp" -c advice.detachedHead=false checkout -q HEAD -- "${paths[@]}"
rm -rf "$rel/tmp"
# The libraries carry versioned SONAMEs; -lllama and -lggml need these.
ln -sf libllama.v0.4.0.so "$rel/bins/libllama.so"
ln -sf libggml.v0.4.0.so "$rel/bins/libggml.so"
touch "$stamp"
