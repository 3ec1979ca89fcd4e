"""counts-histogram: one AVHRR channel's raw counts, histogrammed per granule.

Follows nearline's runtime contract: NEARLINE_JOB names job.json, which lists the staged
granules, the parameters and the folder whose files become the outputs.
"""

import csv
import json
import os
from pathlib import Path

import netCDF4
import numpy as np


def main() -> None:
    job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
    channel = job["parameters"]["channel"]
    bins = job["parameters"]["bins"]
    granules = job["inputs"]["granules"]
    outputs = Path(job["outputs"])
    edges = np.linspace(0, 1024, bins + 1)
    histograms = np.zeros((len(granules), bins), np.int64)
    rows = []
    for index, granule in enumerate(granules):
        with netCDF4.Dataset(granule["path"]) as dataset:
            names = [str(name) for name in dataset["channel"][:]]
            counts = np.asarray(dataset["counts"][names.index(channel)], np.int64)
        histograms[index] = np.histogram(counts, edges)[0]
        name = granule["item"].get("id") or Path(granule["path"]).name
        rows.append([name, counts.shape[0], f"{counts.mean():.3f}"])

    with netCDF4.Dataset(outputs / "histogram.nc", "w") as out:
        out.setncatts({"title": f"AVHRR channel {channel} count histograms"})
        out.createDimension("granule", len(granules))
        out.createDimension("bin", bins)
        out.createDimension("edge", bins + 1)
        out.createVariable("edges", "f8", ("edge",))[:] = edges
        out.createVariable("histogram", "i8", ("granule", "bin"))[:] = histograms
        names = out.createVariable("granule", str, ("granule",))
        for index, row in enumerate(rows):
            names[index] = row[0]
    with open(outputs / "summary.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["granule", "lines", f"mean_count_ch{channel}"])
        writer.writerows(rows)


if __name__ == "__main__":
    main()
