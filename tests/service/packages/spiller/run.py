"""Writes `files` files of `megabytes` MiB each into its outputs, then says how many."""

import json
import os
from pathlib import Path

job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
outputs = Path(job["outputs"])
files, megabytes = job["parameters"]["files"], job["parameters"]["megabytes"]
for index in range(files):
    (outputs / f"part-{index:03d}.bin").write_bytes(b"x" * (megabytes * 2**20))
print(f"wrote {files} files of {megabytes} MiB")
