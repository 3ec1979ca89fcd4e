"""Who is asking: the bearer token of every request but the public few (the landing page,
/conformance and the OpenAPI document).

Two operator's switches open doors to requests without a token (both off by default):

- a **guest** (``nearline serve --guest NAME``): every request without a token acts as the
  existing user NAME, with NAME's string and NAME's things; for conformance runs, whose suites
  send no credentials;
- **anonymous readers** (``--anonymous-read all|ID,ID``): requests without a token may read
  the catalogue (collections, items, search, and the map tiles of the gridded ones) of the
  collections named (``all``: every archive collection, never a user's) and the public
  processes; nothing else.

A token that is sent is always checked: a wrong one is a 401, never a guest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import FastAPI, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from nearline.errors import CollectionNotFound, ConfigError
from nearline.orders import Service

bearer = HTTPBearer(
    auto_error=False,
    description="An API token: `nearline users add NAME` prints one (`nearline users token NAME` "
    "issues a new one), a personal token (/users/me/tokens), or, where the operator connected "
    "an OpenID Connect provider, the provider's access token (`nearline login`).",
)


Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]
EVERY_COLLECTION = "all"


@dataclass(frozen=True)
class Doors:
    """What a request without a token may do: act as ``guest`` (a user's name), or read the
    ``public`` collections (the archive's ``all``, or these ids) and the public processes."""

    guest: str | None = None
    public: frozenset[str] | None = None

    def shows(self, collection: str) -> bool:
        """Whether an anonymous reader may see ``collection`` (an archive collection)."""
        return self.public is not None and (
            EVERY_COLLECTION in self.public or collection in self.public
        )


def open_doors(app: FastAPI, service: Service, *, guest: str | None, public: str | None) -> Doors:
    """Set what requests without a token may do on ``app`` (:class:`Doors`); ``public`` is
    the ``--anonymous-read`` text. :class:`ConfigError` if the guest is no user."""
    if guest is not None and not any(user.name == guest for user in service.users.list()):
        raise ConfigError(
            f"--guest {guest}: no such user; `nearline users add {guest}` creates them "
            "(the guest acts with their string and owns what guests make)"
        )
    ids = None
    if public is not None:
        ids = frozenset(part.strip() for part in public.split(",") if part.strip())
        if not ids:
            raise ConfigError("--anonymous-read takes 'all' or collection ids, e.g. mod06,avhrr")
    doors = Doors(guest=guest, public=ids)
    app.state.doors = doors
    return doors


def doors_of(request: Request) -> Doors:
    return getattr(request.app.state, "doors", None) or Doors()


def require_user(request: Request, credentials: Credentials) -> str:
    """FastAPI dependency: the caller's user name (the guest's without a token, if the
    operator named one), or a 401."""
    service: Service = request.app.state.service
    guest = doors_of(request).guest
    if credentials is None and guest is not None:
        user = guest
    else:
        user = service.authenticate(credentials.credentials if credentials else None)
    request.state.user = user
    return user


def require_reader(request: Request, credentials: Credentials) -> str | None:
    """FastAPI dependency for the catalogue's and the process list's reading routes: the
    caller's user name; None for an anonymous reader, where the operator lets them in; else
    a 401."""
    doors = doors_of(request)
    if credentials is None and doors.public is not None and doors.guest is None:
        request.state.user = None
        return None
    return require_user(request, credentials)


def check_public(request: Request, collection: str) -> None:
    """An anonymous reader asking for a collection that is not public: a 404, as for one
    that does not exist."""
    if _anonymous(request) and not doors_of(request).shows(collection):
        raise CollectionNotFound(f"no collection {collection!r}")


def viewer(request: Request) -> str | None:
    """Whose request this is: the signed-in user's name, None for an anonymous reader (what
    the catalogue's ``viewer`` takes)."""
    return getattr(request.state, "user", None)


def _anonymous(request: Request) -> bool:
    return getattr(request.state, "user", "") is None


def public_collections(request: Request, collections: list[str]) -> list[str]:
    """The ``collections`` an anonymous reader may see (all of them for a user)."""
    if not _anonymous(request):
        return collections
    doors = doors_of(request)
    return [c for c in collections if doors.shows(c)]
