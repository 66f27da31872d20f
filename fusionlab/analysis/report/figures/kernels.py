"""Kernel figures: kernels per iteration per variant along the main swept axis, and the
duration of each kernel (tables/kernels.csv) at one configuration."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from fusionlab.analysis.report import style
from fusionlab.analysis.sweep import tables
from fusionlab.core import kernel_class
from fusionlab.analysis.report.slicing import by_model, by_setting, joined_fixed, main_axis, with_size_axes
from fusionlab.analysis.report.style import variant_colour, variant_order

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'kernels_per_iter',
        'scope': 'model',
        'category': '3. Kernels and fusion',
        'needs': 'any',
        'caption': ('Kernels per iteration of {model} per variant (medians over repeats), over the '
                    'configurations drawn: {kernels}.'),
        'shows': ('kernels launched per iteration, eager against each variant'),
    },
    {
        'name': 'kernel_durations',
        'scope': 'model',
        'category': '3. Kernels and fusion',
        'needs': 'any',
        'caption': ('Each kernel of {model} at its largest swept configuration: duration per call, calls per '
                    'iteration written beside it (medians over repeats), labelled with its kernel class and '
                    'its demangled name. Kernels per iteration at that configuration: {kernels}.'),
        'shows': ('the distribution of kernel durations: fusion makes fewer, longer kernels'),
    },
]


TOP = 8
SHARED_SPAN = 20      # kernel_durations' panels share a scale where their longest kernels lie within this factor
NAME_CHARS = 44       # a label line
NAME_LINES = 3
# a reduction's operator in a demangled ATen kernel name: ReduceOp<float, MaxOps<float>...> -> max
_REDUCE_OP = re.compile(r"(?:native::|<)(\w+?)(?:Ops<|_functor<)")
# a demangled C++ name's parts that explain nothing: return type, namespaces, the parameters
_VOID = re.compile(r"^(?:void|static|__global__)\s+")
_NAMESPACES = re.compile(r"\b(?:at::native::|at::cuda::|\(anonymous namespace\)::|cutlass::|cudnn::|"
                         r"fmha::|flash::|cub::\w+::|std::)")


def _strip_params(n: str) -> str:
    """n without its trailing parameter list '(float*, int)'."""
    if not n.endswith(")"):
        return n
    depth = 0
    for i in range(len(n) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(n[i], 0)
        if depth == 0:
            return n[:i] if i > 0 else n
    return n


def display_name(name, full_name=None) -> str:
    """A kernel's name as a reader needs it: the demangled full name with no return
    type, namespaces or parameter list; a generic wrapper (cutlass's Kernel2, a
    library's 'kernel') named by its first template argument; whole up to NAME_LINES
    lines of NAME_CHARS, else its start and end."""
    n = str(full_name) if isinstance(full_name, str) and full_name else str(name)
    n = _NAMESPACES.sub("", _strip_params(_VOID.sub("", n.strip())))
    m = re.match(r"^(\w*[Kk]ernel\d*)<\s*([\w:]+)", n)
    if m and len(m.group(2)) > 6:   # Kernel2<cutlass_75_tensorop_..._align1>: the argument says what it is
        n = m.group(2).split("::")[-1]
    n = re.sub(r"\s+", " ", n)
    lines = [""]
    for part in re.findall(r"[^_\s,<>(]+[_\s,<>(]*|[_\s,<>(]+", n):   # break after _ , < > ( or a space
        if lines[-1] and len(lines[-1]) + len(part) > NAME_CHARS:
            lines.append("")
        lines[-1] += part
    lines = [x.strip() for x in lines]
    if len(lines) > NAME_LINES:
        lines = lines[:NAME_LINES - 1] + ["..." + lines[-1][-(NAME_CHARS - 3):]]
    return "\n".join(lines)


def short_name(name) -> str:
    """A kernel's name in one short line: a Triton kernel's family (triton_poi_fused),
    other names' first NAME_CHARS characters."""
    n = str(name)
    m = re.match(r"(triton_[a-z]+_fused)_", n)
    if m:
        return m.group(1)
    return n if len(n) <= NAME_CHARS else n[:NAME_CHARS - 3] + "..."


def computes(row) -> str:
    """What a kernel computes: its kernel class (core.kernel_class, as the kernel_classes
    figure names it), and for an Inductor kernel the fused ops from the fusion map's ops
    column of tables/kernels.csv (a reduction's operator read from its full name where
    ops says only 'reduction'); '' where unknown."""
    full = row.get("full_name") if isinstance(row.get("full_name"), str) else ""
    cls = kernel_class.kernel_class(row.get("name"), full) if row.get("device") != "cpu" else ""
    ops = row.get("ops")
    ops = ops if isinstance(ops, str) and ops and str(row.get("name", "")).startswith("triton_") else ""
    if ops in ("", "reduction") and full:
        m = _REDUCE_OP.search(full)
        if m and cls == kernel_class.REDUCTION:
            ops = m.group(1).lower()
    if len(ops) > NAME_CHARS:
        ops = ops[:NAME_CHARS - 3] + "..."
    return ": ".join(filter(None, [cls, ops]))


def count(n, what) -> str:
    """'1 launch', '35 launches'."""
    plural = what + ("es" if what.endswith("h") else "s")
    return f"{n:g} {what if n == 1 else plural}"


def kernel_label(row) -> str:
    """What the kernel computes (its class), then its demangled name."""
    what = computes(row)
    name = display_name(row["name"], row.get("full_name"))
    return f"{what}\n{name}" if what else name


def _what(t) -> str:
    return "CPU operators" if set(t["runs"]["device"].dropna()) == {"cpu"} else "GPU kernels"


def kernels_per_iter(t, model):
    """Kernels per iteration (the speedups table's median), one bar per variant at each
    value of the main swept axis and each setting (mode and dtype: by_setting), the value
    written on each bar."""
    s = by_model(t["speedups"], model).dropna(subset=["kernels_per_iter"])
    if s.empty:
        raise style.NoData("no run counted its kernels")
    slices = by_setting(s)
    if len({axis for _, _, axis, _ in slices}) > 1:
        slices = [("", *main_axis(s))]
    axis, fixed = slices[0][2], joined_fixed([f for *_, f in slices])
    src = pd.concat([rows.assign(_setting=label) for label, rows, _, _ in slices])
    d = src.pivot_table(index=["_setting", axis], columns="variant", values="kernels_per_iter", sort=False)
    if d.empty:
        raise style.NoData("no run counted its kernels")
    d = d[variant_order(d.columns)]
    fig, (ax,) = style.figure(w=max(5.5, 1.5 + 0.5 * d.size), h=3.8)
    width = 0.8 / len(d.columns)
    for j, v in enumerate(d.columns):
        bars = ax.bar(np.arange(len(d)) + (j - (len(d.columns) - 1) / 2) * width, d[v], width,
                      color=variant_colour(v), label=v)
        labels = []
        for (setting, x), value in zip(d.index, d[v]):
            rows = src[(src["_setting"] == setting) & (src[axis] == x) & (src["variant"] == v)]
            keys = style.keys_of(rows.iloc[0]) if len(rows) == 1 else {"model": model, "variant": v}
            labels.append(style.noted(fig, "g", value, **keys, mark="bar", quantity="kernels_per_iter")
                          if value == value else "")
        ax.bar_label(bars, labels=labels, fontsize=6.5, padding=2)
    one = d.index.get_level_values(1).nunique() == 1 and len(slices) > 1
    ax.set_xticks(range(len(d)))
    ax.set_xticklabels([setting if one else "\n".join(filter(None, [setting, f"{x:g}"])) for setting, x in d.index])
    ax.set_xlabel(f"{'setting' if len(slices) > 1 else ''}{' at ' if one else ', ' if len(slices) > 1 else ''}"
                  f"{style.xlabel(axis)}{' ' + format(d.index[0][1], 'g') if one else ''}")
    ax.set_ylabel(f"{_what(t)} per iteration")
    ax.margins(y=0.15)
    style.legend_below(fig, ax.get_legend_handles_labels()[0], ncol=min(len(d.columns), 4))   # off the bars' labels
    style.title(fig, f"{_what(t)} per iteration{style.at(fixed)}", t, model)
    return fig


def ran(t: dict, model: str, variant: str, d: pd.DataFrame) -> bool:
    """Whether the sweep has runs of the variant in the setting (mode, dtype) of kernels d:
    an empty panel then lacks kernels, else the variant was not swept there."""
    r = by_model(t["runs"], model)
    r = r[r["variant"] == variant]
    for col in ("mode", "dtype"):
        if col in r and col in d and d[col].nunique() == 1:
            r = r[r[col] == d[col].iloc[0]]
    return not r.empty


def kernel_durations(t, model):
    """Each kernel's duration per call at the model's largest configuration of the main
    swept axis, medians over repeats (a kernel's time per iteration and calls per
    iteration each the median of its repeats, the duration per call their ratio): a panel
    per variant (a row of panels per setting, mode and dtype: by_setting), its TOP
    kernels by time per iteration (the most on top), each labelled with its kernel class
    and demangled name, the bar its duration per call, the calls and the time per
    iteration written beside it; the panel's title gives the record's kernel time and
    launches per iteration (tables/headline.csv) and the distinct kernels."""
    k = by_model(t.get("kernels", t["runs"].iloc[:0]), model)
    k = k[k["time_per_iter_us"].notna() & (k["calls_per_iter"] > 0)] if "time_per_iter_us" in k else k.iloc[:0]
    if k.empty:
        raise style.NoData("no kernels recorded")
    k = with_size_axes(tables.with_size(k), tables.with_size(t["runs"]))
    slices = by_setting(k)
    if len({axis for _, _, axis, _ in slices}) > 1:
        rows_, axis, fixed = main_axis(k)
        slices = [("", rows_, axis, fixed)]
    axis = slices[0][2]
    fixed = joined_fixed([f for *_, f in slices])
    slices = [(label, d[d[axis] == d[axis].max()]) for label, d, _, _ in slices]
    variants = variant_order(set().union(*[set(d["variant"]) for _, d in slices]))
    if not variants:
        raise style.NoData("no kernels recorded at the largest configuration")
    config = [c for c in ("model", "variant", "batch", "size", "mode", "dtype", "backend", "device") if c in k]
    h = t.get("headline")
    # each variant's row of panels as tall as its most kernels (bars of one height in every panel)
    rows_of = {v: max(1, max(min(TOP, d.loc[d["variant"] == v, "name"].nunique()) for _, d in slices))
               for v in variants}
    tops = {d[axis].max() for _, d in slices}
    # a row of panels per variant, a column per setting, on one duration scale where the
    # panels' longest kernels lie within SHARED_SPAN of each other
    heights = [1.3 + 0.45 * rows_of[v] for v in variants]
    fig, grid = style.grid_figure(len(variants), len(slices), figsize=(7.0 * len(slices), sum(heights)),
                                  height_ratios=heights)
    texts = {}
    longest = {}
    for panels, (setting, d) in zip(grid.T, slices):
        for ax, v in zip(panels, variants):
            every = d[d["variant"] == v]
            if every.empty:
                style.empty(ax, f"{v}: {'no kernels recorded' if ran(t, model, v, d) else 'not swept here'}")
                continue
            first = [c for c in ("full_name", "ops") if c in every]
            g = (every.groupby(config + ["name"], dropna=False)
                 .agg(time_per_iter_us=("time_per_iter_us", "median"), calls_per_iter=("calls_per_iter", "median"),
                      **{c: (c, "first") for c in first})
                 .reset_index().sort_values("time_per_iter_us", ascending=False))
            rest = g.iloc[TOP:]
            g = g.head(TOP)
            per_call = (g["time_per_iter_us"] / g["calls_per_iter"]).to_numpy()
            rows = rows_of[v]
            y = rows - 1 - np.arange(len(g))      # the longest on top, every panel's bars the same height
            bars = ax.barh(y, per_call, color=variant_colour(v), height=0.6)
            labels = []
            for (_, r), p in zip(g.iterrows(), per_call):
                keys = {**style.keys_of(r), "name": r["name"], "agg": "median"}
                text = style.noted(fig, "us", p, **keys, mark="bar", quantity="kernels.time_per_iter_us/calls_per_iter")
                style.noted(fig, "g", r["calls_per_iter"], **keys, mark="calls", quantity="kernels.calls_per_iter")
                if r["calls_per_iter"] != 1:
                    text += " x " + format(r["calls_per_iter"], "g") + " = " + style.noted(
                        fig, "us", r["time_per_iter_us"], **keys, mark="per iteration",
                        quantity="kernels.time_per_iter_us")
                labels.append(text)
            texts[ax] = ax.bar_label(bars, labels=labels, fontsize=6, padding=2)
            ax.set_yticks(y)
            ax.set_yticklabels([kernel_label(r) for _, r in g.iterrows()], fontsize=5.5)
            ax.set_ylim(-0.6, rows - 0.4)
            longest[ax] = float(per_call.max())
            ax.set_xlim(0, longest[ax] * 1.05)
            ax.set_xlabel("duration per call (us); beside: x calls = per iteration (medians over repeats)",
                          fontsize=7)
            more = (f"\n{len(rest)} more not shown: {style.fmt_time(rest['time_per_iter_us'].sum() / 1e3)}"
                    " per iteration") if len(rest) else ""
            at = f", {style.xlabel(axis)} {every[axis].max():g}" if len(tops) > 1 else ""
            keys = style.keys_of(every.iloc[0])
            own = _record(h, keys)
            total = (style.noted(fig, "ms", own["kernel_ms"], **keys, mark="title", quantity="kernel_ms")
                     if own is not None and own.get("kernel_ms") == own.get("kernel_ms")
                     else style.fmt_time(g["time_per_iter_us"].sum() / 1e3))
            launches = (style.noted(fig, "g", own["kernels_per_iter"], **keys, mark="title", quantity="kernels_per_iter")
                        if own is not None and own.get("kernels_per_iter") == own.get("kernels_per_iter")
                        else format(g["calls_per_iter"].sum(), "g"))
            distinct = style.noted(fig, "g", every["name"].nunique(), **keys, mark="title", quantity="kernels.name",
                                   agg="nunique")
            ax.set_title(f"{v}{' (' + setting + at + ')' if setting else ''}: {total} of kernels per iteration\n"
                         f"{distinct} distinct kernel{'s' if distinct != '1' else ''}, {launches} launch{'es' if launches != '1' else ''} per "
                         f"iteration{more}", fontsize=7, color=variant_colour(v))
    where = f"at {style.xlabel(axis)} {max(tops):g}" if len(tops) == 1 else f"at each setting's largest {style.xlabel(axis)}"
    style.title(fig, f"Duration of each {_what(t)[:-1]} {where}{style.at(fixed)}", t, model)
    shared = max(longest.values()) <= SHARED_SPAN * min(longest.values())
    if shared:
        for ax in grid[:-1].flat:   # the scale is shared: its label once, under the last row
            ax.set_xlabel("")
        drawn = list(texts)   # the panels with bars (an empty panel keeps its own, tickless)
        for ax in drawn[1:]:
            ax.sharex(drawn[0])
        drawn[0].set_xlim(0, max(longest.values()) * 1.05)
    style.fit_text_x(texts, shared=shared)
    return fig


def _record(h, keys: dict):
    """The headline row of the configuration keys name (None where there is none)."""
    if h is None or h.empty:
        return None
    sel = tables.with_size(h)
    for c, v in keys.items():
        if c in sel and v is not None and v == v:
            sel = sel[sel[c].astype(str) == str(v)] if c != "batch" else sel[sel[c] == v]
    return sel.iloc[0].to_dict() if len(sel) == 1 else None
