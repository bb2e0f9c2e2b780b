#!/usr/bin/env bash
# Release check: build the sdist and the wheel, check them with twine, compare the wheel with the
# source tree, then install the wheel into a fresh virtual environment outside the source tree
# and run the demo there (with the report), as a user would.
#
#   scripts/release_check.sh [PYTHON]
#
# PYTHON (default .venv/bin/python) must have `build` and `twine` (the `release` extra).
# The fresh environment is created with the same interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
py="$(cd "$(dirname "${1:-.venv/bin/python}")" && pwd)/$(basename "${1:-.venv/bin/python}")"
work="$(mktemp -d "${TMPDIR:-/tmp}/chunkmark-release.XXXXXX")"
trap 'rm -rf "$work"' EXIT
dist="$work/dist"

# Build from a copy holding only what git would commit (tracked files and new files git does
# not ignore), as a clean clone would: a stale *.egg-info or build/ folder of the working tree
# must not hide a file the package data rules leave out. The wheel is built from the sdist, as
# pip builds it for users who install from the sdist.
echo "== build: sdist, then the wheel from the sdist, into $dist"
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$work/src"
"$py" -m build --outdir "$dist" "$work/src" >"$work/build.log" 2>&1 || {
    cat "$work/build.log"
    exit 1
}
wheel=("$dist"/chunkmark-*.whl)
sdist=("$dist"/chunkmark-*.tar.gz)
ls -l "$dist"

echo "== twine check --strict"
"$py" -m twine check --strict "${wheel[0]}" "${sdist[0]}"

echo "== contents: every file of the package in git is in the wheel and the sdist"
"$py" scripts/check_dist_contents.py "${wheel[0]}" "${sdist[0]}"

echo "== fresh environment outside the source tree: $work/venv"
"$py" -m venv "$work/venv"
vpy="$work/venv/bin/python"
quiet() {  # run a command, showing its output only when it fails
    "$@" >"$work/step.log" 2>&1 || { cat "$work/step.log"; return 1; }
}
quiet "$vpy" -m pip install --upgrade pip
# The CPU build of torch first, so sentence-transformers does not pull CUDA wheels.
quiet "$vpy" -m pip install torch==2.13.0
quiet "$vpy" -m pip install "${wheel[0]}[st,offline,report]"

cd "$work"
export HF_HUB_OFFLINE=1
export CHUNKMARK_CACHE_DIR="$work/cache"
expected="$("$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import chunkmark; print(chunkmark.__version__)' "$root/src")"

echo "== import chunkmark (from $work, not the source tree)"
"$vpy" -c "
import pathlib, sys, chunkmark
where = pathlib.Path(chunkmark.__file__).resolve()
assert str(where).startswith('$work/venv'), f'imported from {where}, not the installed wheel'
assert chunkmark.__version__ == '$expected', chunkmark.__version__
print('imported chunkmark', chunkmark.__version__, 'from', where.parent)
"

echo "== chunkmark --version"
got="$("$work/venv/bin/chunkmark" --version)"
echo "$got"
[ "$got" = "chunkmark $expected" ] || { echo "expected 'chunkmark $expected'" >&2; exit 1; }
"$vpy" -m chunkmark --version >/dev/null

echo "== chunkmark run (built-in demo dataset, default grid)"
"$work/venv/bin/chunkmark" run --out "$work/results"
for f in results.parquet summary.csv manifest.json report.html; do
    [ -s "$work/results/$f" ] || { echo "chunkmark run wrote no $f" >&2; exit 1; }
done
echo "release check passed: $(basename "${wheel[0]}") $(basename "${sdist[0]}")"
