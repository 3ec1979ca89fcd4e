"""nearline: scalable I/O and near-archive processing for Earth-science data."""

from __future__ import annotations

from nearline.errors import NearlineError

__version__ = "0.1.0"
__all__ = ["NearlineError", "__version__"]
