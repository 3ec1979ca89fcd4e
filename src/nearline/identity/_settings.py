"""The operator's sign-in settings (``nearline serve --oidc FILE``): the provider, its clients,
how its access tokens are marked, and the admission policy.

Operator groups are named with their issuer (``operator_groups: {ISSUER: [GROUP, ...]}``): a
group is whatever the issuer that signs it says, so a group of a partner issuer (one of
``issuers:``) makes operators only where the operator wrote that issuer down beside it. A bare
list, the shape of older settings, is refused with the new shape in the message: it made the
group administrators of every trusted issuer able to make anyone a nearline operator.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nearline.errors import ConfigError, Forbidden

# what marks an access token when the operator says nothing (docs/service.md, "Access tokens")
ACCESS_TOKEN_TYPES = ("at+jwt", "application/at+jwt", "Bearer")


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of names, got {value!r}")
    return tuple(value)


def parse_operator_groups(value: Any, *, where: str) -> dict[str, tuple[str, ...]]:
    """``admit.operator_groups`` as {issuer: groups}; :class:`ConfigError` for a bare list
    (the old shape, which trusted every issuer's groups) or anything else.

    Parameters
    ----------
    value
        What the settings file holds under ``admit.operator_groups`` (None: no operators).
    where
        The settings file, named in errors.
    """
    if value is None:
        return {}
    if isinstance(value, list | str):
        example = ", ".join(_names(value, f"{where}: admit.operator_groups")) or "GROUP"
        raise ConfigError(
            f"{where}: admit.operator_groups names each group with the issuer whose token "
            f"carries it, e.g. `operator_groups: {{ISSUER: [{example}]}}`; a bare list would "
            "let the group administrators of every trusted issuer make operators"
        )
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where}: admit.operator_groups: expected {{ISSUER: [GROUP, ...]}}, got {value!r}"
        )
    return {
        str(issuer): _names(groups, f"{where}: admit.operator_groups[{issuer}]")
        for issuer, groups in value.items()
    }


@dataclass(frozen=True)
class Admission:
    """Who the operator lets in: e-mail domains (of verified addresses) or group claims; with
    neither, everyone the allowed issuers vouch for. ``operator_groups`` ({issuer: groups})
    make operators of the members of those groups in that issuer's tokens only.

    Parameters
    ----------
    email_domains
        Verified e-mail addresses at these domains are admitted.
    groups
        Members of these groups (in the ``groups_claim``) are admitted.
    operator_groups
        {issuer: groups}: members of these groups, in tokens of that issuer, are operators.
    groups_claim
        The claim that lists a person's groups.
    """

    email_domains: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    operator_groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    groups_claim: str = "groups"

    def check(self, claims: dict[str, Any]) -> bool:
        """Whether ``claims`` are admitted; :class:`Forbidden` naming the rule if not. True
        when they make an operator.

        Parameters
        ----------
        claims
            A verified token's claims (``iss`` among them).
        """
        groups = claims.get(self.groups_claim) or []
        groups = {groups} if isinstance(groups, str) else {str(g).strip("/") for g in groups}
        operators = self.operator_groups.get(str(claims.get("iss")), ())
        operator = bool(groups & set(operators))
        if operator or not (self.email_domains or self.groups):
            return operator
        if groups & set(self.groups):
            return False
        email = str(claims.get("email") or "")
        domain = email.rpartition("@")[2].lower()
        if email and claims.get("email_verified") is True and domain in self.email_domains:
            return False
        rules = []
        if self.email_domains:
            rules.append(f"verified e-mail addresses at {', '.join(self.email_domains)}")
        if self.groups or operators:
            rules.append(f"members of {', '.join(self.groups + operators)}")
        raise Forbidden(
            f"you signed in, but this service's sign-in policy admits only "
            f"{' or '.join(rules)} (admit: in its OpenID Connect settings); ask its operator"
        )


@dataclass(frozen=True)
class OidcSettings:
    """The operator's settings, from a YAML file (``nearline serve --oidc FILE`` or
    ``$NEARLINE_OIDC``); docs/service.md, "Signing in", lists them.

    Parameters
    ----------
    issuer
        The provider the web page and ``nearline login`` sign in with.
    client_id
        The web page's client.
    client_secret
        Its secret (``client_secret_env:`` names a variable holding it).
    cli_client_id
        A public client for ``nearline login`` (default: ``client_id``).
    audience
        What an access token's ``aud`` must name (default: ``client_id``).
    issuers
        More issuers whose access tokens the API accepts.
    scopes
        The scopes a sign-in asks for.
    admit
        Who may sign in, and who is an operator.
    access_token_types
        The ``typ`` values (JOSE header or claim) that mark an access token.
    leeway
        Seconds of clock skew allowed on ``exp``, ``nbf`` and ``iat``.
    session_hours
        How long a web sign-in's token lives.
    """

    issuer: str
    client_id: str
    client_secret: str | None = None
    cli_client_id: str | None = None
    audience: str | None = None
    issuers: tuple[str, ...] = ()
    scopes: str = "openid email profile"
    admit: Admission = field(default_factory=Admission)
    access_token_types: tuple[str, ...] = ACCESS_TOKEN_TYPES
    leeway: float = 30.0
    session_hours: float = 12.0

    @property
    def accepted_issuers(self) -> tuple[str, ...]:
        return (self.issuer, *(i for i in self.issuers if i != self.issuer))

    @property
    def expected_audience(self) -> str:
        return self.audience or self.client_id

    @property
    def login_client_id(self) -> str:
        return self.cli_client_id or self.client_id

    @classmethod
    def load(cls, path: str | Path) -> OidcSettings:
        """The settings in the YAML file ``path``; :class:`ConfigError` naming what is wrong.

        Parameters
        ----------
        path
            The settings file.
        """
        try:
            document = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f"OpenID Connect settings {path}: {error}") from None
        if not isinstance(document, dict) or not document.get("issuer"):
            raise ConfigError(f"OpenID Connect settings {path}: `issuer:` and `client_id:` first")
        admit = dict(document.pop("admit", None) or {})
        where = f"OpenID Connect settings {path}"
        operators = parse_operator_groups(admit.pop("operator_groups", None), where=where)
        if "access_token_types" in document:
            marks = document["access_token_types"]
            document["access_token_types"] = _names(marks, f"{where}: access_token_types")
        secret_env = document.pop("client_secret_env", None)
        if secret_env:
            document["client_secret"] = os.environ.get(secret_env)
        try:
            settings = cls(
                **{k: tuple(v) if isinstance(v, list) else v for k, v in document.items()},
                admit=Admission(operator_groups=operators,
                                **{k: tuple(v) if isinstance(v, list) else v
                                   for k, v in admit.items()}),
            )  # fmt: skip
        except TypeError as error:
            raise ConfigError(f"{where}: {error}") from None
        unknown = sorted(set(operators) - set(settings.accepted_issuers))
        if unknown:
            raise ConfigError(
                f"{where}: admit.operator_groups names {', '.join(unknown)}, not an issuer this "
                f"service accepts ({', '.join(settings.accepted_issuers)}); add it to "
                "`issuers:` or correct it"
            )
        return settings

    @classmethod
    def resolve(cls, path: str | Path | None = None) -> OidcSettings | None:
        """The settings at ``path``, else at ``$NEARLINE_OIDC``; None when neither is set.

        Parameters
        ----------
        path
            A settings file (``--oidc``), or None.
        """
        named = path or os.environ.get("NEARLINE_OIDC")
        return cls.load(named) if named else None
