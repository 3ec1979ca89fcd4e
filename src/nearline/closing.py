"""``with`` support for objects that hold resources until ``close()``."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """Subclasses define ``close()``; ``with Thing(...) as thing:`` then always closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
