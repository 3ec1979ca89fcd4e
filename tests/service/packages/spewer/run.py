"""Writes `bytes` bytes (a pattern that tells one MiB from the next) to big.bin."""

import json
import os
from pathlib import Path

job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
size = job["parameters"]["bytes"]
with open(Path(job["outputs"]) / "big.bin", "wb") as out:
    for start in range(0, size, 1 << 20):
        out.write(start.to_bytes(8, "little") * ((min(size - start, 1 << 20) + 7) // 8))
    out.truncate(size)
print("done", flush=True)
