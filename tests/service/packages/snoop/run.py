"""Writes seen.txt: the environment, job.json, and each file under the run's folder and its
inputs' folders, with its bytes (of a large one, the lines that could hold a credential);
and copies of the inputs, to be checked by SHA-256."""

import hashlib
import json
import os
import shutil
from pathlib import Path

LARGE = 1 << 16  # bytes: a larger file (numba's kernels, say) shows only its suspect lines
SUSPECT = (b"aws", b"secret", b"key", b"token", b"password")

job_file = Path(os.environ["NEARLINE_JOB"])
job = json.loads(job_file.read_text())
outputs = Path(job["outputs"])


def dump(say):
    """Everything the run can see, a line at a time."""
    for name, value in sorted(os.environ.items()):
        say(f"env {name}={value}")
    say(f"job.json {job_file.read_text()}")
    folders = {Path.cwd(), job_file.parent}
    for staged in job["inputs"]["granules"]:
        path = Path(staged["path"])
        folders.add(path.parent)
        shutil.copyfile(path, outputs / f"copy-{path.name}")
        say(f"input {path.name} {hashlib.sha256(path.read_bytes()).hexdigest()}")
    for folder in sorted(folders):
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or outputs in path.parents:
                continue
            data = path.read_bytes()
            if len(data) <= LARGE:
                say(f"file {path} {data!r}")
                continue
            lines = data.splitlines()
            suspect = [line for line in lines if any(s in line.lower() for s in SUSPECT)]
            say(f"file {path} ({len(data)} bytes; lines that could hold a credential: {suspect!r})")


with open(outputs / "seen.txt", "w") as seen:  # written as it goes: the run's memory stays small

    def say(line):
        seen.write(line + "\n")
        print(line[:2000], flush=True)

    dump(say)
