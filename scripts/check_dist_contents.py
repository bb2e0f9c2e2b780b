"""Check that a built wheel and sdist hold every file of the package that git tracks.

    python scripts/check_dist_contents.py DIST/chunkmark-X-py3-none-any.whl DIST/chunkmark-X.tar.gz

A file under ``src/chunkmark/`` that is tracked by git but missing from the wheel (demo data,
``py.typed``, prompts, templates) is listed and the exit status is 1. The wheel must also carry
the LICENSE and the ``chunkmark`` console script; the sdist the LICENSE, README and pyproject.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "chunkmark"


def package_files() -> list[str]:
    """Files of the package, relative to ``src/``: git's list, or the tree without caches."""
    try:
        out = subprocess.run(
            ["git", "ls-files", f"src/{PACKAGE}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        files = [p.removeprefix("src/") for p in out]
    except (OSError, subprocess.CalledProcessError):
        files = [
            str(p.relative_to(ROOT / "src"))
            for p in (ROOT / "src" / PACKAGE).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ]
    if not files:
        sys.exit(f"no files found under src/{PACKAGE}: run this from a checkout of the project")
    return sorted(files)


def check_wheel(path: Path, expected: list[str]) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        problems = [f"wheel lacks {name}" for name in expected if name not in names]
        if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
            problems.append("wheel lacks the LICENSE (*.dist-info/licenses/LICENSE)")
        entry_points = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = zf.read(entry_points[0]).decode() if entry_points else ""
        if f"{PACKAGE} = {PACKAGE}.cli.app:main" not in scripts:
            problems.append("wheel declares no `chunkmark` console script")
    return problems


def check_sdist(path: Path, expected: list[str]) -> list[str]:
    with tarfile.open(path) as tf:
        members = tf.getnames()
    top = members[0].split("/", 1)[0]
    names = {m.removeprefix(f"{top}/") for m in members}
    wanted = [f"src/{name}" for name in expected] + ["LICENSE", "README.md", "pyproject.toml"]
    return [f"sdist lacks {name}" for name in wanted if name not in names]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    wheel, sdist = (Path(a) for a in argv)
    expected = package_files()
    problems = check_wheel(wheel, expected) + check_sdist(sdist, expected)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    if problems:
        print(
            "fix: declare the files in [tool.setuptools.package-data] in pyproject.toml",
            file=sys.stderr,
        )
        return 1
    print(f"{len(expected)} package files present in {wheel.name} and {sdist.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
