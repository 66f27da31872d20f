"""One experiment under `nsys profile`, profiled once more when nsys's importer failed on a
run that ended ok, and recorded without a profile when it failed again:

    python -m fusionlab.jobs.nsys_profile RUN_JSON PROFILE_LOG REPORT -- NSYS_COMMAND...

NSYS_COMMAND is `nsys profile ... -o REPORT.tmp python -m fusionlab.runner ...
--out RUN_JSON`; its output goes to PROFILE_LOG. The report it writes, REPORT.tmp.nsys-rep,
is renamed to REPORT. nsys's importer can fail on a trace ("Multiple different definitions
of the same VmTidToPidInfo", "An unknown error occurred"): 4 of 142 runs on one H100 with 6
processes in flight, within 25 s of each other. Such a run is profiled again once
(`profile_attempts`, `profile_retried_for` in RUN_JSON). A run that ended otherwise
(timeout, error, oom) is not: its trace is cut short, and its record is already known.

When no report comes: RUN_JSON gets `profile_error` ("nsys wrote no report: <nsys's
error>"), an `ok` run becomes `error` with that reason (a result without its profile is
not a measurement), any other status is kept, and REPORT is left as an empty file: the
marker the export, stats and metrics steps read as "no report"."""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys

from fusionlab.core import owner as folder_owner
from fusionlab.core.io import read_json, write_json_atomic

ATTEMPTS = 2
OWNER: folder_owner.Owner | None = None   # main's hold on the run folder (core.owner)


def _write(run_json: str, run: dict) -> None:
    """run at run_json, only while this process owns the run folder (when it holds it)."""
    if OWNER is None:
        write_json_atomic(run_json, run)
    else:
        OWNER.write_json(run_json, run)
RUN_KEYS = ("model", "variant", "batch", "size", "mode", "dtype", "repeat")


def nsys_error(log_text: str) -> str:
    """nsys's own error text from a profile log: its ErrorText, else the importer's
    status, else the log's last non-empty line."""
    found = re.findall(r'ErrorText\s*Value:\s*"([^"]*)"', log_text)
    if found:
        return found[-1]
    found = re.findall(r"Importer error status:\s*(.+)", log_text)
    if found:
        return f"importer error: {found[-1].strip()}"
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def runner_fields(command: list[str]) -> dict:
    """The run's identity (model, variant, batch, ...) from the runner's flags, for a
    record the runner did not write (it crashed under nsys)."""
    out = {}
    for flag, value in zip(command, command[1:]):
        key = flag[2:].replace("-", "_") if flag.startswith("--") else None
        if key in RUN_KEYS:
            out[key] = int(value) if value.isdigit() else value
    return out


def record_no_report(run_json: str, log_text: str, report: str, command=(), **extra) -> dict:
    """Write RUN_JSON's `profile_error` (and an ok run's `error` status; EXTRA fields) and
    the empty REPORT marker; returns the record."""
    run = read_json(run_json) or {**runner_fields(list(command)), "status": "error"}
    run.update(extra, profile_error=f"nsys wrote no report: {nsys_error(log_text)}")
    if run.get("status") == "ok" or not run.get("reason"):
        run.update(status="error", reason=run["profile_error"])
    _write(run_json, run)
    open(report, "w").close()
    return run


def profile(command: list[str], run_json: str, log: str, report: str,
            attempts: int = ATTEMPTS) -> dict:
    """Run COMMAND (output to LOG) until it leaves REPORT.tmp.nsys-rep, at most ATTEMPTS
    times and again only while the run's record says ok; rename the report to REPORT.
    Returns the run's record."""
    written = f"{report}.tmp.nsys-rep"
    retried_for = []
    for attempt in range(1, attempts + 1):
        start = os.path.getsize(log) if attempt > 1 else 0  # this attempt's output begins here
        with open(log, "w" if attempt == 1 else "a") as out:
            rc = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT)
            if rc:
                out.write(f"nsys exit status {rc}\n")
        if os.path.exists(written):
            os.replace(written, report)
            run = read_json(run_json) or {}
            if retried_for and run:
                run.update(profile_attempts=attempt, profile_retried_for=retried_for)
                _write(run_json, run)
            return run
        with open(log, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        run = read_json(run_json)
        if attempt == attempts or not run or run.get("status") != "ok":
            break
        retried_for.append(nsys_error(text))
        with contextlib.suppress(OSError):
            os.remove(f"{report}.tmp.qdstrm")  # the trace nsys could not import
        with open(log, "a") as out:
            out.write(f"\n[fusionlab] nsys wrote no report ({retried_for[-1]}): profiling "
                      f"the run again (attempt {attempt + 1} of {attempts})\n")
    extra = {"profile_attempts": attempt, "profile_retried_for": retried_for} if retried_for else {}
    return record_no_report(run_json, text, report, command, **extra)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 5 or args[3] != "--":
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    run_json, log, report, command = args[0], args[1], args[2], args[4:]
    global OWNER
    OWNER = folder_owner.hold(os.path.dirname(os.path.abspath(run_json)), "job")
    run = profile(command, run_json, log, report)
    if "profile_error" in run:
        with open(log, "a") as out:
            out.write(f"[fusionlab] {run['profile_error']} (run status: {run['status']})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
