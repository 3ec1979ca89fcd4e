"""A deployed algorithm run on staged files, exactly as the orders room runs it: job.json and
job.txt written, the command run in the sandbox, the outputs listed (and refused if they are
links)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from nearline.algorithms import (
    Algorithm,
    Resources,
    RunResult,
    limits_for,
    manifest_from_dict,
    prepare_job,
    run_algorithm,
)
from nearline.algorithms._runner import command_line, job_text

from .conftest import adder_manifest


def algorithm_with(tmp_path: Path, program: str, **changes) -> Algorithm:
    package = tmp_path / "package"
    package.mkdir()
    (package / "main.py").write_text(program)
    manifest = manifest_from_dict(
        adder_manifest(command=["python", "main.py"], tests=None, **changes)
    )
    return Algorithm(
        manifest=manifest,
        owner="alice",
        public=False,
        package=package,
        python=Path(sys.executable),
        deployed=datetime.now(UTC),
    )


def staged(tmp_path: Path, *values: str) -> dict:
    folder = tmp_path / "archive"
    folder.mkdir(exist_ok=True)
    entries = []
    for index, value in enumerate(values):
        path = folder / f"n{index}.txt"
        path.write_text(value)
        entries.append({"path": str(path), "item": {"id": f"n{index}", "collection": "numbers"}})
    return {"numbers": entries}


# the start of every test program: its job, and where its outputs go
PRELUDE = (
    "import json, os, pathlib, sys\n"
    "job = json.loads(pathlib.Path(os.environ['NEARLINE_JOB']).read_text())\n"
    "out = pathlib.Path(job['outputs'])\n"
)


def run_program(tmp_path: Path, body: str, *values: str, **options) -> RunResult:
    """Run ``PRELUDE + body`` as a deployed algorithm on staged files holding ``values``."""
    return run_algorithm(
        algorithm_with(tmp_path, PRELUDE + body),
        job_id="j",
        inputs=options.pop("inputs", None) or staged(tmp_path, *(values or ("1",))),
        parameters=options.pop("parameters", {}),
        folder=tmp_path / "run",
        **options,
    )


def test_job_json_and_job_txt_say_the_same(tmp_path):
    inputs = {
        "granules": [
            {"path": "/archive/a b.nc", "item": {"id": "a"}},
            {"path": "/archive/odd\tname.nc", "item": {"id": "b"}},
        ]
    }
    path = prepare_job(
        tmp_path / "run",
        job_id="j1",
        inputs=inputs,
        parameters={"grid": "igh-8km", "bins": 16, "on": True},
    )
    job = json.loads(path.read_text())
    assert job == {
        "job": "j1",
        "inputs": inputs,
        "parameters": {"grid": "igh-8km", "bins": 16, "on": True},
        "outputs": str(tmp_path / "run" / "outputs"),
    }
    assert (tmp_path / "run" / "outputs").is_dir()
    assert (tmp_path / "run" / "tmp").is_dir()
    assert (
        (tmp_path / "run" / "job.txt").read_text()
        == job_text(job)
        == (
            "job\tj1\n"
            f"outputs\t{tmp_path / 'run' / 'outputs'}\n"
            "input\tgranules\t/archive/a b.nc\n"
            "input\tgranules\t/archive/odd\\tname.nc\n"
            "parameter\tgrid\tigh-8km\n"
            "parameter\tbins\t16\n"
            "parameter\ton\ttrue\n"
        )
    )
    (tmp_path / "run" / "outputs" / "old.txt").write_text("from an earlier attempt")
    prepare_job(tmp_path / "run", job_id="j1", inputs=inputs, parameters={})
    assert list((tmp_path / "run" / "outputs").iterdir()) == []  # a restarted run starts clean


def test_a_run_sees_its_job_and_leaves_outputs(tmp_path):
    program = (
        "text = pathlib.Path(os.environ['NEARLINE_JOB_TEXT']).read_text()\n"
        "paths = [e['path'] for e in job['inputs']['numbers']]\n"
        "total = sum(float(pathlib.Path(p).read_text()) for p in paths)\n"
        "(out / 'sub').mkdir()\n"
        "(out / 'sub' / 'total.txt').write_text(str(total))\n"
        "(out / 'env.txt').write_text(os.environ['NEARLINE_CPUS'] + ' ' + os.getcwd() + ' '"
        " + str(len(text.splitlines())))\n"
    )
    result = run_program(tmp_path, program, "1.5", "2", parameters={"scale": 1})
    assert result.outcome.ok, result.log.read_text()
    assert [p.relative_to(result.outputs_folder).as_posix() for p in result.output_files] == [
        "env.txt",
        "sub/total.txt",
    ]
    assert (result.outputs_folder / "sub" / "total.txt").read_text() == "3.5"
    cpus, cwd, lines = (result.outputs_folder / "env.txt").read_text().split()
    assert (cpus, cwd, lines) == ("1", str(tmp_path / "run"), "5")
    assert result.log == tmp_path / "run" / "run.log"
    assert result.outcome.usage.wall_seconds > 0


def test_a_failed_run_lists_no_outputs_and_logs_its_words(tmp_path):
    program = "print('giving up', file=sys.stderr)\nsys.exit(3)\n"
    result = run_program(tmp_path, program, log=tmp_path / "logs" / "run.log")
    assert (result.outcome.ok, result.outcome.exit_code) == (False, 3)
    assert result.output_files == ()
    assert "giving up" in (tmp_path / "logs" / "run.log").read_text()


def test_a_link_among_the_outputs_fails_the_run(tmp_path):
    result = run_program(tmp_path, "(out / 'secrets.txt').symlink_to('/etc/hostname')\n")
    assert not result.outcome.ok
    assert result.outcome.reason == "the run left a symbolic link among its outputs (secrets.txt)"
    assert result.output_files == ()


def test_staged_inputs_are_read_only_to_the_run(tmp_path):
    program = (
        "path = pathlib.Path(job['inputs']['numbers'][0]['path'])\n"
        "try:\n"
        "    path.write_text('tampered')\n"
        "except OSError as error:\n"
        "    sys.exit(f'refused: {error.strerror}')\n"
    )
    inputs = staged(tmp_path, "7")
    result = run_program(tmp_path, program, inputs=inputs)
    assert Path(inputs["numbers"][0]["path"]).read_text() == "7"
    assert result.outcome.exit_code == 1
    assert "refused: Read-only file system" in result.log.read_text()


def test_words_naming_package_files_become_their_paths(tmp_path):
    package = tmp_path / "package"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "smooth").write_text("")
    (package / "main.py").write_text("")
    python = Path(sys.executable)
    assert command_line(
        ["python", "main.py", "--width", "3", "data"], package=package, python=python
    ) == [str(python), str(package / "main.py"), "--width", "3", "data"]
    assert command_line(["bin/smooth", "-v"], package=package, python=python) == [
        str(package / "bin" / "smooth"),
        "-v",
    ]
    assert command_line(["bash", "../../etc/passwd"], package=package, python=python) == [
        "bash",
        "../../etc/passwd",
    ]


def test_limits_follow_the_manifests_resources():
    limits = limits_for(Resources(cpus=2, memory=3 * 1024**3, disk=4 * 1024**3, timeout=60))
    assert (limits.cpus, limits.memory, limits.wall_seconds, limits.disk) == (
        2,
        3 * 1024**3,
        60,
        4 * 1024**3,
    )
    assert limits.largest_file == 4 * 1024**3  # no one file holds more than the whole disk


def test_the_run_environment_holds_nothing_of_the_services(tmp_path, monkeypatch):
    monkeypatch.setenv("NEARLINE_SECRET_TOKEN", "s3cret")
    program = "(out / 'env.json').write_text(json.dumps(dict(os.environ)))\n"
    result = run_program(tmp_path, program)
    env = json.loads((result.outputs_folder / "env.json").read_text())
    assert "NEARLINE_SECRET_TOKEN" not in env
    assert env["NEARLINE_JOB"] == str(tmp_path / "run" / "job.json")
    assert env["HOME"] == str(tmp_path / "run")
