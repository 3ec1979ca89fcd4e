"""The check of what an operator watches the service with: Prometheus (docs/operations.md),
whose ``promtool`` evaluates an alert rule of the kind the operations page ships over a
series it is given, as the suite's Prometheus evaluates the service's metrics."""

from __future__ import annotations

import shutil
from pathlib import Path

from nearline.doctor._base import run
from nearline.errors import CapabilityMissing

# a queue that only grows: the alert fires once it has grown for 5 minutes
_RULES = """\
groups:
  - name: doctor
    rules:
      - alert: QueueOnlyGrows
        expr: deriv(queue[5m]) > 0
        for: 5m
"""
_TEST = """\
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: queue
        values: 1+1x20
    alert_rule_test:
      - eval_time: 3m
        alertname: QueueOnlyGrows
        exp_alerts: []
      - eval_time: 15m
        alertname: QueueOnlyGrows
        exp_alerts: [{exp_labels: {}}]
"""


def prometheus(folder: Path) -> str:
    """promtool proves an alert rule silent at 3 minutes of growth and firing at 15; the
    server's binary answers with its version."""
    tools = {name: shutil.which(name) for name in ("promtool", "prometheus")}
    if missing := [name for name, path in tools.items() if path is None]:
        raise CapabilityMissing(f"Prometheus's {' and '.join(missing)} not on PATH")
    (folder / "rules.yml").write_text(_RULES)
    (folder / "test.yml").write_text(_TEST)
    run([tools["promtool"], "test", "rules", "test.yml"], folder=folder, what="promtool test rules")
    version = run([tools["prometheus"], "--version"], folder=folder, what="prometheus --version")
    number = version.split()[2] if len(version.split()) > 2 else version.strip()
    return f"Prometheus {number} (promtool evaluated an alert rule over a growing queue)"
