"""reproduction.md and the figure of the claims, one panel per claim type."""
from __future__ import annotations

import os

from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.evaluate import Result, published_text


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def markdown(results: list[Result], hardware: str, device: str, claims_sha256: str | None = None,
             measured_sha256: str | None = None) -> str:
    """The table claim | source | published (hardware) | measured here | verdict | why, and
    the sha256 of the claims file whose tolerances judged it."""
    counts = {v: sum(r.verdict == v for r in results) for v in V.VERDICTS}
    lines = [
        "# The source texts' claims, reproduced",
        "",
        f"Measured on: **{hardware}**. Ratios, counts, orderings and exponents are compared across "
        "hardware; absolute times are shown with their hardware and never judged across it. "
        "Measured ratios are paired speedups over eager (eager timed in the variant's own "
        "process), their geometric mean over repeats (each a process of its own) with its 95% "
        "t-interval over them (one process gives none and says so); where either side is "
        "host-bound (exposed host time over half the wall time) the kernel-time speedup is "
        "judged and the wall-time one shown beside it.",
        "",
        "Verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + ".",
        "",
    ]
    if claims_sha256:
        lines += [f"Tolerances: the claims file, sha256 `{claims_sha256}`"
                  + ("" if not measured_sha256 or measured_sha256 == claims_sha256 else
                     f"; **the claims' own processes read another version of it** (sha256 `{measured_sha256}`): "
                     "its tolerances or configurations changed after they ran") + ".", ""]
    if device != "cuda":
        gpu = [r.claim["id"] for r in results if r.verdict == V.NOT_ON_DEVICE]
        here = [r.claim["id"] for r in results if r.verdict != V.NOT_ON_DEVICE]
        lines += [f"This is a CPU run: {len(gpu)} claim(s) need a GPU and are not measurable on this "
                  f"device ({', '.join(gpu)}); nothing is shown for them. Run `snakemake reproduction "
                  "--configfile config/reproduction.yaml --cores all` on a GPU machine "
                  "to judge them. Read on this CPU: " + (", ".join(here) or "none") + ".", ""]
    lines += ["| claim | source | published (hardware) | measured here | verdict | why |",
              "|---|---|---|---|---|---|"]
    for r in results:
        c = r.claim
        measured = r.measured or "-"
        if r.absolute and r.absolute not in measured:
            measured += f"; {r.absolute}"
        if r.verdict != V.NOT_ON_DEVICE and r.measured:
            measured += f" ({hardware})"
        why = "; ".join([r.why] + r.notes) if r.why else "; ".join(r.notes)
        lines.append("| " + " | ".join(_cell(x) for x in (
            f"**{c['id']}**: {c['claim']}", c["source"], published_text(c), measured, f"**{r.verdict}**", why)) + " |")
    lines += ["", "How a verdict is reached (docs/reproduction.md): **holds** when the measured "
              "interval lies within the claim's band; **does not hold** when it lies entirely outside; "
              "**inconclusive** when it straddles an edge; **not tested** when what was measured is "
              "another configuration, mode or quantity than the claim's, or too noisy to judge (its "
              "value is shown, not judged); **not measurable on this device** for a GPU claim on a CPU "
              "run. A claim of several parts holds only if every part does; a claim the text states "
              "without a size is swept over a documented range and says where it holds.", ""]
    return "\n".join(lines)


COLORS = {V.HOLDS: "tab:green", V.FAILS: "tab:red", V.INCONCLUSIVE: "tab:orange", V.NOT_TESTED: "0.55",
          V.NOT_ON_DEVICE: "tab:purple"}
PANELS = {"ratio": "ratio", "ratios": "ratio", "threshold": "ratio", "launch": "ratio", "traffic": "ratio",
          "count": "count", "matches": "count", "ordering": "ordering", "scaling": "scaling"}


def figure(results: list[Result], hardware: str, png: str, svg: str) -> int:
    """One panel per claim type (ratios against their tolerance band on a log axis; kernel
    counts; orderings; scaling fits with their data) and the list of every claim, each
    coloured by its verdict; returns the number of claims drawn with a measured value."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(15, 9.5))
    gs = fig.add_gridspec(2, 3, width_ratios=[1.5, 1, 1], hspace=0.42, wspace=0.38)
    ax_r, ax_s, ax_v = fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1]), fig.add_subplot(gs[:, 2])
    ax_c, ax_o = fig.add_subplot(gs[1, 0]), fig.add_subplot(gs[1, 1])
    drawn = _ratios(ax_r, results) + _scaling(ax_s, results) + _counts(ax_c, results) + _orderings(ax_o, results)
    _verdicts(ax_v, results)
    fig.suptitle(f"The source texts' claims on {hardware}: colour = verdict", fontsize=12)
    for p in (png, svg):
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        fig.savefig(p, dpi=130 if p.endswith(".png") else None, bbox_inches="tight")
    plt.close(fig)
    return drawn


def _of(results, panel):
    return [r for r in results if PANELS[r.claim["compare"]] == panel]


def _empty(ax, results, panel):
    """The claims of this panel that have nothing to draw, named with their verdict."""
    left = [r for r in _of(results, panel) if not r.plot]
    for i, r in enumerate(left):
        ax.text(0.02, 0.04 + 0.07 * i, f"{r.claim['id']}: {r.verdict}", transform=ax.transAxes, fontsize=8,
                color=COLORS[r.verdict])
    return len(_of(results, panel)) - len(left)


def _ratios(ax, results) -> int:
    """Each ratio (a claim, or a part of one) against the band where it holds, on a log
    axis; the claims of this type with nothing measured as rows of their own."""
    rows = [row for r in _of(results, "ratio") if r.plot for row in r.plot["rows"]]
    for i, (label, pub, band, m, lo, hi, verdict) in enumerate(rows):
        hi_edge = min(band[1], 1e3)   # an open band ("at least") drawn to the axis' end
        ax.barh(-i, hi_edge - band[0], left=band[0], height=0.6, color="0.88", edgecolor="0.7")
        if pub:
            ax.plot([pub], [-i], marker="|", ms=14, color="0.3")
        err = [[m - lo], [hi - m]] if lo is not None and hi is not None else None
        ax.errorbar([m], [-i], xerr=err, fmt="o", color=COLORS[verdict], capsize=3, ms=7)
        ax.text(1.02, -i, f"{m:.3g}x", transform=ax.get_yaxis_transform(), va="center", fontsize=7)
    left = [r for r in _of(results, "ratio") if not (r.plot and r.plot["rows"])]
    labels = [row[0] for row in rows] + [f"{r.claim['id']}: {r.verdict}" for r in left]
    for j, r in enumerate(left):
        ax.text(0.12, -len(rows) - j, "nothing measured", va="center", fontsize=7, color=COLORS[r.verdict])
    ax.set_xscale("log")
    vals = [v for row in rows for v in (row[3], row[4], row[5]) if v]
    ax.set_xlim(min([0.1] + [v / 2 for v in vals]), max([40] + [v * 2 for v in vals]))
    ax.set_ylim(-len(labels) + 0.4, 0.6)
    ax.set_yticks([-i for i in range(len(labels))], labels, fontsize=7)
    for t, r in zip(ax.get_yticklabels()[len(rows):], left):
        t.set_color(COLORS[r.verdict])
    ax.axvline(1, color="0.6", lw=0.8, ls=":")
    ax.set_xlabel("measured ratio (grey: where it holds; |: published)")
    ax.set_title("ratios against their tolerance band", fontsize=10)
    return len(_of(results, "ratio")) - len(left)


def _scaling(ax, results) -> int:
    """Time against the varied axis, both normalised to the first value (log-log), with
    the power the text states (dotted) and the slope fitted over every point."""
    for r, mk in zip([r for r in _of(results, "scaling") if r.plot], "os^v"):
        p = r.plot
        x, y, k = p["x"], p["y"], p["slope"]
        xn = [v / x[0] for v in x]
        ax.plot(xn, [t / y[0] for t in y], mk, color=COLORS[r.verdict], ms=7,
                label=f"{r.claim['id']} ({p['axis']}; slope {k:.2f}, stated {p['exponent']:g})")
        ax.plot(xn, [v ** k for v in xn], "-", color=COLORS[r.verdict], lw=1)
        ax.plot(xn, [v ** p["exponent"] for v in xn], ":", color="0.5", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("axis value / first value")
    ax.set_ylabel("time / time at the first value")
    ax.set_title("scaling: data, fitted slope (line), stated power (dotted)", fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left")
    return _empty(ax, results, "scaling")


def _counts(ax, results) -> int:
    """Kernels per iteration, published (hatched) and measured, per claim and variant."""
    x, ticks = 0, []
    for r in [r for r in _of(results, "count") if r.plot and r.plot.get("type") == "count"]:
        for v, p in r.plot["published"].items():
            m = r.plot["measured"].get(v)
            ax.bar(x - 0.2, p, 0.4, color="white", edgecolor="0.3", hatch="//")
            if m is not None:
                ax.bar(x + 0.2, m, 0.4, color=COLORS[r.verdict])
                ax.text(x + 0.2, m, f"{m:g}", ha="center", va="bottom", fontsize=8)
            ticks.append((x, f"{r.claim['id']}\n{v}"))
            x += 1
    ax.set_xticks([t[0] for t in ticks], [t[1] for t in ticks], fontsize=7)
    ax.set_ylabel("kernels per iteration")
    ax.set_title("counts: published (hatched) and measured", fontsize=10)
    return _empty(ax, results, "count")


def _orderings(ax, results) -> int:
    """Each implementation's measured time against its published one (log-log): the same
    order is a monotone rise."""
    for r in [r for r in _of(results, "ordering") if r.plot]:
        pub, ms = r.plot["published"], r.plot["measured"]
        ks = sorted((k for k in pub if k in ms), key=pub.get)
        ax.plot([pub[k] for k in ks], [ms[k] for k in ks], "o-", color=COLORS[r.verdict], label=r.claim["id"])
        for i, k in enumerate(ks):
            ax.annotate(k, (pub[k], ms[k]), textcoords="offset points", xytext=(5, -11 if i % 2 else 5), fontsize=7)
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    ax.set_xscale("log")
    ax.set_yscale("log")
    for a in (ax.xaxis, ax.yaxis):
        a.set_major_locator(LogLocator(subs=(1, 2, 5)))
        a.set_major_formatter(ScalarFormatter())
        a.set_minor_formatter(NullFormatter())
    ax.set_xlabel("published time (ms, the text's hardware)")
    ax.set_ylabel("measured time (ms)")
    ax.set_title("orderings: fastest to slowest", fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left")
    return _empty(ax, results, "ordering")


def _verdicts(ax, results):
    """Every claim, coloured by its verdict, with the four verdicts' counts."""
    ax.axis("off")
    n = len(results)
    for i, r in enumerate(results):
        y = 1 - (i + 1) / (n + 6)
        ax.plot([0.02], [y], "s", ms=10, color=COLORS[r.verdict], transform=ax.transAxes, clip_on=False)
        ax.text(0.08, y, f"{r.claim['id']}\n{r.verdict}", transform=ax.transAxes, va="center", fontsize=8)
    counts = ", ".join(f"{sum(r.verdict == v for r in results)} {v}" for v in V.VERDICTS)
    ax.text(0.0, 1 - (n + 2) / (n + 6), "verdicts: " + counts.replace(", ", "\n"), transform=ax.transAxes,
            va="top", fontsize=8)
    ax.set_title("every claim", fontsize=10)
