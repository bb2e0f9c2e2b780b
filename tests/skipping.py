"""What a skip may mean. With ``CHUNKMARK_REQUIRE_ALL=1`` (CI) a skip fails the run unless its
reason starts with :data:`HARDWARE` (tests/conftest.py): a missing package, data folder or
program is something CI must have, a missing CPU feature or GPU is not. The one other skip
allowed is for a pyproject extra that the Makefile's install leaves out on purpose (too large
for CI): its reason starts with :data:`OPTIONAL_EXTRA` and the extra's name, and it is allowed
only while that extra is absent from the Makefile's ``pip install -e '.[...]'`` line."""

from __future__ import annotations

import os
import re
from pathlib import Path

REQUIRE_ALL = "CHUNKMARK_REQUIRE_ALL"
HARDWARE = "hardware this machine lacks: "
OPTIONAL_EXTRA = "optional extra the Makefile does not install: "
MAKEFILE = Path(__file__).resolve().parent.parent / "Makefile"


def require_all() -> bool:
    """True when every skip but a hardware one must fail the run."""
    return os.environ.get(REQUIRE_ALL, "") not in ("", "0")


def optional_extra(extra: str, what: str) -> str:
    """The reason for a skip because the pyproject extra ``extra`` is not installed."""
    return f"{OPTIONAL_EXTRA}{extra}: {what}"


def makefile_extras(makefile: Path = MAKEFILE) -> set[str]:
    """The extras of the Makefile's editable install of the project (``-e '.[a,b]'``)."""
    found: set[str] = set()
    for match in re.finditer(r"-e\s+'?\.\[([^\]]*)\]", makefile.read_text(encoding="utf-8")):
        found.update(name.strip() for name in match.group(1).split(",") if name.strip())
    return found


def allowed_optional_skip(reason: str, makefile: Path = MAKEFILE) -> bool:
    """True for an :func:`optional_extra` skip whose extra the Makefile does not install."""
    if not reason.startswith(OPTIONAL_EXTRA):
        return False
    extra = reason[len(OPTIONAL_EXTRA) :].split(":", 1)[0].strip()
    return bool(extra) and extra not in makefile_extras(makefile)
