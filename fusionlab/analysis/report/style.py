"""The look shared by every figure: one fixed colour per variant (eager first, black),
one-line titles with the setup (backend, device, dtype, mode) in a footer, values written
on bars, log axes labelled with plain numbers (0.5, 1, 2, 5; never 5x10^-1, and never a
single tick), text kept as text in SVG (svg.fonttype 'none').

A figure function raises NoData where it has nothing to draw; report.plots then writes
a small marker in place of the figure.

variant_colour(): one colour per variant, the same in every figure of every sweep
(VARIANT_COLOURS: eager black, each variant of the catalog its own colour, none of them
a colour of the time split's parts, figures.headline.PART_COLOURS); a variant outside
the table gets a colour hashed from its name. use_variants (load_tables sets it from
runs.csv) orders a sweep's variants."""
from __future__ import annotations

import re
import textwrap
import zlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from fusionlab.analysis.report.audit_figures import FORMATS  # noqa: E402
from fusionlab.analysis.report import slicing  # noqa: E402
from fusionlab.analysis.report.text import fmt_time  # noqa: E402,F401  (one way to write a time)

plt.rcParams.update({"svg.fonttype": "none", "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8,
                     "xtick.labelsize": 7, "ytick.labelsize": 7, "legend.fontsize": 7,
                     "axes.spines.top": False, "axes.spines.right": False})


class NoData(Exception):
    """A figure (or one model's figure) with nothing to draw; the message says why."""

# tab10, then the dark tab20b/tab20c shades: no pale colour (eager is black)
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
           "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#9c9ede"]
EAGER_COLOUR = "#000000"
# one colour per variant of the catalog, in every figure and sweep: no blue, orange, green
# or grey (the colours of kernel time, exposed host time, kernel wait and other idle)
VARIANT_COLOURS = {
    "eager": EAGER_COLOUR, "compile": "#7b3294", "compile_reduce_overhead": "#00868b",
    "compile_max_autotune": "#c51b7d", "compile_max_autotune_no_cudagraphs": "#8c510a",
    "compile_dynamic": "#b8860b", "cuda_graph": "#313695", "triton_kernel": "#a50026", "triton_seed": "#67001f",
    "cuda_kernel": "#6b8e23", "cuda_seed": "#bf812d", "jit_script": "#542788", "aten_op": "#35978f",
    "fx_add_relu": "#f781bf", "nn_linear": "#9970ab", "conv_bn_fold": "#de77ae", "cudnn_lstm": "#2c7fb8",
}
MODEL_MARKERS = "osD^vP*XhpH<>d8"


_VARIANTS: list = []   # the sweep's variant names but eager, sorted (use_variants)


def use_variants(names) -> None:
    """Colour and order variants by their place among `names` (a sweep's variants)."""
    _VARIANTS[:] = sorted({str(v) for v in names if isinstance(v, str) and v != "eager"})


def variant_colour(variant: str) -> str:
    """The variant's colour (VARIANT_COLOURS; one hashed from its name outside it)."""
    if variant in VARIANT_COLOURS:
        return VARIANT_COLOURS[variant]
    return PALETTE[zlib.crc32(str(variant).encode()) % len(PALETTE)]


def variant_order(variants) -> list[str]:
    """Variants in the sweep's order (eager first, use_variants), others after, sorted."""
    known = ["eager"] + _VARIANTS
    present = set(variants)
    return [v for v in known if v in present] + sorted(present - set(known))


def setup_label(df: pd.DataFrame) -> str:
    """'backend=nsys, device=cuda, ..., mode dtype=inference bfloat16/train amp_bfloat16':
    the values of the setup columns in df, mode and dtype as the pairs that ran."""
    parts = []
    for col in ("backend", "device", "gpu"):
        if col in df and df[col].notna().any():
            vals = sorted(set(df[col].dropna().astype(str)))
            parts.append(f"{col}={'/'.join(vals)}")
    both = [c for c in ("mode", "dtype") if c in df and df[c].notna().any()]
    if len(both) == 2:   # the settings as they ran together: a dtype belongs to its mode
        pairs = sorted({f"{m} {d}" for m, d in df[both].dropna().astype(str).itertuples(index=False)})
        parts.append(f"mode dtype={'/'.join(pairs)}")
    else:
        parts += [f"{c}={'/'.join(sorted(set(df[c].dropna().astype(str))))}" for c in both]
    return ", ".join(parts)


def figure(n: int = 1, w: float = 5.5, h: float = 4.2):
    """A figure of n panels side by side, each w x h inches: (figure, axes)."""
    fig, axes = plt.subplots(1, n, figsize=(w * n, h), squeeze=False, layout="constrained")
    return fig, axes[0]


def grid_figure(rows: int, cols: int, figsize: tuple[float, float], height_ratios=None):
    """A figure of rows x cols panels (rows of these relative heights): (figure, 2-d array of axes)."""
    return plt.subplots(rows, cols, squeeze=False, layout="constrained", figsize=figsize,
                        gridspec_kw={"height_ratios": height_ratios} if height_ratios else None)


def empty(ax, text):
    """A panel with no data: text in its centre, no ticks."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True)
    ax.set_xticks([]); ax.set_yticks([])


FOOTER_IN = 0.24   # inches kept free at the bottom of a figure for the footer


def _keep_bottom(fig, part: str, inches: float) -> None:
    """Room kept free below the panels (footer, legend below): the layout is confined
    above the sum of the parts."""
    parts = fig.__dict__.setdefault("_bottom_strip", {})
    parts[part] = inches
    _confine(fig)


def keep_right(fig, inches: float) -> None:
    """Room kept free right of the panels (a column of labels written beside them)."""
    fig.__dict__["_right_strip"] = inches
    _confine(fig)


def _confine(fig) -> None:
    """The layout confined above the bottom strip and left of the right strip."""
    engine = fig.get_layout_engine()
    if engine is not None and hasattr(engine, "set"):
        h = sum(fig.__dict__.get("_bottom_strip", {}).values()) / fig.get_figheight()
        w = fig.__dict__.get("_right_strip", 0.0) / fig.get_figwidth()
        engine.set(rect=(0, h, 1 - w, 1 - h))


def title(fig, what, t, model=None):
    """A title of at most two lines at the figure's width, the model's size axes after
    its name (what a slice leaves out stays in it) and the setup of t's runs as a footer, in a strip of its own at the bottom
    (below any legend_below)."""
    chars = int(fig.get_figwidth() * 72 / (9.5 * 0.6))
    sizes = slicing.size_label(t["runs"], model) if "runs" in t else ""   # the model's size axes: seq=512
    what = _unrepeated(what, sizes)
    whole = f"{model + (f' ({sizes})' if sizes else '') + ': ' if model else ''}{what}"
    for _ in range(4):   # narrower until the drawn title fits the figure's width
        lines = textwrap.wrap(whole, chars)
        text = "\n".join(lines[:1] + [textwrap.shorten(" ".join(lines[1:]), int(chars * 1.1), placeholder="...")]
                         if len(lines) > 1 else lines)
        drawn = fig.suptitle(text, fontsize=9.5 if len(lines) == 1 else 8.5, fontweight="bold")
        width = drawn.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi   # the text alone, no draw
        if width <= 0.98 * fig.get_figwidth():
            break
        chars = int(chars * 0.98 * fig.get_figwidth() / width)
    sub = setup_label(t["runs"]) if "runs" in t else ""
    if sub:
        _keep_bottom(fig, "footer", FOOTER_IN)
        # regular DejaVu Sans: about 0.6 em a character; smaller (to 5.5 pt) before anything is cut
        room = 0.95 * fig.get_figwidth() * 72 / 0.6
        size = max(5.5, min(6.5, room / max(len(sub), 1)))
        fig.text(0.5, 0.3 * FOOTER_IN / fig.get_figheight(), textwrap.shorten(sub, int(room / size), placeholder="..."),
                 ha="center", va="bottom", fontsize=size, color="0.35")


_HELD = re.compile(r" at ((?:[\w.]+=[^\s;()]+)(?: [\w.]+=[^\s;()]+)*)")


def _unrepeated(what: str, sizes: str) -> str:
    """what without the held values (' at seq=512') that the model's size label already
    gives with one value ('seq=512'), so that a title says each once."""
    one = {p for p in sizes.split(", ") if p and "/" not in p}

    def keep(m):
        left = [x for x in m.group(1).split(" ") if x not in one]
        return f" at {' '.join(left)}" if left else ""
    return _HELD.sub(keep, what, count=1) if one else what


def record(fig, **mark) -> None:
    """Note what one mark of fig shows (a bar, a point, a label: its configuration keys,
    the record column it draws as `quantity` and its `value`, or its `text`), for the data
    file written beside the figure and checked by the audit against the records."""
    fig.__dict__.setdefault("_fusionlab_marks", []).append(mark)


def noted(fig, fmt: str, value, **mark) -> str:
    """value as a label's text in format fmt (audit_figures.FORMATS), noted as a mark of
    fig (record) with that text, so that the audit reads the label against the value."""
    text = "" if value is None or value != value else FORMATS[fmt](float(value))
    record(fig, **mark, value=value, text=text, fmt=fmt)
    return text


def keys_of(r, variant=None) -> dict:
    """A record's configuration keys (and variant) for record(), as plain values."""
    out = {}
    for k in ("model", "variant", "batch", "size", "mode", "dtype", "backend", "device"):
        v = r.get(k) if hasattr(r, "get") else None
        if k == "variant" and variant is not None:
            v = variant
        out[k] = v.item() if hasattr(v, "item") else v
    return out


def marks(fig) -> list[dict]:
    """What record() noted for fig."""
    return list(fig.__dict__.get("_fusionlab_marks", []))


def legend_below(fig, handles, labels=None, ncol=None, **kw):
    """One legend for the whole figure, centred below the panels and above the footer
    (the layout keeps room for both)."""
    if not handles:
        return None
    if labels is None:
        labels = [h.get_label() for h in handles]
    leg = fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, FOOTER_IN / fig.get_figheight()),
                     bbox_transform=fig.transFigure, ncol=ncol or min(len(handles), 6), frameon=False,
                     **{"fontsize": 7, **kw})
    leg.set_in_layout(False)
    height = leg.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
    _keep_bottom(fig, "legend", height + 0.04)
    return leg


def bar_values(ax, bars, values, fmt="{:.3g}", **kw):
    """Each bar's value (values, in the bars' order) written at its end."""
    ax.bar_label(bars, labels=[fmt.format(v) if v == v else "" for v in values], fontsize=6.5, padding=2, **kw)


def time_unit(ms_values) -> tuple[float, str]:
    """(factor, unit) to show times given in ms: us below 1 ms, else ms."""
    finite = [abs(v) for v in ms_values if v == v]
    return (1e3, "us") if finite and max(finite) < 1 else (1.0, "ms")



def plain(v, _pos=None) -> str:
    """A tick label as a plain number (1e4 and up, below 1e-3: short exponent form)."""
    if v <= 0:
        return "0"
    if v >= 1e4 or v < 1e-3:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-")
    return f"{v:g}"


def log_axis(ax, axis="y", base=10):
    """A log axis with plain number labels at 1, 2, 5 x 10^k (base 10) or powers of 2."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log", base=base)
    if base == 2:
        a.set_major_locator(LogLocator(base=2))
    else:
        a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(plain))
    a.set_minor_formatter(NullFormatter())


def fit_log_ticks(ax, axis="y"):
    """Once the data are drawn: enough plain-number ticks for the axis's span (1 to 9 x
    10^k within a decade, 1, 2, 5 x 10^k over a few, 10^k beyond)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = (ax.get_ylim() if axis == "y" else ax.get_xlim())
    if lo <= 0 or hi <= 0:
        return
    span = np.log10(hi / lo)
    if span < 0.8:   # under a factor of 6: evenly spaced plain numbers (0.6, 0.8, 1, 1.2)
        a.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
        a.set_major_formatter(FuncFormatter(plain))
        a.set_minor_formatter(NullFormatter())
        return
    subs = (1.0, 2.0, 3.0, 5.0) if span < 1.5 \
        else (1.0, 2.0, 5.0) if span < 4 else (1.0,)
    a.set_major_locator(LogLocator(base=10, subs=subs))
    a.set_major_formatter(FuncFormatter(plain))
    a.set_minor_formatter(NullFormatter())
    if len([v for v in a.get_major_locator()() if lo <= v <= hi]) < 3:   # never one lone tick
        a.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))


def plain_x_ticks(ax, values):
    """x ticks at exactly these values, labelled as plain numbers."""
    ax.set_xticks(sorted(values))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))


def legend(ax, **kw):
    """The panel's legend, if anything in it has a label."""
    h, lab = ax.get_legend_handles_labels()
    if h:
        ax.legend(**{"fontsize": 7, **kw})


def wrapped(text: str, inches: float, fontsize: float = 7) -> str:
    """text broken into lines that fit `inches` at fontsize (regular DejaVu Sans: about
    0.6 em a character), so that a long axis label is never cut at the figure's edge."""
    return textwrap.fill(text, max(20, int(inches * 72 / (fontsize * 0.6))))


def xlabel(axis):
    return "batch size" if axis == "batch" else axis


def at(fixed):
    """' at dim=1024' for the fixed values of the other axes ('' for none), and what the
    slice leaves out after '; ' in parentheses (' at dim=1024 (not drawn: dim 256 ...)')."""
    held, _, rest = (fixed or "").partition("; ")
    return (f" at {held}" if held else "") + (f" ({rest})" if rest else "")


def renderer(fig):
    """The figure drawn once (its layout done) and its renderer, to measure text."""
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def fit_text_x(panels: dict, margin_px=4, rounds=3, shared=False):
    """Each panel's right x limit (linear axis) set so that every one of its texts
    (panels: axes -> texts or annotations anchored at a data x, such as bar_label's)
    ends inside the panel, and no wider than that or the data already shown; shared:
    the panels share their x axis, set once to what the most demanding one needs."""
    if not panels:
        return
    fig = next(iter(panels)).figure
    base = {ax: ax.get_xlim()[1] for ax in panels}
    for texts in panels.values():
        for t in texts:
            t.set_in_layout(False)   # the panel is sized by the layout, the limits by the texts
    for _ in range(rounds):
        r = renderer(fig)
        changed = False
        for ax, texts in panels.items():
            box = ax.get_window_extent(r)
            lo, hi = ax.get_xlim()
            need = base[ax]
            for t in texts:
                x = t.xy[0] if hasattr(t, "xy") else t.get_position()[0]
                beyond = t.get_window_extent(r).x1 - ax.transData.transform((x, 0))[0] + margin_px
                if box.width - beyond > 1:
                    need = max(need, lo + (x - lo) * box.width / (box.width - beyond))
            if shared:
                base = {a: max(base[a], need) for a in base}
            elif abs(need - hi) > 1e-3 * abs(hi):
                ax.set_xlim(lo, need)
                changed = True
        if shared:
            ax = next(iter(panels))
            lo, hi = ax.get_xlim()
            need = max(base.values())
            changed = abs(need - hi) > 1e-3 * abs(hi)
            if changed:
                ax.set_xlim(lo, need)
        if not changed:
            return


# where a label goes around its point: (dx, dy) in points, ha, va; the first that is free wins
AROUND = [((5, 0), "left", "center"), ((4, -4), "left", "top"), ((4, 4), "left", "bottom"),
          ((-5, 0), "right", "center"), ((-4, 4), "right", "bottom"), ((-4, -4), "right", "top"),
          ((0, 6), "center", "bottom"), ((0, -6), "center", "top")]


def overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(ax, items, markers=(), avoid=(), marker_pt=3.0):
    """Each (x, y, text, style kwargs) of items written beside its point at the first
    place of AROUND that overlaps no label placed before, no marker (markers: data (x, y)
    of every point drawn, marker_pt their radius in points), no artist of avoid, and stays
    inside the panel; where none is free, the place that overlaps least. Returns the
    texts."""
    from matplotlib.transforms import Bbox
    fig = ax.figure
    r = renderer(fig)
    panel = ax.get_window_extent(r)
    rad = marker_pt * fig.dpi / 72
    boxes = [Bbox.from_extents(px - rad, py - rad, px + rad, py + rad)
             for px, py in (ax.transData.transform(list(markers)) if len(markers) else [])]
    boxes += [a.get_window_extent(r) for a in avoid]
    out = []
    for x, y, text, kw in items:
        best = None
        for (dx, dy), ha, va in AROUND:
            a = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                            annotation_clip=False, **kw)
            a.set_in_layout(False)
            b = a.get_window_extent(r)
            cost = sum(overlap(b, o) for o in boxes)
            cost += b.width * b.height - overlap(b, panel)    # the part outside the panel
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, a, b)
            else:
                a.remove()
            if cost == 0:
                break
        boxes.append(best[2])
        out.append(best[1])
    return out


def line_label(ax, starts, fn, text, above=True, markers=(), avoid=(), marker_pt=3.0, **kw):
    """text written along the line y = fn(x) (in data), just above or below it, starting
    at the first x of starts where it overlaps no marker (data (x, y) of the points drawn)
    and no artist of avoid (else the first); kept out of the layout."""
    from matplotlib.transforms import Bbox
    fig = ax.figure
    r = renderer(fig)
    rad = marker_pt * fig.dpi / 72
    boxes = [Bbox.from_extents(px - rad, py - rad, px + rad, py + rad)
             for px, py in (ax.transData.transform(list(markers)) if len(markers) else [])]
    boxes += [a.get_window_extent(r) for a in avoid]
    panel = ax.get_window_extent(r)

    def candidates():
        for x0 in starts:
            p0, p1 = ax.transData.transform([(x0, fn(x0)), (x0 * 1.5, fn(x0 * 1.5))])
            angle = np.degrees(np.arctan2(p1[1] - p0[1], p1[0] - p0[0]))
            t = ax.annotate(text, (x0, fn(x0)), xytext=(0, 2 if above else -2), textcoords="offset points",
                            rotation=angle, rotation_mode="anchor", ha="left", va="bottom" if above else "top", **kw)
            t.set_in_layout(False)
            yield t

    def cost(t):
        b = t.get_window_extent(r)
        return sum(overlap(b, o) for o in boxes) + b.width * b.height - overlap(b, panel)
    return cheapest_text(candidates(), cost)


def cheapest_text(texts, cost):
    """Of the texts `texts` yields (each drawn as it comes), the first of cost 0, else the
    first of the least cost; every other one removed."""
    best = None
    for t in texts:
        c = cost(t)
        if best is None or c < best[0]:
            if best is not None:
                best[1].remove()
            best = (c, t)
        else:
            t.remove()
        if c == 0:
            break
    return best[1]
