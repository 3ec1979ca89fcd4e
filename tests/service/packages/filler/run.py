"""Writes `bytes` bytes to filling.bin."""

import json
import os
from pathlib import Path

job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
(Path(job["outputs"]) / "filling.bin").write_bytes(b"x" * job["parameters"]["bytes"])
