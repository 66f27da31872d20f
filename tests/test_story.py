"""summary.md tells one story: every section quotes the same speedup for a configuration
(the headline table's), the speedup across processes only where it is labelled so; its
interval is named for what it is; the opening, then the banner, then the details."""
import os
import re

import numpy as np
import pandas as pd

from fusionlab.analysis.report import html, summary
from fusionlab.analysis.sweep import headline, tables
from conftest import ROOT

SECTIONS = ("opening", "## Time per iteration", "## Speedup over eager (wall time)", "## Where the speedup comes from",
            "## Crossover: where a variant starts and stops beating eager")


def softmax_runs(repeats=3):
    """softmax on a GPU, eager and compile at batch 64 and 1024: at 64 compile is slower
    paired (0.95x) but its own processes ran on a faster host (1.10x across processes);
    at 1024 it is faster both ways (1.30x paired, 1.45x across)."""
    rows = []
    for batch, paired, e_wall, v_wall in ((64, 0.95, 0.110, 0.100), (1024, 1.30, 0.0748, 0.0748 / 1.45)):
        for variant in ("eager", "compile"):
            for r in range(repeats):
                wall = (e_wall if variant == "eager" else v_wall) * (1 + 0.01 * r)
                rows.append({"model": "softmax", "variant": variant, "batch": batch, "size": "default",
                             "mode": "inference", "dtype": "float32", "backend": "nsys", "device": "cuda",
                             "repeat": r, "status": "ok", "reason": None, "wall_time_per_iter_ms": wall,
                             "gpu_time_per_iter_ms": 0.0672 * (0.5 if variant == "compile" else 1),
                             "gpu_busy_per_iter_ms": 0.0672 * (0.5 if variant == "compile" else 1),
                             "idle_kernel_wait_per_iter_ms": 0.001, "idle_other_per_iter_ms": 0.002,
                             "traced_wall_time_per_iter_ms": wall * 1.6, "gpu_busy_fraction": 0.46,
                             "bound": "cpu", "kernels_per_iter": 3.0 if variant == "eager" else 1.0,
                             "launch_calls_per_iter": 3.0 if variant == "eager" else 1.0,
                             "profiler_overhead": 1.6, "peak_memory_bytes": 1.0, "compile_latency_s": 2.0,
                             "paired_speedup": paired * (1 + 0.01 * (r - 1)) if variant == "compile" else None})
    return pd.DataFrame(rows)


def sections(md: str) -> dict:
    parts = re.split(r"^(## .*)$", md, flags=re.M)
    out = {"opening": parts[0].split("> **Data quality**")[0]}
    for head, body in zip(parts[1::2], parts[2::2]):
        out[head] = body
    return out


def quoted(text: str) -> set:
    """The speedups a section quotes as the headline: every 'N.NNx' but those labelled
    'across processes'."""
    text = re.sub(r"across processes \d+\.\d+x( \[[^\]]*\])?", "", text)
    text = re.sub(r"kernel time \d+\.\d+x", "", text)   # a host-bound configuration's GPU-side speedup
    return set(re.findall(r"(\d+\.\d\d)x", text))


def test_every_section_quotes_the_same_speedup():
    runs = softmax_runs()
    sp = tables.speedups(runs)
    h = headline.table(runs, sp)
    c = h[h["variant"] == "compile"].set_index("batch")
    assert (c["estimator"] == "paired").all() and list(c["interval"]) == ["95% t over 3 processes, spread pooled over 2 configurations"] * 2
    expected = {f"{x:.2f}" for x in c["speedup"]}
    across = {f"{x:.2f}" for x in c["speedup_across"]}
    assert expected == {"0.95", "1.30"} and not expected & across
    md = summary.summary_md(runs, sp, tables.crossover(sp), None, headline=h)
    got = sections(md)
    assert quoted(got["opening"]) == {"0.95", "1.30"}   # each configuration's highest estimate
    assert "**compile** beats eager: 1.30x" in got["opening"]   # bold only where the interval says faster
    # a host-bound configuration says so, with its kernel-time speedup beside (from the record)
    hb = h[(h["variant"] == "compile") & (h["host_bound"] == True)]  # noqa: E712
    for _, r in hb.iterrows():
        assert f"kernel time {r['kernel_speedup']:.2f}x)" in got["opening"]
    assert ("host-bound" in got["opening"]) == (len(hb) > 0)
    assert "no variant beats eager; the highest estimate, compile, is slower than eager: 0.95x" in got["opening"]
    for name in SECTIONS[1:]:
        assert quoted(got[name]) == expected, (name, quoted(got[name]))
    # the across-processes value appears only labelled as such
    assert "across processes 1.10x" in md and not re.search(r"(?<!across processes )1\.10x", md)
    # the interval is named for what it is, and the verdicts follow it
    pooled = "95% t over 3 processes, spread pooled over 2 configurations"
    assert f"0.95x paired [0.93, 0.97] {pooled}, slower" in md and f"1.30x paired [1.28, 1.32] {pooled}, faster" in md
    assert "starts to beat eager between batch 64 and 1024" in got[SECTIONS[-1]]
    # the opening comes first, the banner second, the details after
    assert md.index("**softmax**") < md.index("> **Data quality**") < md.index("## Time per iteration")
    assert "<blockquote>" in html.page(md) and "<table>" in html.page(md)


def test_a_model_with_several_configurations_has_one_sub_bullet_each():
    """softmax at batch 64 and 1024: one bullet for the model, one sub-bullet per
    configuration, nested in the HTML; the audit reads each sub-bullet as a configuration."""
    from fusionlab.analysis.report import audit, audit_opening
    runs = softmax_runs()
    sp = tables.speedups(runs)
    h = headline.table(runs, sp)
    md = summary.summary_md(runs, sp, tables.crossover(sp), None, headline=h)
    lines = sections(md)["opening"].splitlines()
    top = lines.index("- **softmax**:")
    assert [x[:18] for x in lines[top + 1:top + 3]] == ["  - at batch 64: n", "  - at batch 1024:"]
    page = html.page(md)
    assert page.count("<ul>") >= 2 and "<li><b>softmax</b>:<ul><li>at batch 64: no variant" in page
    [line] = audit_opening.opening(md)
    assert line.count("; at batch ") == 1 and "1.30x" in line and "0.95x" in line
    a = audit.Audit()
    audit_opening.check_opening(a, md, h)
    assert a.violations == [] and a.checks >= 10
    wrong = md.replace("1.30x", "1.40x", 1)
    a = audit.Audit()
    audit_opening.check_opening(a, wrong, h)
    assert any("1.40x" in v for v in a.violations), a.violations


def test_idle_shares_and_bound_come_from_the_untraced_loop():
    """softmax eager at batch 1024: 74.8 us per iteration untraced against 67.2 us of
    kernel time: about 90% busy and GPU-bound, whatever tracing (46% busy, 'cpu') says."""
    runs = softmax_runs()
    h = headline.table(runs, tables.speedups(runs)).set_index(["batch", "variant"])
    e = h.loc[(1024, "eager")]
    assert e["wall_ms"] == np.float64(runs[(runs.batch == 1024) & (runs.variant == "eager")]
                                      ["wall_time_per_iter_ms"].median())
    assert 0.85 < e["kernel_share"] < 0.92 and e["bound"] == "gpu"
    assert e["traced_busy_share"] == 0.46 and e["traced_bound"] == "cpu"
    parts = ["kernel_ms", "host_ms", "kernel_wait_ms", "other_ms"]
    assert abs(e[parts].sum() - e["wall_ms"]) < 1e-12
    v = h.loc[(1024, "compile")]   # the parts of the time saved add up to it
    assert abs(v[list(headline.PARTS)].sum() - v["saved_ms"]) < 1e-12
    assert abs(v["eager_wall_ms"] / v["wall_ms"] - v["speedup"]) < 1e-12


def test_one_repeat_has_no_interval_and_says_so():
    runs = softmax_runs(repeats=1)
    h = headline.table(runs, tables.speedups(runs))
    c = h[h["variant"] == "compile"]
    assert (c["interval"] == "1 repeat").all() and c["speedup_lo"].isna().all()
    md = summary.summary_md(runs, tables.speedups(runs), pd.DataFrame(), None, headline=h)
    assert "0.94x paired (1 repeat)" in md and "2 of 2 speedups rest on 1 repeat" in md


def test_iteration_counts_read_as_plain_numbers():
    """Break-even iteration counts, in the summary's compile-cost table and on the figure."""
    from fusionlab.analysis.report.text import iterations
    assert [iterations(x) for x in (16194.2, 12.5, 100.0)] == ["16,194", "12.5", "100"]


def test_a_ceiling_note_reads_its_reason_from_measured_bytes():
    """softmax compile on the H100 (results of config/ledger.yaml): 1.05x the copy rate by the
    model's bytes and 1.045x by Nsight Compute's; an L2-resident run: above by the model only."""
    from fusionlab.analysis.sweep.headline import ceiling_note
    assert "faster than the copy benchmark" in ceiling_note(1.05, 0.1, 537e6, 1.045)
    note = ceiling_note(1.12, 0.1, 16e6, 0.4)
    assert note.startswith("1.12x") and "0.40x by Nsight Compute's DRAM bytes" in note and "stays in L2" in note
    assert ceiling_note(0.9, 0.1, 537e6, 0.95) == ""
    assert "fit in L2" in ceiling_note(1.12, 0.1, 16e6)          # no measured bytes: the model's reason


def test_a_ceiling_note_joins_both_reasons_and_names_the_device_s_work():
    from fusionlab.analysis.sweep.headline import ceiling_note
    gpu = ceiling_note(1.12, 1.5, 16e6)
    assert gpu.count("; ") == 1 and gpu.split("; ")[1].startswith("1.50x the measured matmul rate: the kernels take")
    assert "the operators take a faster path" in ceiling_note(0.5, 1.5, 16e6, device="cpu")


def test_the_headline_row_carries_the_traced_run_and_the_best_variant():
    """The traced range's wall time and launch-overhead ratio, medians of the repeats; best():
    per configuration the variant of the highest speedup."""
    runs = softmax_runs().assign(launch_overhead_ratio=[0.5, 0.7, 0.6] * 4)
    h = headline.table(runs, tables.speedups(runs))
    c = h[(h["variant"] == "compile") & (h["batch"] == 64)].iloc[0]
    assert c["traced_wall_ms"] == 0.100 * 1.01 * 1.6 and c["traced_launch_overhead_ratio"] == 0.6
    b = headline.best(h).set_index("batch")["variant"]
    assert b.to_dict() == {64: "eager", 1024: "compile"}


def test_without_peaks_the_modelled_traffic_moves_at_eager_s_achieved_bandwidth():
    # eager moves 4 MB (1 MB of it removed by compile) in 0.0672 ms of kernels: the 1 MB
    # at that rate is a quarter of eager's kernel time, under the 0.0336 ms of GPU time saved
    runs = softmax_runs().assign(bytes_unfused=4e6, bytes_fused=3e6)
    h = headline.table(runs, tables.speedups(runs), peaks=None)
    c = h[(h["variant"] == "compile") & (h["batch"] == 64)].iloc[0]
    assert (c["traffic_source"], c["traffic_bandwidth"]) == ("modelled", "eager's achieved bandwidth")
    assert abs(c["traffic_ms"] - 0.0672 / 4) < 1e-12


def test_configurations_the_config_asks_for_without_a_run_are_one_record_the_outputs_all_read():
    """Eager at batch 1024 and compile_reduce_overhead at 64 never ran (a sweep stopped
    before them): headline.csv has a row of status 'not run' for each (backend, device and
    the size axes from their configuration's other rows); the banner says some
    configurations have no run and 'Data quality' lists them; the headline figure marks
    each in its panel, and the audit reads the mark against the row; the suite counts the
    variant's apart from the configurations tried. Without any, none of it appears."""
    from fusionlab.analysis.report import audit, legibility, style
    from fusionlab.analysis.report.figures.headline import headline as draw
    from fusionlab.analysis.sweep import suite
    runs = softmax_runs(repeats=2)
    runs = runs[~((runs["variant"] == "eager") & (runs["batch"] == 1024))]
    sp = tables.speedups(runs)
    missing = [{"model": "softmax", "variant": "eager", "mode": "inference", "dtype": "float32", "batch": 1024,
                "size": ""},
               {"model": "softmax", "variant": "compile_reduce_overhead", "mode": "inference", "dtype": "float32",
                "batch": 64, "size": ""}]
    h = headline.table(runs, sp, None, not_recorded=missing)
    gone = h[h["status"] == headline.NOT_RUN]
    assert gone[["variant", "batch", "size", "repeats"]].values.tolist() == [
        ["compile_reduce_overhead", 64, "default", 0], ["eager", 1024, "default", 0]]
    assert gone["backend"].tolist() == [runs["backend"].iloc[0]] * 2 and gone["wall_ms"].isna().all()
    md = summary.summary_md(runs, sp, pd.DataFrame(), None, headline=h)
    banner = md.split("## Time per iteration")[0]
    assert "Some configurations of the config have no run (a sweep stopped before them, or not yet run)" in banner
    quality = md.split("## Data quality")[1]
    assert "### Configurations with no run: 2" in quality
    assert "- softmax eager, inference float32, batch 1024\n" in quality
    assert "- softmax compile_reduce_overhead, inference float32, batch 64\n" in quality
    # and batch 4096, where nothing ran: a panel of its own, with its one mark
    nothing = dict(missing[0], batch=4096)
    h = headline.table(runs, sp, None, not_recorded=[*missing, nothing])
    fig = draw({"headline": h, "runs": runs}, "softmax")
    said = {ax.get_title(): [t.get_text() for t in ax.texts] for ax in fig.axes if ax.get_visible()}
    assert [t for t in said["batch size 1024"] if "no time" in t] == ["not run: no time measured"]
    assert [t for t in said["batch size 64"] if "no time" in t] == ["not run: no time measured"]
    assert said["batch size 4096"] == ["not run: no time measured"]
    assert legibility.text_overlaps(fig) == [] and legibility.texts_outside(fig) == []
    marks = pd.DataFrame(style.marks(fig))
    a = audit.Audit()
    audit.check_figure(a, marks, {audit._key(r): r for r in h.to_dict("records")}, "headline")
    assert a.violations == [] and a.checks > 0
    st = suite.suite(h)
    row = st[st["variant"] == "compile_reduce_overhead"].iloc[0]
    tried = h[(h["variant"] == "compile_reduce_overhead") & (h["status"] != headline.NOT_RUN)]
    assert (row["n_not_run"], row["n_configs"], row["n_pass"]) == (1, len(tried), (tried["status"] == "ok").sum())
    plain = summary.summary_md(runs, sp, pd.DataFrame(), None)
    assert "configurations of the config" not in plain and "Configurations with no run" not in plain


def test_a_variant_without_an_eager_run_says_so_not_ok():
    """compile ran ok at batch 1024 but eager there did not: no speedup, and the tables say
    why in words, never the run's status."""
    runs = softmax_runs(repeats=2)
    runs = runs[~((runs["variant"] == "eager") & (runs["batch"] == 1024))]
    runs.loc[(runs["variant"] == "compile") & (runs["batch"] == 1024), "paired_speedup"] = None
    sp = tables.speedups(runs)
    h = headline.table(runs, sp)
    md = summary.summary_md(runs, sp, pd.DataFrame(), None, headline=h)
    times = sections(md)["## Time per iteration"]
    row = next(line for line in times.splitlines() if "batch 1024" in line and "| compile |" in line)
    assert "| no eager run |" in row and "no eager run to compare with" in row and "| ok |" not in row
    table = sections(md)["## Speedup over eager (wall time)"]
    assert "no eager run to compare with" in table


def test_tables_keep_inference_and_training_apart():
    """The same model, variant and batch in two modes: every table names the mode, and no
    median mixes them (the kernels per iteration and the profiler's cost, per mode)."""
    inf = softmax_runs()
    train = inf.assign(mode="train", kernels_per_iter=inf["kernels_per_iter"] * 10,
                       launch_calls_per_iter=inf["launch_calls_per_iter"] * 10,
                       traced_wall_time_per_iter_ms=inf["traced_wall_time_per_iter_ms"] * 2, profiler_overhead=3.2)
    runs = pd.concat([inf, train], ignore_index=True)
    sp = tables.speedups(runs)
    md = summary.summary_md(runs, sp, tables.crossover(sp), None, headline=headline.table(runs, sp))
    kernels = sections(md)["## Kernels per iteration"]
    assert "| model | variant | mode | batch |" in kernels
    assert "| softmax | compile | inference | 64 | 1.0 | 3.0 |" in kernels
    assert "| softmax | compile | train | 64 | 10.0 | 30.0 |" in kernels
    cost = sections(md)["## The profiler's own cost"]
    assert "| softmax | compile | inference | 64 |" in cost and "| softmax | compile | train | 64 |" in cost
    assert "3.20x" in cost and "1.60x" in cost   # the traced / untraced ratio of each mode, not their median
    assert "| softmax | compile | mode=inference |" not in md
    crossing = sections(md)["## Crossover: where a variant starts and stops beating eager"]
    assert "| softmax | compile | inference |" in crossing and "| softmax | compile | train |" in crossing


def test_the_opening_leads_with_a_verdict_and_names_a_higher_estimate_without_one():
    """ResNet-50 at batch 32, bfloat16 inference, on the H100 (part 4's records): compile
    beats eager by its two repeats (2.01x, range [1.97, 2.05]); compile_reduce_overhead's
    2.45x rests on one repeat. The opening leads with compile, in bold, and names the higher
    estimate after it; the audit agrees, and finds a line that leaves it out."""
    from fusionlab.analysis.report import audit, audit_opening, story
    h = pd.read_csv(os.path.join(ROOT, "benchmarks", "results", "h100-real-models-part4", "tables", "headline.csv"))
    h = h[h["model"] == "resnet50"]
    md = "\n".join(["# t", ""] + story.opening_md(h))
    line = next(ln for ln in md.splitlines() if "batch 32, mode=inference, dtype=bfloat16" in ln)
    assert "**compile** beats eager: 2.01x paired [1.97, 2.05] range of 2" in line
    assert line.endswith(f"; {story.HIGHER} compile_reduce_overhead 2.45x paired (1 repeat).")
    a = audit.Audit()
    audit_opening.check_opening(a, md, h)
    assert a.violations == []
    cut = md.replace(f"; {story.HIGHER} compile_reduce_overhead 2.45x paired (1 repeat)", "")
    a = audit.Audit()
    audit_opening.check_opening(a, cut, h)
    assert len(a.violations) == 1 and "names no higher estimate" in a.violations[0]


def test_a_traffic_part_among_parts_that_pull_both_ways_names_its_source():
    """ResNet-50 compile training at batch 64 on the H100 (tests/data/real_models_h100): 130 us added,
    the model's bytes put the memory traffic removed at +16.7 ms against -16 ms of exposed
    host time. The sentence says the bytes are modelled; the audit finds it left out."""
    from fusionlab.analysis.report import audit, audit_opening, story
    h = pd.read_csv(os.path.join(ROOT, "tests", "data", "real_models_h100", "headline.csv"))
    r = h[(h["model"] == "resnet50") & (h["variant"] == "compile") & (h["mode"] == "train")].iloc[0]
    assert story.comes_from(r) == ("130 us per iteration added, from parts that pull both ways (modelled memory "
                                   "traffic removed saved 16.7 ms, exposed host time added 16 ms)")
    md = "\n".join(["# t", ""] + story.opening_md(h))
    a = audit.Audit()
    audit_opening.check_opening(a, md, h)
    assert a.violations == []
    # the part's direction in words: a part that added time said saved is caught
    a = audit.Audit()
    audit_opening.check_opening(a, md.replace("exposed host time added 16 ms", "exposed host time saved 16 ms"), h)
    assert len(a.violations) == 1 and "exposed host time saved 16 ms" in a.violations[0]
    a = audit.Audit()
    audit_opening.check_opening(a, md.replace("(modelled memory traffic", "(memory traffic"), h)
    assert len(a.violations) == 1 and "said with no source, the record's source is modelled" in a.violations[0]


def test_the_text_names_the_bandwidth_the_records_turned_bytes_into_time_with():
    """Without device/peaks.json the memory-traffic part divides by eager's achieved
    bandwidth and the missed fusions have no time cost: the summary says so, and the audit
    finds a summary that names the measured copy bandwidth instead."""
    from fusionlab.analysis.report import audit, story
    from fusionlab.analysis.report.summary import ledger_md
    runs = softmax_runs().assign(bytes_unfused=4e6, bytes_fused=3e6)
    no_peaks = headline.table(runs, tables.speedups(runs), peaks=None)
    with_peaks = headline.table(runs, tables.speedups(runs), peaks={"copy_bandwidth_Bps": 2e12})
    assert set(with_peaks["traffic_bandwidth"].dropna()) - {"none"} == {"measured copy bandwidth"}
    said = "\n".join(story.saved_md(no_peaks))
    assert ("(bytes removed / eager's achieved bandwidth (eager's bytes over its kernel time; no device/peaks.json "
            "with a measured copy bandwidth in this results folder):") in said
    assert "(bytes removed / the measured copy bandwidth:" in "\n".join(story.saved_md(with_peaks))
    a = audit.Audit()
    audit.check_bandwidth(a, said, no_peaks, None)
    assert a.violations == []
    a = audit.Audit()
    audit.check_bandwidth(a, "\n".join(story.saved_md(with_peaks)), no_peaks, None)
    assert len(a.violations) == 1 and "eager's achieved bandwidth" in a.violations[0]
    # the missed fusions: a buffer left apart, costed only where a bandwidth was measured
    ledger = pd.DataFrame({"model": ["softmax"], "variant": ["compile"], "batch": [64], "size": ["default"],
                           "mode": ["inference"], "dtype": ["float32"], "kernel": ["triton_per_fused_softmax_0"],
                           "torch_ops": ["amax+sub+exp+sum+div"], "ops_source": ["provenance"],
                           "ops_by_name": ["softmax"], "eager_time_us": [60.0], "time_us": [30.0],
                           "time_saved_us": [30.0], "name_agrees": [True]})
    missed = pd.DataFrame({"model": ["softmax"], "variant": ["compile"], "batch": [64], "size": ["default"],
                           "mode": ["inference"], "dtype": ["float32"], "kind": ["left apart"],
                           "producer": ["extern_kernels.mm:1"], "consumer": ["triton_poi_fused_relu_1:2"],
                           "buffer_bytes": [1e6], "time_cost_us": [np.nan], "reason": ["extern"],
                           "bandwidth_source": ["none"]})
    md = "\n".join(ledger_md(ledger, missed))
    assert ("the buffer between them not costed in time (no device/peaks.json with a measured copy bandwidth in "
            "this results folder; the pairs rank by bytes)") in md
    costed = missed.assign(time_cost_us=1.0, bandwidth_source="measured copy bandwidth")
    assert "the buffer between them written and read back at the measured copy bandwidth" in \
        "\n".join(ledger_md(ledger, costed))
    a = audit.Audit()
    audit.check_bandwidth(a, "\n".join(ledger_md(ledger, costed)), no_peaks.iloc[:0], missed)
    assert len(a.violations) == 1 and "the missed fusions' bandwidth is ['none']" in a.violations[0]


def test_a_configuration_where_nothing_ran_takes_backend_device_and_sizes_from_the_plan():
    """No variant ran at batch 4096: its not-run row has the backend, device and size
    values plan.progress.not_recorded gives it, so no setting reads as varying."""
    runs = softmax_runs(repeats=1)
    sp = tables.speedups(runs)
    axes = tables.size_axes(tables.with_size(sp))
    one = tables.with_size(runs).iloc[0]
    c = {"model": "softmax", "variant": "eager", "mode": "inference", "dtype": "float32", "batch": 4096,
         "size": "", "backend": one["backend"], "device": one["device"], "sizes": {a: one[a] for a in axes}}
    h = headline.table(runs, sp, None, not_recorded=[c])
    row = h[h["batch"] == 4096].iloc[0]
    assert (row["status"], row["backend"], row["device"]) == (headline.NOT_RUN, one["backend"], one["device"])
    assert h[["backend", "device"]].nunique().tolist() == [1, 1]
    got = headline.not_run_rows([dict(c, sizes={"dim": 512})], sp, list(tables.GROUP) + ["dim"])
    assert (got[0]["dim"], got[0]["backend"], got[0]["size"]) == (512, one["backend"], "default")


def test_a_model_whose_variants_have_not_run_yet_says_so():
    """A sweep stopped before a model's compiled runs: its line says they have not run yet,
    not that they failed; one that failed says it did not run ok."""
    from fusionlab.analysis.report import story
    from fusionlab.analysis.sweep import headline as sweep_headline
    h = pd.read_csv(os.path.join(ROOT, "tests", "data", "real_models_h100", "headline.csv"))
    m = h[(h["model"] == "resnet50") & (h["mode"] == "train")].copy()
    rest = m["variant"] != "eager"
    m.loc[rest, "speedup"] = float("nan")
    m.loc[rest, "status"] = sweep_headline.NOT_RUN
    assert story.opening_md(m)[0] == f"- **resnet50**: no variant besides eager has run yet ({int(rest.sum())} not run)."
    m.loc[rest, "status"] = "error"
    assert story.opening_md(m)[0] == "- **resnet50**: no variant besides eager ran ok."
