"""The crossover (tables/crossover.csv): per swept axis, where each variant starts and
stops beating eager."""
from __future__ import annotations

from fusionlab.analysis.report import style
from fusionlab.analysis.report.style import variant_colour


def _span(start, stop) -> str:
    """'128-512' (starts, stops), '128+' (still beats eager at the largest value), 'never'."""
    if start != start:
        return "never"
    return f"{start:.0f}" + (f"-{stop:.0f}" if stop == stop else "+")


def crossover(t, model):
    """Per swept axis, a panel: for each model, variant (and the other axes' fixed values),
    the value where it starts to beat eager; the label gives where it stops."""
    c = t["crossover"]
    axes_swept = list(dict.fromkeys(c["axis"])) if "axis" in c else []
    n = max(1, len(axes_swept))
    width = max(5.5, 1.5 + 0.7 * max([(c["axis"] == a).sum() for a in axes_swept] or [1]))
    fig, axs = style.figure(n, w=width)
    if c.empty or not axes_swept:
        style.empty(axs[0], "no variant besides eager, or no axis with 2 or more values")
    for ax, axis in zip(axs, axes_swept):
        d = c[c["axis"] == axis]
        labels = [f"{m}\n{v}" + (f"\n{f}" if isinstance(f, str) and f else "")
                  for m, v, f in zip(d["model"], d["variant"], d["fixed"])]
        y = d["starts_at"]
        ax.bar(range(len(d)), y.fillna(0), color=[variant_colour(v) if b == b else "#dddddd"
                                                  for v, b in zip(d["variant"], y)])
        labels_at = d["spans"] if "spans" in d else [None] * len(d)
        for i, (a, b, sp) in enumerate(zip(y, d["stops_at"], labels_at)):
            text = sp if isinstance(sp, str) and sp else _span(a, b)
            ax.text(i, (a if a == a else 1), text, ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(d))); ax.set_xticklabels(labels, fontsize=6)
        style.log_axis(ax, "y", base=2)
        ax.set_ylabel(f"{axis} where the variant starts to beat eager")
    style.title(fig, "Crossover: where each variant last starts to beat eager (bar); label: every "
                "interval where it beats eager (start-stop, + = still at the largest value); from the paired "
                "speedups where every value was paired, else those across processes", t, model)
    return fig
