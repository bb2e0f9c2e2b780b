"""Where chunkmark keeps its files: the one cache root shared by every cache and download.

The root is an explicit path if one is given, else ``$CHUNKMARK_CACHE_DIR``, else the user cache
folder of "chunkmark" (``platformdirs.user_cache_dir``). The embedding cache, the LLM answer
cache and the chunk store live in it; downloaded datasets go to ``<root>/datasets/<name>/``.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "CHUNKMARK_CACHE_DIR"


def resolve_cache_dir(path: str | Path | None = None) -> Path:
    """The cache root: ``path`` if given (and not empty), else ``$CHUNKMARK_CACHE_DIR`` (if set
    and not empty), else the user cache folder (``platformdirs.user_cache_dir("chunkmark")``).
    A leading ``~`` is expanded."""
    if path is not None and str(path) != "":
        return Path(path).expanduser()
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("chunkmark"))
