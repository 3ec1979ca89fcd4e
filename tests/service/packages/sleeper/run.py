"""Sleeps for the `seconds` parameter, counting its starts in a file next to the outputs."""

import json
import os
import time
from pathlib import Path

job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
print("started", flush=True)
time.sleep(job["parameters"]["seconds"])
(Path(job["outputs"]) / "done.txt").write_text(job["inputs"]["granules"][0]["item"]["id"])
print("done", flush=True)
