"""reproduction.md and the figure of published against measured ratios."""
from __future__ import annotations

import os

from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.evaluate import Result, published_text


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def markdown(results: list[Result], hardware: str, device: str) -> str:
    """The table claim | source | published (hardware) | measured here | verdict | why."""
    counts = {v: sum(r.verdict == v for r in results) for v in V.VERDICTS}
    lines = [
        "# The source texts' claims, reproduced",
        "",
        f"Measured on: **{hardware}**. Ratios, counts, orderings and exponents are compared across "
        "hardware; absolute times are shown with their hardware and never judged across it. "
        "Measured ratios are paired speedups over eager (eager timed in the variant's own "
        "process) with their 95% CI (over repeats, else over the run's timing windows).",
        "",
        "Verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + ".",
        "",
    ]
    if device != "cuda":
        gpu = [r.claim["id"] for r in results if r.verdict == V.NOT_ON_DEVICE]
        lines += [f"This is a CPU run: {len(gpu)} claim(s) need a GPU ({', '.join(gpu)}): run "
                  "`snakemake --cores 16 reproduction --configfile config/reproduction.yaml` on a GPU "
                  "machine to judge them. Kernel counts, orderings, the memory-traffic model and the "
                  "scaling are judged here.", ""]
    lines += ["| claim | source | published (hardware) | measured here | verdict | why |",
              "|---|---|---|---|---|---|"]
    for r in results:
        c = r.claim
        measured = r.measured or "-"
        if r.absolute and r.absolute not in measured:
            measured += f"; {r.absolute}"
        if r.verdict not in (V.NOT_ON_DEVICE,) and r.measured:
            measured += f" ({hardware})"
        why = "; ".join([r.why] + r.notes) if r.why else "; ".join(r.notes)
        lines.append("| " + " | ".join(_cell(x) for x in (
            f"**{c['id']}**: {c['claim']}", c["source"], published_text(c), measured, f"**{r.verdict}**", why)) + " |")
    lines += ["", "How each verdict is reached (claims.yaml, `compare`): a ratio holds within the "
              "claim's tolerance factor of the published value (CI overlap), in direction only "
              "on the same side of 1x; a count holds when equal, in direction when the variant "
              "launches fewer; an ordering holds when no pair is swapped beyond the timing "
              "windows' spread, in direction when Kendall's tau > 0; a scaling holds when a "
              "line fits the times (R^2 at least the tolerance); docs/reproduction.md has the rest.", ""]
    return "\n".join(lines)


COLORS = {V.HOLDS: "tab:green", V.DIRECTION: "tab:orange", V.FAILS: "tab:red"}


def figure(results: list[Result], hardware: str, png: str, svg: str) -> int:
    """Published against measured ratio, one point per judged claim with a ratio, log-log, with
    the line of agreement; returns the number of points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [(r.claim["id"], r.verdict, *r.ratio) for r in results
           if r.ratio and r.ratio[0] and r.ratio[1] and r.verdict in COLORS]  # judged claims only
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    vals = [v for p in pts for v in (p[2], p[3])] or [1.0]
    lo, hi = min(vals + [0.5]) / 1.6, max(vals + [2.0]) * 1.6
    ax.plot([lo, hi], [lo, hi], color="0.4", lw=1, label="agreement")
    ax.fill_between([lo, hi], [lo / 1.5, hi / 1.5], [lo * 1.5, hi * 1.5], color="0.9", label="within 1.5x")
    ax.axhline(1, color="0.75", lw=0.8, ls=":")
    ax.axvline(1, color="0.75", lw=0.8, ls=":")
    seen = set()
    for cid, verdict, pub, mea, mlo, mhi in pts:
        yerr = ([[max(mea - mlo, 0.0)], [max(mhi - mea, 0.0)]]   # a CI beside its point: drawn to it
                if mlo is not None and mhi is not None else None)
        ax.errorbar([pub], [mea], yerr=yerr, fmt="o", ms=7, color=COLORS.get(verdict, "0.5"),
                    label=verdict if verdict not in seen else None, capsize=3)
        seen.add(verdict)
        ax.annotate(cid, (pub, mea), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("published ratio (the text's hardware)")
    ax.set_ylabel(f"measured ratio ({hardware})")
    ax.set_title("The source texts' claims: published against measured")
    if not pts:
        ax.text(0.5, 0.5, "no claim with a ratio measured on this device", ha="center", transform=ax.transAxes)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    for p in (png, svg):
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        fig.savefig(p, dpi=150 if p.endswith(".png") else None)
    plt.close(fig)
    return len(pts)
