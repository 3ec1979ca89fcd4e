"""identity: who someone is to the service. Users and their strings' row, the identities a
provider vouches for (issuer and subject), personal tokens, and signing in through an OpenID
Connect provider: the operator's settings, the verifier of its tokens and the policy of who
may sign in."""

from __future__ import annotations

from nearline.identity._handoffs import Handoffs
from nearline.identity._oidc import ProviderUnreachable, Verifier, check_provider, pkce_pair
from nearline.identity._settings import Admission, OidcSettings
from nearline.identity._tokens import MAX_DAYS, MAX_NAME, TOKEN_NAME_PATTERN, PersonalToken
from nearline.identity._users import Allotment, User, UserStore

__all__ = [
    "MAX_DAYS",
    "MAX_NAME",
    "TOKEN_NAME_PATTERN",
    "Admission",
    "Allotment",
    "Handoffs",
    "OidcSettings",
    "PersonalToken",
    "ProviderUnreachable",
    "User",
    "UserStore",
    "Verifier",
    "check_provider",
    "pkce_pair",
]
