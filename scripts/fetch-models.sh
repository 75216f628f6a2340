#!/usr/bin/env bash
# Makes the real test models available in models/ and prints that folder
# (or $CURTA_MODELS, when set, untouched). Every file is checked against a
# pinned SHA-256 and taken from the first place that has it right:
#   1. models/ itself, from an earlier run;
#   2. a folder of models beside the repository (../shared/models, where
#      this project's machines keep them), linked into models/;
#   3. its public URL.
# stories260K.bin, tok512.bin and tokenizer.bin are needed by every test.
# aidreams260K.bin and tok512-aidreams.bin only by the golden run
# aidreams260k-reference: without them the harness and the SDK tests skip
# that run and say so.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
beside="$root/../shared/models"

# The aidreams260K model and its tokenizer, from the repository that
# published them, at a fixed commit (its data/tok512.bin is this model's own
# tokenizer, not stories260K's).
aidreams=https://raw.githubusercontent.com/mc9625/ai-dreamer-esp32-s3_matrix/a6a5545a42277ebf0eea9584a44a765891f2f492/data

declare -A sha=(
  [stories260K.bin]=b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696
  [tok512.bin]=037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312
  [tokenizer.bin]=50a52ef822ee9e83de5ce9d0be0a025a773d019437f58b5ff9dcafb063ece361
  [aidreams260K.bin]=aa722d252ace805c9ff2264dce993df6843c8cec3d1a930d03e4c487f3db9028
  [tok512-aidreams.bin]=3817c307fffc9637c908ca3430a028db0c46b5700392e0d19b2133d246f54bcb
)
declare -A url=(
  [stories260K.bin]=https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin
  [tok512.bin]=https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/tok512.bin
  [tokenizer.bin]=https://raw.githubusercontent.com/karpathy/llama2.c/master/tokenizer.bin
  [aidreams260K.bin]=$aidreams/aidreams260K.bin
  [tok512-aidreams.bin]=$aidreams/tok512.bin
)
required=(stories260K.bin tok512.bin tokenizer.bin)
optional=(aidreams260K.bin tok512-aidreams.bin)

if [ -n "${CURTA_MODELS:-}" ]; then
  echo "$CURTA_MODELS"
  exit 0
fi

dest="$root/models"
mkdir -p "$dest"

# Whether file $2 is model $1, by its pinned hash.
matches() {
  [ -f "$2" ] && echo "${sha[$1]}  $2" | sha256sum --check --status
}

# Puts model $1 into models/; fails (status 1) when no place has it.
get() {
  local name="$1" file="$dest/$1"
  matches "$name" "$file" && return 0
  rm -f "$file"
  if matches "$name" "$beside/$name"; then
    ln -s "$(cd "$beside" && pwd)/$name" "$file"
    return 0
  fi
  echo "fetching $name" >&2
  if ! curl -fsSL --retry 3 -o "$file.part" "${url[$name]}"; then
    rm -f "$file.part"
    echo "cannot download $name from ${url[$name]}" >&2
    return 1
  fi
  mv "$file.part" "$file"
  if ! matches "$name" "$file"; then
    rm -f "$file"
    echo "$name from ${url[$name]} does not match its pinned SHA-256" >&2
    return 1
  fi
}

for name in "${required[@]}"; do
  get "$name" || { echo "error: $name is needed by every test" >&2; exit 1; }
done
for name in "${optional[@]}"; do
  get "$name" || echo "warning: without $name the golden run aidreams260k-reference is skipped" >&2
done
echo "$dest"
