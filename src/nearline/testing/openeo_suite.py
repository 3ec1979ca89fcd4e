"""openeo-test-suite, the openEO project's own validation suite, against a real `nearline
serve`: its general API compliance (WP4, ``tests/general``), collection metadata (WP2,
``tests/collections``) and process metadata (WP3, ``tests/processes/metadata``) work
packages, and the processes' own tests (WP5, ``process-tests``: each example of a process
nearline declares sent as a one-node graph to ``POST /result`` by the suite's http runner). A
developer runs it as CI would:

    .venv/bin/python -m nearline.testing.openeo_suite [--suite ../shared/openeo-test-suite]
        [--out DIR] [general] [collections] [processes] [process-tests]

The suite comes from ../shared/openeo-test-suite (its SHARED-README: the PyPI wheel lacks
the spec submodules). It is copied once a machine into nearline's cache and installed there
into a virtual environment of its own (its dependencies from PyPI: a minute or two the first
time), since ../shared is read-only and the suite pins libraries nearline does not.

The server runs on 127.0.0.1 over a throwaway data folder whose catalogue holds one gridded
collection, a synthetic day's Pathfinder composite (nearline.testing.gridded), with anonymous
reading on (WP2 and some WP4 requests send no credentials). WP4 signs in as every run of it
does, with ``authenticate_oidc()``: here the client-credentials grant of a client of the
tests' Keycloak (nearline.testing.keycloak), whose provider the server trusts (``--oidc``).
Offline, the suite's STAC validator is handed pystac's copies of the STAC schemas it would
fetch (nearline.testing.openeo_offline_schemas).

Prints each work package's total / passed / failed / skipped and every test that did not
pass with why; the tests of endpoints not served yet (user-defined process
graphs, services), and those no back-end can pass (a defect of the specification,
or of the suite's own data), are listed apart, each with why. Exits 1 if any other test
failed, or the suite could not run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from nearline.errors import NearlineError
from nearline.testing.ogc_suites import Outcome, serving
from nearline.testing.s3server import cache_folder

SUITE = Path(
    os.environ.get("NEARLINE_OPENEO_SUITE")
    or Path(__file__).resolve().parents[3].parent / "shared" / "openeo-test-suite"
)
# each work package: its tests' folder and the options it needs; the processes' own tests
# (WP5) run each example as a one-node graph through POST /result (the suite's http runner)
WORK_PACKAGES = {
    "general": ("tests/general", ()),
    "collections": ("tests/collections", ()),
    "processes": ("tests/processes/metadata", ()),
    "process-tests": ("tests/processes/processing", ("--runner", "http")),
}
COLLECTION = "composite-8km"
REALM = "nearline"
SUITE_CLIENT = ("openeo-suite", "openeo-suite-secret-for-tests")
SUITE_SECONDS = 900
PLUGIN = "openeo_offline_schemas"
DEFAULT_PACKAGES = tuple(WORK_PACKAGES)  # what CI runs
# WP4's tests of endpoints this back-end does not serve yet, each failing for that reason
# alone: reported apart, and not a failure of the run (issue 41 adds them)
NOT_SERVED = {
    "process_graphs": "user-defined process graphs (/process_graphs) are not served yet",
}
# tests that fail on a defect of the specification they check against, for any back-end:
# reported apart with the defect's report, and not a failure of the run
SPEC_DEFECTS = {
    "test_POST_result": (
        "its payload loads EODC's collection CGLS_SSM_1KM, which no other back-end holds, and "
        "it expects 201 where openapi.yaml answers POST /result with 200: no back-end but "
        "that one can pass it; test_empty_POST_result and the processes' tests (WP5, each "
        "example through POST /result) check /result instead"
    ),
    "test_GET_processes": (
        "openapi.yaml's process_json_schema is a oneOf of three overlapping branches, so every "
        "ordinary process schema ({'type': 'number'}, a datacube) matches more than one and "
        "fails it: any back-end listing the official specifications fails this test "
        "(Open-EO/openeo-api#600)"
    ),
}


# the processes' tests (WP5) that no HTTP back-end can pass, by their test ids' start
EXAMPLE_DEFECTS = {
    **dict.fromkeys(("test_process[count-example216-", "test_process[count-example217-"), (
        "count's examples 4 and 5 give their condition as a bare graph, without the "
        "{'process_graph': ...} every callback is wrapped in, and call gt without naming it "
        "required, so a back-end that does not offer gt runs them anyway"
    )),
    "test_process[mask-example180-": (
        "mask's example names the data assets/xyb-minimal-float.json5, which the suite does "
        "not hold (its assets have xyb-minimal-int and xyt-minimal-float)"
    ),
}  # fmt: skip
UNDECLARED_START = "Backend does not support"
UNDECLARED = "of processes this back-end does not declare (GET /processes lists its 20)"
FOREIGN_JOB = ("test_POST_jobs_job_id_results", "test_GET_jobs_job_id_estimate")
# WP4 tests not run at all: each waits minutes for the suite's job to run or finish, which it
# cannot here (FOREIGN_WHY), and then fails or checks nothing more than tests that do run
NOT_RUN = {
    "test_GET_jobs_job_id_results": "waits 160 s for the suite's job to finish",
    "test_DELETE_jobs_job_id_results": "waits 120 s for the suite's job to run",
}
FOREIGN_WHY = (
    "the suite's only job payload (payload_examples/post_jobs) loads EODC's collection "
    "CGLS_SSM_1KM, which no other back-end holds: nearline keeps the job as a draft, and "
    "starting it or estimating it meets CollectionNotFound (404), so it never finishes; "
    "tests/openeo/test_batch_jobs.py runs these endpoints on a collection nearline holds"
)
NO_JSON = (
    "HTTP JSON APIs don't support",
    "the example holds NaN or infinity, which JSON cannot carry: the suite's http runner "
    "raises instead of skipping it, for any back-end",
)


def not_served(name: str) -> str | None:
    """Why the WP4 test ``name`` cannot test anything yet, if it is of an endpoint not
    served (``test_GET_jobs_job_id_logs``: jobs)."""
    test = name.split("[")[0]
    return next((why for part, why in NOT_SERVED.items() if f"_{part}" in test), None)


def set_apart(name: str, why: str = "") -> str | None:
    """Why the test ``name`` (which failed saying ``why``) is reported apart: an endpoint not
    served, or a defect of the specification or of the suite."""
    example = next((said for start, said in EXAMPLE_DEFECTS.items() if name.startswith(start)),
                   None)  # fmt: skip
    no_json = NO_JSON[1] if NO_JSON[0] in why else None
    foreign = FOREIGN_WHY if name.split("[")[0] in FOREIGN_JOB else None
    return (SPEC_DEFECTS.get(name.split("[")[0]) or example or no_json or foreign
            or not_served(name))  # fmt: skip


def suite_environment(suite: Path, say: Callable[[str], None] = print) -> Path:
    """The suite's own Python, its copy installed once a machine (keyed by its files)."""
    digest = hashlib.sha256(b"editable")  # installed in place: see below
    for path in [*sorted((suite / "src").rglob("*.py")), suite / "pyproject.toml"]:
        digest.update(path.read_bytes())
    home = cache_folder() / "openeo-test-suite" / digest.hexdigest()[:12]
    python = home / "venv" / "bin" / "python"
    if (home / ".installed").exists():
        link_example_assets(home / "suite")
        return home
    say(f"installing openeo-test-suite from {suite} into {home} (once a machine)")
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(suite, home / "suite", ignore=shutil.ignore_patterns("reports", "build"))
    for path in (home / "suite").rglob("*"):  # ../shared is laid without write bits
        path.chmod(path.stat().st_mode | 0o200)
    subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True)
    # editable: the suite finds its payload examples beside its own module's file, and from an
    # installed copy it falls back on a relative path that its loader then doubles
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--editable", str(home / "suite")],
        check=True, timeout=1800,
    )  # fmt: skip
    link_example_assets(home / "suite")
    (home / ".installed").touch()
    return home


def link_example_assets(suite: Path) -> None:
    """The processes' tests (WP5) read an example's external data (``assets/x.json5``) beside
    the process's specification (``assets/processes/``), while the files lie beside the tests
    (``assets/processes/tests/assets``): a link lets them find it."""
    link = suite / "assets" / "processes" / "assets"
    if not link.exists():
        link.symlink_to(Path("tests") / "assets")


def catalogue_composite(data: Path) -> None:
    """One public gridded collection: a synthetic day's composite, catalogued by ingest."""
    from nearline.archive import Collection, ingest, open_catalogue
    from nearline.testing.gridded import make_composite

    data.mkdir(parents=True, exist_ok=True)
    composite = make_composite(data.parent / "composite")
    with open_catalogue(None, data / "catalogue.db") as catalogue:
        catalogue.put_collection(
            Collection(id=COLLECTION, title="Pathfinder composites, 8 km",
                       description="A synthetic day's AVHRR composite on the 8 km Goode grid")
        )  # fmt: skip
        ingest(catalogue, [composite], collection=COLLECTION, workers=1)


def provider_settings(keycloak: object, folder: Path) -> Path:
    """The suite's realm in ``keycloak`` (its confidential client, with the client-credentials
    grant, and the public device-flow client /credentials/oidc names), and the server's
    settings trusting it."""
    import yaml

    from nearline.testing.keycloak import realm_document

    clients = [
        {"clientId": SUITE_CLIENT[0], "publicClient": False, "secret": SUITE_CLIENT[1],
         "serviceAccountsEnabled": True, "standardFlowEnabled": False,
         "nearline.audience": True},
        {"clientId": "nearline-cli", "publicClient": True, "standardFlowEnabled": True,
         "redirectUris": ["http://127.0.0.1*"],
         "attributes": {"oauth2.device.authorization.grant.enabled": "true"},
         "nearline.audience": True},
    ]  # fmt: skip
    document = realm_document(REALM, clients=clients, users=[], audience="nearline")
    issuer = keycloak.add_realm(document)  # type: ignore[attr-defined]
    settings = folder / "oidc.yaml"
    settings.write_text(
        yaml.safe_dump(
            {
                "issuer": issuer,
                "client_id": "nearline",
                "audience": "nearline",
                "cli_client_id": "nearline-cli",
            }
        )
    )
    return settings


def read_junit(path: Path, label: str) -> Outcome:
    """A pytest JUnit XML report as an :class:`Outcome`."""
    outcome = Outcome(label)
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        status, why = "PASS", ""
        for tag, word in (("failure", "FAIL"), ("error", "FAIL"), ("skipped", "SKIP")):
            found = case.find(tag)
            if found is not None:
                status = word
                why = " ".join((found.get("message") or found.text or "").split())[:300]
                break
        outcome.tests.append((case.get("classname", "?"), case.get("name", "?"), status, why))
    return outcome


def run_package(home: Path, package: str, url: str, out: Path, env: dict[str, str]) -> Outcome:
    """One work package of the suite against ``url`` (the openEO face's root)."""
    report = out / f"{package}.xml"
    folder, options = WORK_PACKAGES[package]
    skipped = [f"--deselect=src/openeo_test_suite/tests/general/test_compliance.py::{name}"
               for name in NOT_RUN] if package == "general" else []  # fmt: skip
    command = [
        str(home / "venv" / "bin" / "python"), "-m", "pytest", "-p", PLUGIN,
        "-p", "no:cacheprovider", f"src/openeo_test_suite/{folder}", *options, *skipped,
        "-U", f"{url}/openeo/1.2/", f"--junitxml={report}", "-q", "-W", "ignore",
    ]  # fmt: skip
    with open(out / f"{package}.log", "wb") as log:
        subprocess.run(command, cwd=home / "suite", env=env, stdout=log,
                       stderr=subprocess.STDOUT, check=False, timeout=SUITE_SECONDS)  # fmt: skip
    if not report.is_file():
        raise NearlineError(f"{package}: the suite wrote no report; its log: {log.name}")
    return read_junit(report, f"openeo-test-suite {package}")


def report(outcome: Outcome) -> int:
    """Print the outcome; the number of failures that are not set apart (:func:`set_apart`)."""
    apart = [t for t in outcome.tests if set_apart(t[1], t[3])]
    failed = [t for t in outcome.tests if t[2] == "FAIL" and not set_apart(t[1], t[3])]
    print(f"{outcome.line()}; {len(apart)} of them set apart (endpoints not served, spec defects)")
    if outcome.label.endswith(" general"):
        for name, why in NOT_RUN.items():
            print(f"  not run: {name}: it {why}; {FOREIGN_WHY}")
    for test_class, name, status, why in outcome.tests:
        if status == "FAIL" and not set_apart(name, why):
            print(f"  {status} {test_class}.{name}: {why}")
    skipped = Counter(
        UNDECLARED if why.startswith(UNDECLARED_START) else why
        for _, _, status, why in outcome.tests if status == "SKIP"
    )  # fmt: skip
    for why, count in skipped.most_common():
        print(f"  SKIP x{count}: {why}")
    for _, name, status, why in apart:
        said = "fails" if status == "FAIL" else "passes, with nothing served to check"
        print(f"  set apart, {said}: {name}: {set_apart(name, why)}")
    return len(failed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nearline.testing.openeo_suite", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--suite", type=Path, default=SUITE,
                        help="the suite with its specs (default: $NEARLINE_OPENEO_SUITE, "
                        "else ../shared/openeo-test-suite)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="keep reports and logs here")
    parser.add_argument("packages", nargs="*", metavar="PACKAGE",
                        help=f"{', '.join(WORK_PACKAGES)} (default: "
                        f"{', '.join(DEFAULT_PACKAGES)})")  # fmt: skip
    args = parser.parse_args(argv)
    packages = args.packages or list(DEFAULT_PACKAGES)
    if unknown := [name for name in packages if name not in WORK_PACKAGES]:
        parser.error(
            f"no work package {', '.join(unknown)}: choose from {', '.join(WORK_PACKAGES)}"
        )
    if not (args.suite / "assets" / "openeo-api" / "openapi.yaml").is_file():
        print(f"openeo-test-suite with its specs is not at {args.suite}: pass --suite DIR "
              "(../shared/openeo-test-suite, see its SHARED-README)", file=sys.stderr)  # fmt: skip
        return 1
    from nearline.testing.keycloak import Keycloak

    home = suite_environment(args.suite)
    with tempfile.TemporaryDirectory(prefix="nearline-openeo-") as scratch:
        folder = Path(scratch)
        out = (args.out or folder / "out").absolute()
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(__file__).with_name(f"{PLUGIN}.py"), folder / f"{PLUGIN}.py")
        catalogue_composite(folder / "data")
        failed = 0
        with Keycloak(folder / "keycloak") as keycloak:
            settings = provider_settings(keycloak, folder)
            options = ("--oidc", str(settings), "--anonymous-read", "all")
            with serving(folder / "data", *options) as url:
                env = {
                    **os.environ,
                    "PYTHONPATH": str(folder),
                    "HOME": str(folder),  # the openEO client's config and token store
                    "OPENEO_AUTH_METHOD": "client_credentials",
                    "OPENEO_AUTH_CLIENT_ID": SUITE_CLIENT[0],
                    "OPENEO_AUTH_CLIENT_SECRET": SUITE_CLIENT[1],
                    "OPENEO_AUTH_PROVIDER_ID": REALM,
                }
                for package in packages:
                    failed += report(run_package(home, package, url, out, env))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
