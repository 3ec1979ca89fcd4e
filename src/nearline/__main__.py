"""``python -m nearline``: the same as the ``nearline`` command (handy under mpiexec)."""

from __future__ import annotations

import sys

from nearline.cli import main

sys.exit(main())
