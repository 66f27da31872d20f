"""Nsight Compute on the kernels that carry the time (ncu.top_kernels, docs/ncu.md): the
names chosen from a recorded nsys profile against a SQL sum over its export, the ncu
command line they give, and what traffic.json and runs.csv say of a selection."""
import csv
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from metrics_oracle import rows_in_measure_range
from conftest import DATA, ROOT

from fusionlab.analysis.readers import ncu_report
from fusionlab.analysis.run import traffic as run_traffic
from fusionlab.analysis.sweep import traffic
from fusionlab.core import ncu_passes
from fusionlab.jobs import ncu_step
from fusionlab.plan import ncu_plan, sweep

TRAIN = "nsys2025_h100_train/deep_gelu_mlp_compile_reduce_overhead"
PROFILE = os.path.join(ROOT, "workflow", "scripts", "ncu_profile.py")
GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_{}_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_{}kernel__5x_cublas"
# the five short names with the most kernel time in the measured range (5 iterations),
# from the SQL below: ns over the 5 iterations
TOP5 = [(GEMM.format("tn", ""), 144354), ("Kernel2", 95458), ("multi_tensor_apply_kernel", 80482),
        (GEMM.format("nn", ""), 62177), (GEMM.format("nn", "split_k_"), 41888)]
TOTAL_NS = 632524   # every kernel of the range (tests/test_train_fixture.py's hand count)

SQL = """SELECT s.value, sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
JOIN StringIds s ON s.id = k.shortName
WHERE r.start >= :start AND r.end <= :end AND (r.globalTid >> 24) & 16777215 = :pid
GROUP BY s.value ORDER BY 2 DESC, 1"""


def sql_time_by_name(path: str) -> list[tuple[str, int]]:
    """The oracle: kernel ns per short name, kernels launched inside the measure range by
    its process, in plain SQL."""
    rows = rows_in_measure_range(path, SQL)
    return rows


@pytest.fixture(scope="module")
def train_table(tmp_path_factory):
    """The fixture run's kernels.csv as run_metrics writes it, and its export."""
    from fusionlab.analysis.readers import nsys_sqlite
    from fusionlab.analysis.run import metrics
    d = tmp_path_factory.mktemp("train")
    path = d / "report.sqlite"
    with gzip.open(os.path.join(DATA, TRAIN, "report.sqlite.gz")) as f, open(path, "wb") as g:
        shutil.copyfileobj(f, g)
    metrics.kernel_table(nsys_sqlite.load(str(path))).to_csv(d / "kernels.csv", index=False)
    return str(d / "kernels.csv"), str(path)


def test_the_names_that_carry_the_most_time_against_sql(train_table):
    table, export = train_table
    oracle = sql_time_by_name(export)
    assert oracle[:5] == TOP5 and sum(ns for _, ns in oracle) == TOTAL_NS and len(oracle) == 14
    sel = ncu_step.select_kernels(table, 5)
    assert sel["names"] == [n for n, _ in TOP5] and sel["names_total"] == 14 and sel["active"]
    assert sel["time_us_selected"] == pytest.approx(sum(ns for _, ns in TOP5) / 5 / 1e3, rel=1e-12)
    assert sel["time_us_total"] == pytest.approx(TOTAL_NS / 5 / 1e3, rel=1e-12)
    assert sel["time_share"] == pytest.approx(424359 / 632524, rel=1e-12)   # 0.6709
    every = ncu_step.select_kernels(table, 20)   # more than there are: no filter
    assert every["names_total"] == len(every["names"]) == 14 and not every["active"] and every["time_share"] == 1


def test_the_step_passes_ncu_the_name_filter(train_table, tmp_path):
    d = tmp_path / "r0"
    d.mkdir()
    (d / "timing.json").write_text(json.dumps({"status": "ok"}))
    shutil.copy(train_table[0], d / "kernels.csv")
    ncu = tmp_path / "ncu"
    ncu.write_text("#!/bin/sh\nexit 3\n")
    ncu.chmod(0o755)
    subprocess.run([sys.executable, PROFILE, "--run-dir", str(d), "--ncu", str(ncu), "--top-kernels", "5",
                    "--", "python"], env={**os.environ, "PYTHONPATH": ROOT}, check=True)
    rec = json.loads((d / "ncu.json").read_text())
    regex = "^(" + "|".join(n for n, _ in TOP5) + ")$"
    assert rec["settings"]["top_kernels"] == 5 and rec["selection"]["names"] == [n for n, _ in TOP5]
    assert rec["selection"]["filter"] == f"--kernel-name-base function --kernel-name 'regex:{regex}'"
    assert (f"--metrics {','.join(ncu_passes.BYTE_METRICS)} --kernel-name-base function "
            f"--kernel-name 'regex:{regex}' --force-overwrite -o ") in rec["steady"]["command"]
    # a range-replay pass replays whole iterations: no filter
    cold = ncu_step.ncu_command("ncu", ncu_passes.PASSES["cold"], "out", ["Kernel2"])
    assert "--kernel-name" not in cold and "--kernel-name" not in ncu_step.ncu_command(
        "ncu", ncu_passes.PASSES["steady"], "out", None)


def test_top_20_of_201_names_and_the_filter_matches_exactly_those(tmp_path):
    """resnet50's compiled training step on the H100 (tests/data/real_models_h100): 211
    kernels of 201 names; the regular expression against every name."""
    k = pd.read_csv(os.path.join(DATA, "real_models_h100", "kernels.csv"))
    run = k[(k["model"] == "resnet50") & (k["variant"] == "compile") & (k["mode"] == "train")]
    run.to_csv(tmp_path / "kernels.csv", index=False)
    by_name = {}
    with open(tmp_path / "kernels.csv") as f:
        for r in csv.DictReader(f):
            by_name[r["name"]] = by_name.get(r["name"], 0.0) + float(r["time_per_iter_us"])
    top = sorted(by_name, key=lambda n: (-by_name[n], n))[:20]
    sel = ncu_step.select_kernels(str(tmp_path / "kernels.csv"), 20)
    assert len(run) == 211 and sel["names_total"] == len(by_name) == 201 and sel["names"] == top
    assert sel["time_share"] == pytest.approx(sum(by_name[n] for n in top) / sum(by_name.values()), rel=1e-12)
    regex = ncu_step.name_filter(sel["names"])[-1].removeprefix("regex:")
    assert {n for n in by_name if re.search(regex, n)} == set(top)


def test_a_share_adds_names_until_they_carry_it(tmp_path):
    """The same step with top_share 0.8: the fewest names, in order of time, whose time is
    at least 80% of the whole, by hand from the table; never fewer than top_kernels; a
    share the top names already carry adds none."""
    k = pd.read_csv(os.path.join(DATA, "real_models_h100", "kernels.csv"))
    k[(k["model"] == "resnet50") & (k["variant"] == "compile") & (k["mode"] == "train")].to_csv(
        tmp_path / "kernels.csv", index=False)
    t = pd.read_csv(tmp_path / "kernels.csv").groupby("name")["time_per_iter_us"].sum()
    ranked = sorted(t.index, key=lambda n: (-t[n], n))
    cum = [sum(t[n] for n in ranked[:i]) for i in range(len(ranked) + 1)]
    need = next(i for i, c in enumerate(cum) if c >= 0.8 * t.sum())
    sel = ncu_step.select_kernels(str(tmp_path / "kernels.csv"), 20, 0.8)
    assert need > 20 and sel["names"] == ranked[:need] and sel["top_share"] == 0.8
    assert sel["time_share"] >= 0.8 > cum[need - 1] / t.sum()
    first = cum[20] / t.sum()   # what the 20 names carry: a lower share adds nothing
    assert ncu_step.select_kernels(str(tmp_path / "kernels.csv"), 20, first / 2)["names"] == ranked[:20]
    assert ncu_step.select_kernels(str(tmp_path / "kernels.csv"), 20, 1.0)["active"] is False   # every name
    assert ncu_plan.options({"top_kernels": 20, "top_share": 0.8})[-4:] == ["--top-kernels", "20", "--top-share", "0.8"]
    base = {"models": ["mlp"], "variants": ["eager"], "batch_sizes": [8]}
    with pytest.raises(sweep.ConfigError, match="top_share"):
        sweep.validate({**base, "ncu": {"top_kernels": 20, "top_share": 1.5}})


def test_a_name_with_regex_characters_matches_only_itself():
    names = ["void f<int>(float*)", "a.b", "x|y", "k[2]"]
    regex = ncu_step.name_filter(names)[-1].removeprefix("regex:")
    assert all(re.fullmatch(regex, n) for n in names)
    assert not any(re.search(regex, n) for n in ["axb", "x", "y", "k2", "void f<int>(float*)x"])


def test_no_kernel_table_profiles_every_kernel(tmp_path):
    sel = ncu_step.select_kernels(str(tmp_path / "kernels.csv"), 20)
    assert not sel["active"] and sel["names"] == [] and sel["reason"].startswith("no kernel table to select from")
    (tmp_path / "kernels.csv").write_text("name,time_per_iter_us\n")
    assert ncu_step.select_kernels(str(tmp_path / "kernels.csv"), 20)["reason"] == (
        "kernels.csv has no kernel time: every kernel profiled")


def test_the_plan_and_the_config_key():
    p = ncu_plan.plan({"enabled": "auto", "top_kernels": 20}, "cuda", "nsys", False, "ncu", ["a/r0"])
    assert p["top_kernels"] == 20 and p["options"][-2:] == ["--top-kernels", "20"]
    assert ncu_plan.plan({}, "cuda", "nsys", False, "ncu", ["a/r0"])["top_kernels"] == 0
    assert "--top-kernels" not in ncu_plan.options({})
    base = {"models": ["mlp"], "variants": ["eager"], "batch_sizes": [8]}
    assert sweep.validate(base)["ncu"]["top_kernels"] == 0
    assert sweep.validate({**base, "ncu": {"top_kernels": 20}})["ncu"]["top_kernels"] == 20
    with pytest.raises(sweep.ConfigError, match="top_kernels"):
        sweep.validate({**base, "ncu": {"top_kernels": -1}})


@pytest.mark.skipif(not ncu_report.available(), reason=ncu_report.MISSING_MODULE)
def test_a_selection_keeps_its_sums_apart_from_the_whole_iteration(tmp_path):
    """The oracle report (tests/data/ncu_h100) read once as every kernel, once as a
    selection: the same sums, under _selected names, the whole-iteration fields empty."""
    with gzip.open(os.path.join(DATA, "ncu_h100", "oracle.ncu-rep.gz")) as f, \
            open(tmp_path / "ncu_steady.ncu-rep", "wb") as g:
        shutil.copyfileobj(f, g)
    step = {"status": "ok", "reason": None, "settings": {"iterations": 4},
            "steady": {"status": "ok", "reason": None, "report": "ncu_steady.ncu-rep", "passes": 1, "iterations": 4}}
    (tmp_path / "ncu.json").write_text(json.dumps(step))
    whole, _ = run_traffic.compute(str(tmp_path / "ncu.json"))
    selection = {"top_kernels": 20, "names": ["vectorized_elementwise_kernel"], "time_share": 0.87,
                 "names_total": 300, "active": True}
    (tmp_path / "ncu.json").write_text(json.dumps({**step, "selection": selection}))
    row, kernels = run_traffic.compute(str(tmp_path / "ncu.json"))
    assert whole["dram_bytes_measured"] > 0 and whole["ncu_kernels_selected"] is None
    for f in run_traffic.SELECTED:
        assert row[f] is None and row[f + "_selected"] == whole[f]
    assert row["ncu_kernels_selected"] == ["vectorized_elementwise_kernel"]
    assert row["ncu_kernel_count_selected"] == 1 and row["ncu_time_share_selected"] == 0.87
    assert ("Nsight Compute profiled the 1 kernel names that carry 87% of the kernel time "
            "(ncu.top_kernels 20, of 300)") in row["ncu_note"]
    # the tables: the names in one cell, no whole-iteration bytes, so the model's
    d = tmp_path / "run"
    d.mkdir()
    keys = dict(model="gpt2", variant="eager", batch=8, size="default", mode="inference", dtype="bfloat16",
                backend="nsys", device="cuda")
    (d / "metrics.json").write_text(json.dumps(keys))
    (d / run_traffic.RUN_FILE).write_text(json.dumps({**row, "ncu_kernels_selected": ["a", "b"]}))
    runs = traffic.add_to_runs(pd.DataFrame([{**keys, "repeat": 0, "status": "ok", "bytes_fused": 1e6,
                                              "bytes_unfused": 1e7, "flops": 1.0}]),
                               traffic.traffic_files([str(d / "metrics.json")]))
    r = runs.iloc[0]
    assert r["ncu_kernels_selected"] == "a; b" and r["ncu_time_share_selected"] == 0.87
    assert pd.isna(r["dram_bytes_measured"]) and r["bytes_source"] == "model"
    assert r["dram_bytes_measured_selected"] == whole["dram_bytes_measured"]


def test_the_summary_says_which_runs_nsight_compute_covered_in_part():
    """Three runs of one sweep: one with every kernel measured, one whose step profiled the
    20 names that carry 99.97% of its kernel time, one the step never reached. The traffic
    section lists the second with its share (never rounded up to 100%) and the third with
    its status; a sweep without Nsight Compute says neither."""
    from fusionlab.analysis.report.traffic_text import traffic_md
    base = {"variant": "compile", "batch": 32, "size": "default", "mode": "inference", "dtype": "bfloat16",
            "repeat": 0, "status": "ok", "bytes_fused": 1e8, "bytes_unfused": 2e8}
    runs = pd.DataFrame([
        {**base, "model": "bert", "ncu_status": "ok", "dram_bytes_measured": 2.5e8},
        {**base, "model": "resnet50", "ncu_status": "ok", "dram_bytes_measured": None, "ncu_kernel_count_selected": 20,
         "ncu_time_share_selected": 0.99966, "dram_bytes_measured_selected": 2.33e10},
        {**base, "model": "vit", "ncu_status": "not run", "dram_bytes_measured": None}])
    md = "\n".join(traffic_md(runs, pd.DataFrame(columns=["variant"])))
    assert "1 run where Nsight Compute profiled only the kernel names" in md
    assert "| resnet50 | compile | 32 | 20 | 99.9% | 23300.0 |" in md
    assert "1 run without an Nsight Compute record" in md and "| vit | compile | 32 | not run |" in md
    off = runs.assign(ncu_status="not run", dram_bytes_measured=None, ncu_time_share_selected=None)
    md = "\n".join(traffic_md(off, pd.DataFrame(columns=["variant"])))
    assert "profiled only" not in md and "without an Nsight Compute record" not in md
