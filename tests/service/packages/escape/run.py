"""One hostile act per run; what it managed goes to report.json (a run that is stopped by a
limit never gets there)."""

import json
import os
import socket
import time
from pathlib import Path

job = json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())
attempt, target = job["parameters"]["attempt"], job["parameters"]["target"]
report = {"attempt": attempt}
if attempt == "socket":
    try:
        socket.create_connection(("127.0.0.1", job["parameters"]["port"]), timeout=2).close()
        report["connected"] = True
    except OSError as error:
        report["connected"] = False
        report["error"] = str(error)
elif attempt == "read":
    try:
        report["read"] = Path(target).read_bytes()[:64].hex()
    except OSError as error:
        report["read"] = None
        report["error"] = str(error)
elif attempt == "fork-bomb":
    children = 0
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
elif attempt == "memory":
    hog = []
    while True:
        hog.append(bytearray(64 * 1024**2))
        hog[-1][::4096] = b"x" * len(hog[-1][::4096])
elif attempt == "loop":
    while True:
        pass
(Path(job["outputs"]) / "report.json").write_text(json.dumps(report))
