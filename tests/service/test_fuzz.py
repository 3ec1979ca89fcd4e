"""schemathesis' command line, as anyone would run it from outside, against a live server:
``schemathesis run URL/api --checks all`` must report nothing, so the OpenAPI document and the
service cannot drift apart (docs/service.md, "Standards").

Every check runs on every operation, including positive_data_acceptance (whatever fits the
document is accepted) and negative_data_rejection (whatever does not is refused), but for the
rules no static OpenAPI document can state, which are 400s by design, where
positive_data_acceptance is left out (every other check still runs):

- the search operations and a subscription's saved search (GET and POST /search, GET
  /collections/{id}/items, POST /subscriptions): STAC requires a 400 for a bbox whose south
  lies north of its north, for an interval that ends before it starts, and for bbox with
  intersects (JSON Schema cannot compare two numbers, two times, or two query parameters),
  and a geometry whose edges cross is refused too (repairing one can take minutes);
- an algorithm package whose bytes are not a usable package (POST and PUT /processes: the
  document can say "a zip", not "a zip that builds and passes its tests");
- an order's inputs (POST /processes/{id}/execution), and a subscription's parameters, which
  each process describes for itself (GET /processes/{id}).

The suite draws EXAMPLES cases an operation (the full check by hand draws 25: docs/service.md);
the server is this module's own: a fuzzer undeploys, replaces, orders and dismisses at random,
which would spoil the state other modules' tests expect.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..live_service import LiveService
from .conftest import deploy, serving

EXAMPLES = 10  # per operation: the two runs take about two minutes on 2 cores
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
HOOKS = "tests.service.schemathesis_hooks"  # zip bodies: sent as the bytes generated
UNSTATABLE = (
    "GET /search",
    "POST /search",
    "GET /collections/{collection_id}/items",
    "POST /subscriptions",
    "POST /processes",
    "PUT /processes/{process_id}",
    "POST /processes/{process_id}/execution",
)
PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with serving(
        tmp_path_factory.mktemp("fuzz"), lambda live: deploy(live, "alice", "sizes")
    ) as live:
        yield live


def schemathesis_run(live: LiveService, *options: str) -> subprocess.CompletedProcess[str]:
    """``schemathesis run`` on the live server's document with alice's token."""
    command = [
        str(SCHEMATHESIS),
        "run",
        f"{live.url}/api",
        "--checks",
        "all",
        "--max-examples",
        str(EXAMPLES),
        "-H",
        f"Authorization: Bearer {live.tokens['alice']}",
        "--generation-database",
        "none",
        "--request-timeout",
        "60",  # a 2-core machine shared with other tests can be slow to answer a large geometry
        "--no-color",
        *options,
    ]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": HOOKS, "PYTHONPATH": str(PROJECT)}
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=live.data.parent, timeout=900
    )


def assert_nothing_reported(result: subprocess.CompletedProcess[str]) -> None:
    summary = result.stdout[result.stdout.rfind("SUMMARY") :]
    found = result.stdout.find("= ERRORS =")
    found = found if found >= 0 else result.stdout.find("= FAILURES =")
    details = result.stdout[found : found + 3000] if found >= 0 else ""
    report = f"schemathesis said:\n{details}\n...\n{summary}\n{result.stderr[-2000:]}"
    assert result.returncode == 0, report
    assert "Failures:" not in summary, report
    assert "Errors:" not in summary, report


def test_schemathesis_finds_nothing_where_the_document_and_the_service_disagree(
    fuzzed: LiveService,
) -> None:
    everywhere_else = [f"--exclude-name={name}" for name in UNSTATABLE]
    assert_nothing_reported(schemathesis_run(fuzzed, *everywhere_else))
    unstatable = [f"--include-name={name}" for name in UNSTATABLE]
    assert_nothing_reported(
        schemathesis_run(fuzzed, *unstatable, "--exclude-checks", "positive_data_acceptance")
    )
