"""When `nsys profile` writes no report (its importer can fail on a trace, e.g. "Multiple
different definitions of the same VmTidToPidInfo" for a run stopped at its time limit),
the run's record is kept and says so, and the sweep goes on:

    python -m fusionlab.analysis.no_report RUN_JSON PROFILE_LOG REPORT

adds `profile_error` ("nsys wrote no report: <nsys's error>") to run.json, turns an `ok`
run into `error` with that reason (a result without its profile is not a measurement),
keeps any other status (timeout, error, ...), and leaves REPORT as an empty file: the
marker that the export, the stats and the metrics steps read as "no report" (an empty
file is never taken for a report)."""
from __future__ import annotations

import json
import re
import sys

from fusionlab.core.io import write_json_atomic


def nsys_error(log_text: str) -> str:
    """nsys's own error text from a profile log, else its last non-empty line."""
    found = re.findall(r'ErrorText\s*Value:\s*"([^"]*)"', log_text)
    if found:
        return found[-1]
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def record(run_json: str, log_path: str, report: str) -> dict:
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    with open(run_json) as f:
        run = json.load(f)
    run["profile_error"] = f"nsys wrote no report: {nsys_error(text)}"
    if run.get("status") == "ok":
        run.update(status="error", reason=run["profile_error"])
    write_json_atomic(run_json, run)
    open(report, "w").close()
    return run


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    run = record(*args)
    print(f"[fusionlab] {run['profile_error']} (run status: {run['status']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
