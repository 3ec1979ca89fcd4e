"""Writes seen.txt: the environment, job.json, and each file under the run's folder and its
inputs' folders, with its bytes; and copies of the inputs, to be checked by SHA-256."""

import hashlib
import json
import os
import shutil
from pathlib import Path

job_file = Path(os.environ["NEARLINE_JOB"])
job = json.loads(job_file.read_text())
outputs = Path(job["outputs"])
lines = [f"env {name}={value}" for name, value in sorted(os.environ.items())]
lines.append(f"job.json {job_file.read_text()}")
folders = {Path.cwd(), job_file.parent}
for staged in job["inputs"]["granules"]:
    path = Path(staged["path"])
    folders.add(path.parent)
    shutil.copyfile(path, outputs / f"copy-{path.name}")
    lines.append(f"input {path.name} {hashlib.sha256(path.read_bytes()).hexdigest()}")
for folder in sorted(folders):
    for path in sorted(folder.rglob("*")):
        if path.is_file() and outputs not in path.parents:
            lines.append(f"file {path} {path.read_bytes()!r}")
(outputs / "seen.txt").write_text("\n".join(lines) + "\n")
print("\n".join(lines), flush=True)
