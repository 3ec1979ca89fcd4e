"""docs/operations.md's Prometheus configuration and alert rules, as Prometheus' own promtool
reads them: the configuration and the rules are valid, and each alert fires on series made
to fire it and stays silent on series that should not (``promtool test rules``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .markdown_blocks import ROOT, blocks

PAGE = ROOT / "docs" / "operations.md"

# every 5 minutes, two servers (a, b) report the same counts from one database: ten runs
# succeed; one fails for a day, then five (a third of the hour's runs, up from a twelfth)
FAILING_MORE = """\
  - interval: 5m
    input_series:
      - {series: 'nearline_runs{state="successful",station="done",instance="a"}', values: 0+10x400}
      - {series: 'nearline_runs{state="successful",station="done",instance="b"}', values: 0+10x400}
      - series: 'nearline_runs{state="failed",station="failed",instance="a"}'
        values: 0+1x288 289+5x100
      - series: 'nearline_runs{state="failed",station="failed",instance="b"}'
        values: 0+1x288 289+5x100
      - {series: 'nearline_station_queue_depth{station="queued",instance="a"}', values: 3x400}
    alert_rule_test:
      - {eval_time: 20h, alertname: NearlineRunsFailMoreOften, exp_alerts: []}
      - eval_time: 26h
        alertname: NearlineRunsFailMoreOften
        exp_alerts:
          - exp_labels: {severity: ticket}
            exp_annotations:
              summary: "33.33% of this hour's runs failed, twice the day before's share"
      - {eval_time: 26h, alertname: NearlineNothingEnds, exp_alerts: []}
      - {eval_time: 26h, alertname: NearlineQueueOnlyGrows, exp_alerts: []}
"""
# one run more queued every 5 minutes, none ending
STUCK = """\
  - interval: 5m
    input_series:
      - {series: 'nearline_station_queue_depth{station="queued",instance="a"}', values: 0+1x40}
      - series: 'nearline_station_oldest_wait_seconds{station="queued",instance="a"}'
        values: 0+300x40
      - {series: 'nearline_runs{state="successful",station="done",instance="a"}', values: 5x40}
      - {series: 'nearline_runs{state="failed",station="failed",instance="a"}', values: 0x40}
      - {series: 'up{job="nearline",instance="a"}', values: 1x40}
    alert_rule_test:
      - {eval_time: 50m, alertname: NearlineQueueOnlyGrows, exp_alerts: []}
      - eval_time: 2h
        alertname: NearlineQueueOnlyGrows
        exp_alerts:
          - exp_labels: {severity: ticket}
            exp_annotations:
              summary: "the queue has grown for an hour; its oldest run has waited over 10 minutes"
      - eval_time: 2h
        alertname: NearlineNothingEnds
        exp_alerts:
          - exp_labels: {severity: page}
            exp_annotations: {summary: "runs are queued, yet none has ended for an hour"}
      - {eval_time: 2h, alertname: NearlineRunsFailMoreOften, exp_alerts: []}
      - {eval_time: 2h, alertname: NearlineDown, exp_alerts: []}
"""


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
    tests = "rule_files: [nearline-alerts.yml]\nevaluation_interval: 1m\ntests:\n"
    (files / "tests.yml").write_text(tests + FAILING_MORE + STUCK)
    assert "SUCCESS" in promtool("test", "rules", "tests.yml", folder=files)


def test_a_rule_that_does_not_fire_as_expected_fails_the_test(files: Path) -> None:
    """The check above can fail: the same series, told to expect the wrong severity."""
    tests = "rule_files: [nearline-alerts.yml]\nevaluation_interval: 1m\ntests:\n"
    (files / "tests.yml").write_text(tests + STUCK.replace("{severity: page}", "{severity: x}"))
    tool = shutil.which("promtool")
    assert tool
    done = subprocess.run([tool, "test", "rules", "tests.yml"], cwd=files, capture_output=True)
    assert done.returncode == 1
    assert b"NearlineNothingEnds" in done.stdout + done.stderr
