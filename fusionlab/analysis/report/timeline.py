"""One measured iteration on a time axis, eager above each variant (readers.nsys_timeline
from each run's SQLite export): per run a CPU row (the NVTX ranges, each CUDA runtime
call as a tick, launches darker) and a GPU row (each kernel a box in its kernel class's
colour, the idle gaps between them shaded, the largest named with its length), all on
one axis of time since the iteration's NVTX range began, so that a reader sees where
each variant's time goes, as in Nsight Systems' timeline view.

draw(runs) draws [(label, iteration)] (workflow/scripts/timeline.py reads them and writes
the figure); each kernel's box is noted as marks (style.record: its start and duration in
us), the figure's data file."""
from __future__ import annotations

import numpy as np
from matplotlib.patches import Patch

from fusionlab.analysis.report import style
from fusionlab.analysis.report.figures.kernel_classes import COLOURS
from fusionlab.core import kernel_class

ROW = 3.6               # the height of one run's rows (GPU, CPU calls, NVTX ranges)
GAPS_NAMED = 3          # the largest idle gaps of a GPU row, written with their length
LAUNCH = ("cudaLaunchKernel", "cuLaunchKernel", "cudaGraphLaunch", "cuLaunchKernelEx", "cudaLaunchKernelExC")


def draw(runs: list[tuple[str, dict]], title: str = "One measured iteration"):
    """The timeline of each run (label, readers.nsys_timeline.iteration), one above the
    other on a shared axis (us since the iteration's range began)."""
    fig, ax = style.figure(1, w=11.0, h=1.3 + 1.2 * len(runs))
    ax = ax[0]
    ticks, labels, used = [], [], set()
    end = 0.0
    for i, (label, it) in enumerate(runs):
        base = (len(runs) - 1 - i) * ROW
        t0 = it["range"][0]
        k = it["kernels"]
        s, e = (k["start"].to_numpy() - t0) / 1e3, (k["end"].to_numpy() - t0) / 1e3
        classes = [kernel_class.kernel_class(n, f or "") for n, f in zip(k["name"], k["full_name"])]
        used |= set(classes)
        ax.broken_barh(list(zip(s, e - s)), (base, 0.8), facecolors=[COLOURS[c] for c in classes], lw=0)
        for (_, r), st, du, c in zip(k.iterrows(), s, e - s, classes):
            style.record(fig, variant=label, name=r["name"], mark="kernel", quantity="start_us",
                         value=float(st), text=c)
            style.record(fig, variant=label, name=r["name"], mark="kernel", quantity="duration_us",
                         value=float(du))
        # idle gaps on the GPU between consecutive kernels (the stream's order), the largest named
        busy_end = np.maximum.accumulate(e)
        wall = (it["range"][1] - t0) / 1e3
        gaps = [(busy_end[j], s[j + 1] - busy_end[j]) for j in range(len(s) - 1) if s[j + 1] > busy_end[j]]
        gaps = [(0.0, s[0])] * int(s[0] > 0) + gaps + [(busy_end[-1], wall - busy_end[-1])] * int(wall > busy_end[-1])
        ax.broken_barh(gaps, (base, 0.8), facecolors="none", edgecolors="0.6", hatch="////", lw=0.3)
        for g0, gl in sorted(gaps, key=lambda x: -x[1])[:GAPS_NAMED]:
            ax.text(g0 + gl / 2, base + 0.9, "idle " + style.noted(fig, "us", gl, variant=label, mark="idle gap",
                                                                  quantity="idle_us"),
                    ha="center", va="bottom", fontsize=5.5, color="0.35")
        # the CPU: NVTX ranges and runtime calls
        for depth, (_, r) in enumerate(it["nvtx"].sort_values("start").iterrows()):   # outer ranges first
            a, b = max(r["start"] - t0, 0) / 1e3, (r["end"] - t0) / 1e3
            y = base + 1.45 + 0.5 * depth
            ax.broken_barh([(a, b - a)], (y, 0.3), facecolors="#d9d9d9", edgecolors="0.5", lw=0.4)
            ax.text(a + 0.5, y + 0.15, f"NVTX {r['text']}" + (" (began before)" if r["start"] < t0 else ""),
                    fontsize=5.5, va="center", color="0.25")
        c = it["calls"]
        launch = c["name"].str.split("_v").str[0].isin(LAUNCH)
        for sel, colour in ((~launch, "0.65"), (launch, "k")):
            x = (c.loc[sel, "start"].to_numpy() - t0) / 1e3
            ax.vlines(x, base + 1.0, base + 1.35, color=colour, lw=0.6)
        busy = float(np.sum(e - s))   # the boxes drawn, summed: the audit adds them up again (marks.duration_us)
        ticks += [base + 0.4, base + 1.2]
        said = style.noted(fig, "us", busy, variant=label, mark="label", quantity="marks.duration_us", agg="sum")
        labels += [f"{label} GPU\nbusy {said} of {style.fmt_time(wall / 1e3)}",
                   f"{label} CPU: calls ({int(launch.sum())} launches)"]
        end = max(end, wall, float(e.max()))
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=6.5)
    ax.set_xlim(0, end * 1.02)
    ax.set_ylim(-0.3, ROW * len(runs))
    ax.set_xlabel("time since the iteration's NVTX range began (us)")
    handles = [Patch(color=COLOURS[c], label=c) for c in kernel_class.CLASSES if c in used]
    handles.append(Patch(facecolor="none", edgecolor="0.6", hatch="////", label="GPU idle"))
    ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(handles), frameon=False,
              fontsize=6.5)
    ax.set_title(title, loc="left", fontsize=9, fontweight="bold")
    return fig
