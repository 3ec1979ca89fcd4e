"""Reads job.json and writes summary.json: every input granule's item id and scaled size."""

import json
import os
from pathlib import Path

job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
scale = job["parameters"]["scale"]
rows = [
    {"item": entry["item"]["id"], "size": Path(entry["path"]).stat().st_size * scale}
    for entry in job["inputs"]["granules"]
]
out = Path(job["outputs"])
(out / "summary.json").write_text(json.dumps({"job": job["job"], "granules": rows}))
print(f"summarised {len(rows)} granules")
