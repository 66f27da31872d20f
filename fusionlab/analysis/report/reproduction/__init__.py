"""The source texts' claims (claims.yaml) against a sweep's written tables and the
claims measured in their own configuration (reproduction/claims.json): verdicts,
reproduction.md and the figure of the claims by type.

    write(runs_csv, speedups_csv, costs_csv, peaks_json, runs_root, md, png, svg, claims_json=None)
"""
from __future__ import annotations

from fusionlab.analysis.report.reproduction.evaluate import CLAIMS, evaluate, load_claims, sha256
from fusionlab.analysis.report.reproduction.reading import Result
from fusionlab.analysis.report.reproduction.measure import Sweep
from fusionlab.analysis.report.reproduction.render import figure, markdown
from fusionlab.analysis.report.reproduction.verdict import VERDICTS


def write(runs: str, speedups: str, costs: str | None, peaks: str | None, runs_root: str | None,
          md: str, png: str, svg: str, claims_json: str | None = None, claims: str = CLAIMS) -> list[Result]:
    """Evaluate every claim on the sweep and write reproduction.md and the figure."""
    sweep = Sweep.from_files(runs, speedups, costs, peaks, runs_root, claims_json)
    results = evaluate(load_claims(claims), sweep)
    with open(md, "w") as f:
        f.write(markdown(results, sweep.hardware(), sweep.device, sha256(claims), sweep.claims_sha256))
    figure(results, sweep.hardware(), png, svg)
    return results


__all__ = ["CLAIMS", "Result", "Sweep", "VERDICTS", "evaluate", "figure", "load_claims", "markdown", "sha256", "write"]
