"""The package version, in one place.

A leaf module, so code anywhere in the package can read the version without importing the
package face (``chunkmark/__init__.py``); the package face and the build metadata both take it
from here.
"""

from __future__ import annotations

__version__ = "0.1.0"
