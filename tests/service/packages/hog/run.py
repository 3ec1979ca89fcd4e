"""Touches `megabytes` MiB (every page written), holds them `seconds`, then says how much it
held and the oom_score_adj it and a child of its own were given."""

import json
import os
import subprocess
import time
from pathlib import Path

job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
megabytes, seconds = job["parameters"]["megabytes"], job["parameters"]["seconds"]
held = b"x" * (megabytes * 2**20)  # bytes of b"x": every page is written, so resident
child = subprocess.run(["cat", "/proc/self/oom_score_adj"], capture_output=True, text=True)
mine = Path("/proc/self/oom_score_adj").read_text().strip()
print(f"holding {len(held) // 2**20} MiB; oom_score_adj {mine}, child's {child.stdout.strip()}")
time.sleep(seconds)
(Path(job["outputs"]) / "held.txt").write_text(f"{len(held)}\n")
