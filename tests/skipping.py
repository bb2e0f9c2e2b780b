"""What a skip may mean. With ``CHUNKMARK_REQUIRE_ALL=1`` (CI) a skip fails the run unless its
reason starts with :data:`HARDWARE` (tests/conftest.py): a missing package, data folder or
program is something CI must have, a missing CPU feature or GPU is not."""

from __future__ import annotations

import os

REQUIRE_ALL = "CHUNKMARK_REQUIRE_ALL"
HARDWARE = "hardware this machine lacks: "


def require_all() -> bool:
    """True when every skip but a hardware one must fail the run."""
    return os.environ.get(REQUIRE_ALL, "") not in ("", "0")
