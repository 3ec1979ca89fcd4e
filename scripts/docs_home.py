"""MkDocs hook: README.md is the site's home page.

README lives at the repository's root, where GitHub shows it, and links the guide as
``docs/burst.md``; MkDocs reads only ``docs/``. This hook adds README to the site as
``index.md`` with those links made relative to ``docs/``, so one file serves both readers and
the strict build still checks every link in it.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

README = Path(__file__).resolve().parents[1] / "README.md"
_DOCS_LINK = re.compile(r"\]\(docs/")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add README.md, its ``docs/`` links rebased, as the home page."""
    text = _DOCS_LINK.sub("](", README.read_text(encoding="utf-8"))
    files.append(File.generated(config, "index.md", content=text))
    return files
