"""Who is asking: the bearer token of every request but the public few (the landing page,
/conformance and the OpenAPI document)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from nearline.orders import Service

bearer = HTTPBearer(
    auto_error=False,
    description="An API token: `nearline users add NAME` prints one (`nearline users token NAME` "
    "issues a new one), a personal token (/users/me/tokens), or, where the operator connected "
    "an OpenID Connect provider, the provider's access token (`nearline login`).",
)


Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]


def require_user(request: Request, credentials: Credentials) -> str:
    """FastAPI dependency: the caller's user name, or a 401."""
    service: Service = request.app.state.service
    user = service.authenticate(credentials.credentials if credentials else None)
    request.state.user = user
    return user
