"""One measured iteration on a time axis, eager above each variant (readers.nsys_timeline
from each run's SQLite export): per run a CPU row (the NVTX ranges, a row per range name,
later iterations' ranges beside the chosen one where the host runs ahead; each CUDA
runtime call as a tick, launches darker) and a GPU row (each of the iteration's kernels a
box in its kernel class's colour, other iterations' kernels grey, the gaps where no kernel
runs shaded as idle, the largest named with its length), all on one axis of time since
the iteration's NVTX range began, so that a reader sees where each variant's time goes,
as in Nsight Systems' timeline view.

draw(runs) draws [(label, iteration)] (workflow/scripts/timeline.py reads them and writes
the figure); each kernel's box is noted as marks (style.record: its start and duration in
us), the figure's data file."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from fusionlab.analysis.report import style
from fusionlab.core import kernel_class

ROW = 3.6               # the height of one run's rows (GPU, CPU calls, NVTX ranges)
GAPS_NAMED = 3          # the largest idle gaps of a GPU row, written with their length
LAUNCH = ("cudaLaunchKernel", "cuLaunchKernel", "cudaGraphLaunch", "cuLaunchKernelEx", "cudaLaunchKernelExC")


OTHERS = "#9e9e9e"       # another iteration's kernel on the GPU row


def _gaps(starts, ends, window: float) -> list[tuple[float, float]]:
    """(start, length) of each stretch of [0, window] that no interval [starts, ends] covers."""
    out, at = [], 0.0
    for a, b in sorted(zip(starts, ends)):
        if a > at:
            out.append((at, a - at))
        at = max(at, b)
    return out + ([(at, window - at)] if window > at else [])


def draw(runs: list[tuple[str, dict]], title: str = "One measured iteration"):
    """The timeline of each run (label, readers.nsys_timeline.iteration), one above the
    other on a shared axis (us since the iteration's range began)."""
    fig, ax = style.figure(1, w=11.0, h=1.3 + 1.2 * len(runs))
    ax = ax[0]
    ticks, labels, used = [], [], set()
    end, shown_others = 0.0, False
    for i, (label, it) in enumerate(runs):
        base = (len(runs) - 1 - i) * ROW
        t0 = it["range"][0]
        k = it["kernels"]
        s, e = (k["start"].to_numpy() - t0) / 1e3, (k["end"].to_numpy() - t0) / 1e3
        classes = [kernel_class.kernel_class(n, f or "") for n, f in zip(k["name"], k["full_name"])]
        used |= set(classes)
        ax.broken_barh(list(zip(s, e - s)), (base, 0.8), lw=0,
                       facecolors=[kernel_class.COLOURS[c] for c in classes])
        for (_, r), st, du, c in zip(k.iterrows(), s, e - s, classes):
            style.record(fig, variant=label, name=r["name"], mark="kernel", quantity="start_us",
                         value=float(st), text=c)
            style.record(fig, variant=label, name=r["name"], mark="kernel", quantity="duration_us",
                         value=float(du))
        # other iterations' kernels in the window (the GPU running behind the host), grey
        o = it.get("others")
        o = o if o is not None and len(o) else pd.DataFrame({"start": [], "end": []})
        so, eo = (o["start"].to_numpy(float) - t0) / 1e3, (o["end"].to_numpy(float) - t0) / 1e3
        if len(so):
            ax.broken_barh(list(zip(so, eo - so)), (base, 0.8), facecolors=OTHERS, lw=0)
            shown_others = True
        # the GPU idle: the window's gaps between any kernels (this iteration's or another's), the largest named
        wall = (it["range"][1] - t0) / 1e3
        gaps = _gaps(np.concatenate([s, so]), np.concatenate([e, eo]), max(wall, float(e.max())))
        ax.broken_barh(gaps, (base, 0.8), facecolors="none", edgecolors="0.6", hatch="////", lw=0.3)
        for g0, gl in sorted(gaps, key=lambda x: -x[1])[:GAPS_NAMED]:
            ax.text(g0 + gl / 2, base + 0.9, "idle " + style.noted(fig, "us", gl, variant=label, mark="idle gap",
                                                                  quantity="idle_us"),
                    ha="center", va="bottom", fontsize=5.5, color="0.35")
        # the CPU: NVTX ranges, a row per range name (outer first: the one begun earliest), the
        # later iterations' ranges on the chosen one's row (the host running ahead), and runtime calls
        window = max(wall, float(e.max()))
        names = list(it["nvtx"].sort_values("start")["text"].drop_duplicates())
        step = min(0.5, 1.9 / max(len(names), 1))
        for depth, name in enumerate(names):
            y = base + 1.45 + step * depth
            for j, (_, r) in enumerate(it["nvtx"][it["nvtx"]["text"] == name].sort_values("start").iterrows()):
                a, b = max(r["start"] - t0, 0) / 1e3, min((r["end"] - t0) / 1e3, window * 1.02)
                this = r["start"] == t0 and name == "iteration"
                ax.broken_barh([(a, b - a)], (y, 0.8 * step), facecolors="#bdbdbd" if this else "#e6e6e6",
                               edgecolors="0.5", lw=0.4)
                if this or r["start"] < t0 or (j == 0 and b - a > 0.12 * window):   # named where it is read
                    ax.text(a + 0.005 * window, y + 0.4 * step, f"NVTX {name}" + (" (this one)" if this else "")
                            + (" (began before)" if r["start"] < t0 else ""), fontsize=5.5, va="center",
                            color="0.25", clip_on=True)
        c = it["calls"]
        launch = c["name"].str.split("_v").str[0].isin(LAUNCH)
        for sel, colour in ((~launch, "0.65"), (launch, "k")):
            x = (c.loc[sel, "start"].to_numpy() - t0) / 1e3
            ax.vlines(x, base + 1.0, base + 1.35, color=colour, lw=0.6)
        busy = float(np.sum(e - s))   # the boxes drawn, summed: the audit adds them up again (marks.duration_us)
        ticks += [base + 0.4, base + 1.2]
        said = style.noted(fig, "us", busy, variant=label, mark="label", quantity="marks.duration_us", agg="sum")
        n = int(launch.sum())
        labels += [f"{label}\nGPU: its kernels {said}",
                   f"CPU: {n} launch{'es' if n != 1 else ''} in {style.fmt_time(wall / 1e3)}"]
        end = max(end, window)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=6.5)
    ax.set_xlim(0, end * 1.02)
    ax.set_ylim(-0.3, ROW * len(runs))
    ax.set_xlabel("time since the iteration's NVTX range began (us)")
    handles = [Patch(color=kernel_class.COLOURS[c], label=c) for c in kernel_class.CLASSES if c in used]
    if shown_others:
        handles.append(Patch(color=OTHERS, label="other iterations' kernels"))
    handles.append(Patch(facecolor="none", edgecolor="0.6", hatch="////", label="GPU idle"))
    ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(handles), frameon=False,
              fontsize=6.5)
    ax.set_title(title, loc="left", fontsize=9, fontweight="bold")
    return fig
