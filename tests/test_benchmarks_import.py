"""Every benchmark script imports as a module without running: a name one imports that
nearline no longer has (or a script named like a package another library imports) breaks
`make test`, not `make bench` hours later."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

# In a fresh interpreter (the scripts put benchmarks/ on sys.path, as a script's run does):
# each module imported by its own name, what it holds, and what went wrong.
IMPORT_ALL = """
import importlib, io, json, sys, contextlib
sys.path.insert(0, sys.argv[1])
found = {}
for name in sys.argv[2:]:
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            module = importlib.import_module(name)
        found[name] = {"main": callable(getattr(module, "main", None)),
                       "file": module.__file__, "printed": printed.getvalue()}
    except BaseException as error:
        found[name] = {"error": f"{type(error).__name__}: {error}"}
print(json.dumps(found))
"""


def test_every_benchmark_imports_and_runs_nothing() -> None:
    scripts = sorted(BENCHMARKS.glob("*.py"))
    names = [path.stem for path in scripts]
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, str(BENCHMARKS), *names],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout)
    assert {name: found[name].get("error") for name in names} == dict.fromkeys(names)
    # each is the script itself, not a package of the same name
    assert {name: found[name]["file"] for name in names} == {
        path.stem: str(path) for path in scripts
    }
    # importing one runs nothing: its main waits behind `if __name__ == "__main__"`
    assert {name: found[name]["printed"] for name in names} == dict.fromkeys(names, "")
    runnable = [name for name in names if not name.startswith("_")]
    assert {name: found[name]["main"] for name in runnable} == dict.fromkeys(runnable, True)
    for path in scripts:
        if not path.stem.startswith("_"):
            assert 'if __name__ == "__main__":' in path.read_text(), path.name


def test_make_bench_runs_the_gridded_benchmarks() -> None:
    bench = (ROOT / "Makefile").read_text().split("\nbench:", 1)[1].split("\n\n", 1)[0]
    for script in ("coverage_subset.py", "edr_series.py", "tiles.py"):
        assert f"benchmarks/{script} --update-docs" in bench, script
