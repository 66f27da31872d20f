"""A run whose untraced process did not end `ok` (timeout, error, oom, incorrect,
unsupported) is not started again under nsys: its result is already known, it has no
measured range to trace, and a hang (TorchScript's fuser on pointwise_heavy) would hold
the GPU for its whole time limit a second time.

    python -m fusionlab.jobs.not_profiled TIMING_JSON RUN_JSON REPORT

When TIMING_JSON's status is not ok: writes RUN_JSON (the untraced record, its status and
reason kept, with `profile_skipped` saying why there is no profile) and REPORT as an empty
file (the "no report" marker the export, stats and metrics steps read), and exits 0.
Otherwise (ok, or no readable record) it writes nothing and exits 1: profile the run."""
from __future__ import annotations

import sys

from fusionlab.core.io import read_json, write_json_atomic

PROFILE_IT = 1


def untraced_failure(timing_json: str) -> dict | None:
    """The untraced record when its run did not end ok, else None (ok, or unreadable:
    then the nsys process runs and records for itself)."""
    rec = read_json(timing_json)
    return None if rec is None or rec.get("status") in (None, "ok") else rec


def record(timing_json: str, run_json: str, report: str) -> dict | None:
    """Write RUN_JSON and the empty REPORT for a failed untraced run; None (and nothing
    written) when the run is to be profiled."""
    rec = untraced_failure(timing_json)
    if rec is None:
        return None
    rec = {**rec, "profile_skipped": f"not run under nsys: its untraced process ended "
                                     f"{rec['status']} (timing.json)"}
    write_json_atomic(run_json, rec)
    open(report, "w").close()
    return rec


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    rec = record(*args)
    if rec is None:
        return PROFILE_IT
    print(f"[fusionlab] {rec['profile_skipped']}: {rec.get('reason')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
