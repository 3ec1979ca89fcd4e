"""docs/operations.md's Prometheus configuration and alert rules, as Prometheus' own promtool
reads them: the configuration and the rules are valid, and each alert fires on series made
to fire it and stays silent on series that should not (``promtool test rules``)."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from .markdown_blocks import ROOT, blocks

PAGE = ROOT / "docs" / "operations.md"

QUEUED = 'nearline_station_queue_depth{station="queued",instance="a"}'
WAITED = 'nearline_station_oldest_wait_seconds{station="queued",instance="a"}'


def runs(state: str, instance: str = "a") -> str:
    station = {"successful": "done", "failed": "failed"}[state]
    return f'nearline_runs{{state="{state}",station="{station}",instance="{instance}"}}'


def fired(severity: str, summary: str) -> dict:
    return {"exp_labels": {"severity": severity}, "exp_annotations": {"summary": summary}}


def case(series: dict[str, str], expected: list[tuple[str, str, dict | None]]) -> dict:
    """One promtool test: ``series`` (selector: values, a sample every 5 minutes), and the
    alert each (time, alert) should find: one firing so, or None for silence."""
    return {
        "interval": "5m",
        "input_series": [{"series": name, "values": values} for name, values in series.items()],
        "alert_rule_test": [
            {"eval_time": at, "alertname": alert, "exp_alerts": [firing] if firing else []}
            for at, alert, firing in expected
        ],
    }


# two servers (a, b) report the same counts from one database: ten runs succeed each 5
# minutes; one fails for a day, then five (a third of the hour's runs, up from a twelfth)
FAILING_MORE = case(
    {
        runs("successful"): "0+10x400",
        runs("successful", "b"): "0+10x400",
        runs("failed"): "0+1x288 289+5x100",
        runs("failed", "b"): "0+1x288 289+5x100",
        QUEUED: "3x400",
    },
    [
        ("20h", "NearlineRunsFailMoreOften", None),
        ("26h", "NearlineRunsFailMoreOften", fired(
            "ticket", "33.33% of this hour's runs failed, twice the day before's share"
        )),
        ("26h", "NearlineNothingEnds", None),
        ("26h", "NearlineQueueOnlyGrows", None),
    ],
)  # fmt: skip
# one run more queued every 5 minutes, none ending
STUCK = case(
    {
        QUEUED: "0+1x40",
        WAITED: "0+300x40",
        runs("successful"): "5x40",
        runs("failed"): "0x40",
        'up{job="nearline",instance="a"}': "1x40",
    },
    [
        ("50m", "NearlineQueueOnlyGrows", None),
        ("2h", "NearlineQueueOnlyGrows", fired(
            "ticket", "the queue has grown for an hour; its oldest run has waited over 10 minutes"
        )),
        ("2h", "NearlineNothingEnds", fired(
            "page", "runs are queued, yet none has ended for an hour"
        )),
        ("2h", "NearlineRunsFailMoreOften", None),
        ("2h", "NearlineDown", None),
    ],
)  # fmt: skip


def write_tests(folder: Path, *cases: dict) -> None:
    tests = {"rule_files": ["nearline-alerts.yml"], "evaluation_interval": "5m", "tests": cases}
    (folder / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False))


def page_file(name: str) -> str:
    """The YAML block of the page that starts with the comment ``# NAME``."""
    (block,) = [
        b for b in blocks(PAGE) if b.language == "yaml" and b.code.startswith(f"# {name}\n")
    ]
    return block.code


def promtool(*args: str, folder: Path) -> str:
    tool = shutil.which("promtool")
    assert tool, "Debian's prometheus (promtool) is missing: scripts/system-packages installs it"
    done = subprocess.run(
        [tool, *args], cwd=folder, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name in ("prometheus.yml", "nearline-alerts.yml"):
        (tmp_path / name).write_text(page_file(name))
    return tmp_path


def test_the_configuration_and_the_rules_are_valid(files: Path) -> None:
    said = promtool("check", "config", "prometheus.yml", folder=files)
    assert "SUCCESS: 1 rule files found" in said
    said = promtool("check", "rules", "nearline-alerts.yml", folder=files)
    assert "SUCCESS: 8 rules found" in said


def test_each_alert_fires_when_it_should_and_only_then(files: Path) -> None:
    write_tests(files, FAILING_MORE, STUCK)
    assert "SUCCESS" in promtool("test", "rules", "tests.yml", folder=files)


def test_a_rule_that_does_not_fire_as_expected_fails_the_test(files: Path) -> None:
    """The check above can fail: the same series, told to expect the wrong severity."""
    wrong = copy.deepcopy(STUCK)
    wrong["alert_rule_test"][2]["exp_alerts"][0]["exp_labels"]["severity"] = "x"
    write_tests(files, wrong)
    tool = shutil.which("promtool")
    assert tool
    done = subprocess.run([tool, "test", "rules", "tests.yml"], cwd=files, capture_output=True)
    assert done.returncode == 1
    assert b"NearlineNothingEnds" in done.stdout + done.stderr
