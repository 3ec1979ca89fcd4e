"""Operator groups are named with their issuer (issue 38): a service that trusts a partner
issuer beside its own makes operators of the members of its own issuer's group only, so a
partner's group administrator cannot make anyone a nearline operator. Both realms of the
suite's Keycloak hold an olga in a group named ``nearline-operators``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from nearline.errors import ConfigError, Forbidden
from nearline.identity import OidcSettings

from ..live_service import LiveService
from ..service.conftest import serving


def settings_file(folder: Path, provider, operator_groups: object) -> Path:
    path = folder / "two-issuers.yaml"
    document = yaml.safe_load(provider.settings.read_text())
    document["issuers"] = [provider.elsewhere]
    document["admit"]["operator_groups"] = operator_groups
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture(scope="module")
def two_issuers(tmp_path_factory, provider) -> Iterator[LiveService]:
    """A live service trusting both realms, whose operators are the first realm's group's."""
    folder = tmp_path_factory.mktemp("two-issuers")
    settings = settings_file(folder, provider, {provider.issuer: ["nearline-operators"]})
    with serving(folder, extra=["--oidc", str(settings)]) as service:
        yield service


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_partner_issuers_group_makes_no_operator(two_issuers, provider):
    url = two_issuers.url
    ada = provider.password_token("ada")["access_token"]
    made = httpx.post(f"{url}/users/me/tokens", json={"name": "n"}, headers=bearer(ada))
    assert made.status_code == 201, made.text
    partner = provider.password_token("olga", issuer=provider.elsewhere)["access_token"]
    assert httpx.get(f"{url}/users/me", headers=bearer(partner)).status_code == 200  # admitted
    refused = httpx.delete(f"{url}/tokens/{made.json()['id']}", headers=bearer(partner))
    assert refused.status_code == 403
    home = provider.password_token("olga")["access_token"]
    revoked = httpx.delete(f"{url}/tokens/{made.json()['id']}", headers=bearer(home))
    assert revoked.status_code == 204


def test_the_old_shape_is_refused_with_the_new_one_named(tmp_path, provider):
    with pytest.raises(ConfigError, match=r"operator_groups: \{ISSUER: \[nearline-operators\]\}"):
        OidcSettings.load(settings_file(tmp_path, provider, ["nearline-operators"]))


def test_an_issuer_not_trusted_is_refused_by_name(tmp_path, provider):
    typo = provider.issuer + "x"
    with pytest.raises(ConfigError, match=re.escape(f"names {typo}, not an issuer this service")):
        OidcSettings.load(settings_file(tmp_path, provider, {typo: ["nearline-operators"]}))


def test_operators_of_each_issuer_named_are_that_issuers(tmp_path, provider):
    both = {provider.issuer: ["nearline-operators"], provider.elsewhere: ["partner-admins"]}
    admit = OidcSettings.load(settings_file(tmp_path, provider, both)).admit
    claims = {"iss": provider.elsewhere, "groups": ["nearline-operators"], "email": "o@x.example"}
    assert admit.operator_groups[provider.elsewhere] == ("partner-admins",)
    assert admit.check({**claims, "groups": ["partner-admins"]}) is True
    assert admit.check({**claims, "iss": provider.issuer}) is True
    with pytest.raises(Forbidden, match="admits only"):
        admit.check(claims)  # the home issuer's group name, carried by the partner's token
