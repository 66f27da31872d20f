"""The report's pages, from a results folder's written files alone: summary.html as the
front page (html.front_page: setup, opening, contents and links, the figures inline),
report.html (the same page with every image inside it: one file to publish), and a page
per model (pages/<model>.html: its headline, where the time goes, kernel classes, the
top kernels with their demangled names, class and precision, its fusion ledger and
missed fusions, the roofline and compile cost).

write(results, markdown): every page; figures come in the order and categories of their
records (figures.REGISTRY), each with the caption written beside it."""
from __future__ import annotations

import base64
import html as html_lib
import os
import re

import pandas as pd

from fusionlab.analysis.report import figures, html
from fusionlab.analysis.report.text import md_table
from fusionlab.analysis.sweep import attribution as sweep_attribution
from fusionlab.analysis.sweep import tables
from fusionlab.core import kernel_class
from fusionlab.core.io import read_bounded, read_csv, read_text

TIMELINE_CAPTION = ("One measured iteration (the NVTX iteration range of median length) of the first repeat at "
                    "the largest batch, eager above each variant, from the runs' Nsight Systems exports: each of "
                    "its kernels a box in its class's colour, other iterations' kernels grey (a GPU running behind "
                    "the host), GPU idle hatched (the largest gaps written), the CPU's runtime calls as ticks "
                    "(launches black) and the NVTX ranges above, later iterations' beside the chosen one.")
TOP_KERNELS = 15
IMAGE_BYTES = 64 << 20   # a figure embedded in a page, at most
TOP_LEDGER = 10
# the figures of a model's page, in its order (model scope), then the sweep's it belongs with
MODEL_FIGURES = ["headline", "idle_breakdown", "speedup_breakdown", "kernel_classes", "kernels_per_iter",
                 "kernel_durations", "launch_overhead", "speedup_vs_batch", "gap_waterfall", "attribution_icicle"]
SWEEP_FIGURES_ON_MODEL_PAGE = ["roofline", "compile_cost", "over_fusion"]


def _read(results: str, name: str) -> pd.DataFrame | None:
    for p in (os.path.join(results, "tables", name), os.path.join(results, "tables", name + ".gz")):
        if os.path.exists(p):
            try:
                return read_csv(p, low_memory=False)
            except (OSError, ValueError):
                return None
    return None


def drawn(results: str, scope_filter=None) -> list[tuple[str, str, str, str]]:
    """(category, figure name, png path relative to results, caption) of each figure drawn
    (a png with its caption, not a 'No data' marker), in the registry's order."""
    out = []
    for f in figures.REGISTRY:
        d = os.path.join(results, "figures", f.name)
        if not os.path.isdir(d):
            continue
        for png in sorted(x for x in os.listdir(d) if x.endswith(".png")):
            scope = png[:-4]
            if scope_filter and not scope_filter(f, scope):
                continue
            rst = os.path.join(d, scope + ".rst")
            caption = read_text(rst) if os.path.exists(rst) else ""
            if caption.startswith("No data"):
                continue
            label = f.name.replace("_", " ") + ("" if scope == figures.SWEEP else f": {scope}")
            out.append((f.category, label, f"figures/{f.name}/{png}", caption))
    return out


def setup(runs: pd.DataFrame, headline: pd.DataFrame | None) -> list[tuple[str, str]]:
    """The setup block's rows: device, versions, models with their sizes (every size
    axis), settings, variants, batch sizes, repeats."""
    def vals(col, df=runs):
        return sorted({str(v) for v in df[col].dropna()} - {"", "[]", "nan"}) if col in df else []
    rows = [("device", ", ".join(vals("gpu") or vals("device"))), ("profiler", ", ".join(vals("backend")
                                                                                          + vals("profiler_version"))),
            ("torch", ", ".join(vals("torch")))]
    r = tables.with_size(runs)
    models = []
    for m, g in r.groupby("model"):
        sizes = []
        for a in tables.size_axes(g):
            v = sorted({int(x) for x in pd.to_numeric(g[a], errors="coerce").dropna()})
            if v:
                sizes.append(f"{a} {'/'.join(map(str, v))}")
        models.append(f"{m} (batch {'/'.join(str(int(b)) for b in sorted(g['batch'].unique()))}"
                      + (f"; {', '.join(sizes)}" if sizes else "") + ")")
    rows.append(("models", "; ".join(models)))
    if {"mode", "dtype"} <= set(r.columns):
        rows.append(("mode and dtype", ", ".join(sorted({f"{a} {b}" for a, b in r[["mode", "dtype"]].dropna()
                                                        .astype(str).itertuples(index=False)}))))
    rows.append(("variants", ", ".join(vals("variant"))))
    if "repeat" in r:
        n = r.groupby(["model", "variant", "batch", "size"])["repeat"].nunique()
        rows.append(("repeats", f"{n.min()} to {n.max()}" if n.min() != n.max() else f"{n.max()}"))
    return [(k, v) for k, v in rows if v]


def _links(results: str, models: list[str]) -> list[tuple[str, str]]:
    out = [("data quality", "#data-quality")]
    if os.path.exists(os.path.join(results, "figures", "fusion_map.html")):
        out.append(("fusion map", "figures/fusion_map.html"))
    out += [(f"model {m}", f"pages/{m}.html") for m in models]
    out += [(f"tables/{f}", f"tables/{f}") for f in sorted(os.listdir(os.path.join(results, "tables")))
            if f.endswith((".csv", ".csv.gz"))] if os.path.isdir(os.path.join(results, "tables")) else []
    return out


def _embedded(page: str, results: str) -> str:
    """The page with each figures/ image inside it (a data URI), so that it stands alone."""
    def data(m):
        path = os.path.join(results, m.group(2))
        if not os.path.exists(path):
            return m.group(0)
        return f"{m.group(1)}='data:image/png;base64,{base64.b64encode(read_bounded(path, IMAGE_BYTES)).decode()}'"
    return re.sub(r"(src)='(figures/[^']+\.png)'", data, page)


def top_kernels(kernels: pd.DataFrame | None, model: str) -> pd.DataFrame:
    """The model's TOP_KERNELS kernels by time per iteration (medians over repeats) of
    each variant at its largest batch: class, precision, calls, time and the demangled name."""
    if kernels is None or kernels.empty:
        return pd.DataFrame()
    k = tables.with_size(kernels[kernels["model"] == model])
    if k.empty:
        return k
    keys = [c for c in ("variant", "batch", "size", "mode", "dtype") if c in k]
    full = k["full_name"] if "full_name" in k else k["name"]
    k = k.assign(full_name=full.fillna(k["name"]))
    g = (k.groupby(keys + ["name", "full_name"], dropna=False)[["time_per_iter_us", "calls_per_iter"]].median()
         .reset_index())
    g = g[g["batch"] == g.groupby([c for c in keys if c != "batch"])["batch"].transform("max")]
    g = g.sort_values("time_per_iter_us", ascending=False).groupby(keys, dropna=False).head(TOP_KERNELS)
    g["class"] = [kernel_class.kernel_class(n, f) for n, f in zip(g["name"], g["full_name"])]
    g["precision"] = [kernel_class.precision(n, f) for n, f in zip(g["name"], g["full_name"])]
    g["time_per_iter_us"] = g["time_per_iter_us"].round(1)
    g["kernel (demangled)"] = ["`" + str(f)[:300] + "`" for f in g["full_name"]]
    return g[keys + ["class", "precision", "calls_per_iter", "time_per_iter_us", "kernel (demangled)"]]


def _ledger_rows(df: pd.DataFrame | None, model: str, sort: str, cols: list[str]) -> pd.DataFrame:
    if df is None or df.empty or sort not in df:
        return pd.DataFrame()
    d = df[df["model"] == model].sort_values(sort, ascending=False).head(TOP_LEDGER)
    return d[[c for c in cols if c in d]]


def _movers_md(results: str, model: str) -> list[str]:
    """The module paths (layer indices folded) whose kernel time each variant changed most
    against eager (sweep.attribution.movers), as a section of the model's page."""
    t = sweep_attribution.read(os.path.join(results, "tables", "attribution.csv"))
    mv = sweep_attribution.movers(t[t["model"] == model], folded=True)
    if mv.empty:
        return []
    cols = ["variant", "batch", "size", "mode", "dtype", "module", "eager_us", "variant_us", "delta_us",
            "variant_attributed"]
    return ["## Where in the model the time changed", "tables/attribution.csv: per variant the module paths "
            "(layer indices as *) whose own kernel time per iteration (their submodules' apart) changed most "
            "against eager's, one repeat each "
            "(the one with most time attributed; variant_attributed: its share attributed to a module path).", "",
            md_table(mv[cols].round({"eager_us": 1, "variant_us": 1, "delta_us": 1, "variant_attributed": 3})), ""]


def model_page(results: str, model: str, kernels, ledger, missed) -> str:
    """One model's page (markdown turned to HTML, figures inline; paths relative to pages/)."""
    own = drawn(results, lambda f, s: (s == model and f.name in MODEL_FIGURES)
                or (s == figures.SWEEP and f.name in SWEEP_FIGURES_ON_MODEL_PAGE))
    parts = [f"<p><a href='../summary.html'>&larr; the sweep's front page</a></p><h1>{html_lib.escape(model)}</h1>"]
    for category, name, png, caption in own:
        parts.append(html.figure_block("../" + png, caption, html.slug(name)))
        if name == f"headline: {model}" and os.path.exists(os.path.join(results, "figures", "timeline", f"{model}.png")):
            parts.append(html.figure_block(f"../figures/timeline/{model}.png", TIMELINE_CAPTION, "timeline"))
    md = []
    top = top_kernels(kernels, model)
    if len(top):
        md += ["## Top kernels", "Each variant's kernels with the most time per iteration at its largest batch "
               "(medians over repeats; tables/kernels.csv), with their class and the precision their name states.",
               "", md_table(top), ""]
    led = _ledger_rows(ledger, model, "time_saved_us", ["variant", "batch", "mode", "dtype", "kernel", "aten_ops",
                                                        "eager_kernels", "eager_time_us", "time_us", "time_saved_us"])
    if len(led):
        md += ["## Fusion ledger: what fusing saved", "tables/fusion_ledger.csv, the rows that saved the most.", "",
               md_table(led), ""]
    mis = _ledger_rows(missed, model, "time_cost_us", ["variant", "batch", "mode", "dtype", "kind", "producer",
                                                       "consumer", "buffer_bytes", "time_cost_us", "reason"])
    if len(mis):
        md += ["## Missed fusions", "tables/missed_fusions.csv, the pairs left apart that cost the most.", "",
               md_table(mis), ""]
    md += _movers_md(results, model)
    body = "\n".join(html._blocks("\n".join(md).splitlines()))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html_lib.escape(model)}</title>"
            f"<style>{html.STYLE}</style></head><body>\n" + html.unique_ids("\n".join(parts) + body)
            + "\n</body></html>\n")


def write(results: str, markdown: str, summary_html: str, report_html: str | None = None,
          pages: dict | None = None) -> None:
    """summary.html (the front page), report.html (the same, self-contained) and pages:
    model -> path of its page."""
    runs = _read(results, "runs.csv")
    runs = runs if runs is not None else pd.DataFrame(columns=["model", "variant", "batch"])
    models = sorted(runs["model"].dropna().unique())
    front = drawn(results, lambda f, s: s == figures.SWEEP or f.name == "headline")
    page = html.front_page(markdown, setup(runs, _read(results, "headline.csv")), front,
                           [x for x in _links(results, models) if not x[1].startswith("pages/") or pages])
    _write(summary_html, page)
    if report_html:
        _write(report_html, _embedded(page, results))
    if pages:
        kernels, ledger, missed = (_read(results, n) for n in ("kernels.csv", "fusion_ledger.csv",
                                                                 "missed_fusions.csv"))
        for m, path in pages.items():
            _write(path, model_page(results, m, kernels, ledger, missed))


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
