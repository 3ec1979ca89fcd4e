"""Two inputs in, two kinds of output out: pairs-N.json per granule, count.txt per run."""

import json
import os
from pathlib import Path

job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
out = Path(job["outputs"])
(reference,) = job["inputs"]["reference"]
for index, entry in enumerate(job["inputs"]["granules"]):
    pair = {
        "granule": entry["item"]["id"],
        "reference": reference["item"]["id"],
        "sizes": [Path(entry["path"]).stat().st_size, Path(reference["path"]).stat().st_size],
    }
    (out / f"pairs-{index}.json").write_text(json.dumps(pair))
(out / "count.txt").write_text(str(len(job["inputs"]["granules"])))
