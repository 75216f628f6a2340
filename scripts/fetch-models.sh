#!/usr/bin/env bash
# Makes the real test models available: uses ../shared/models when it holds
# them (the project's machines and CI), else downloads the public originals
# into models/ and checks them against pinned SHA-256s. Prints the folder.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared/models"

declare -A sha=(
  [stories260K.bin]=b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696
  [tok512.bin]=037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312
  [tokenizer.bin]=50a52ef822ee9e83de5ce9d0be0a025a773d019437f58b5ff9dcafb063ece361
)
declare -A url=(
  [stories260K.bin]=https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin
  [tok512.bin]=https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/tok512.bin
  [tokenizer.bin]=https://raw.githubusercontent.com/karpathy/llama2.c/master/tokenizer.bin
)

if [ -n "${CURTA_MODELS:-}" ]; then
  echo "$CURTA_MODELS"
  exit 0
fi
if [ -f "$shared/stories260K.bin" ] && [ -f "$shared/tok512.bin" ] && [ -f "$shared/tokenizer.bin" ]; then
  echo "$(cd "$shared" && pwd)"
  exit 0
fi

dest="$root/models"
mkdir -p "$dest"
for name in "${!sha[@]}"; do
  file="$dest/$name"
  if [ ! -f "$file" ] || ! echo "${sha[$name]}  $file" | sha256sum --check --status; then
    echo "fetching $name" >&2
    curl -fsSL --retry 3 -o "$file.part" "${url[$name]}"
    mv "$file.part" "$file"
  fi
  echo "${sha[$name]}  $file" | sha256sum --check --status || {
    echo "error: $name does not match its pinned SHA-256" >&2
    exit 1
  }
done
echo "$dest"
