"""The analysis on real nsys reports (checked against the `nsys stats` CSVs of
the same file) and on small tables whose answers are known exactly."""
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.run import fusion, metrics
from fusionlab.analysis.readers import nsys_sqlite
from fusionlab.analysis.sweep import headline, stats, tables
import metrics_oracle
from test_nsys_reader import GPU
from test_nsys_reader import stats as csv


@pytest.mark.parametrize("name", GPU)
def test_kernel_table_matches_nvtx_kern_sum_per_kernel(report, name):
    t = nsys_sqlite.load(report(name))
    k = metrics.kernel_table(t).set_index("full_name")
    nk = csv(name, "nvtx_kern_sum")
    nk = nk[nk["NVTX Range"] == "fusionlab:measure"].set_index("Kernel Name")
    assert set(k.index) == set(nk.index)
    for kname, row in nk.iterrows():
        assert k.loc[kname, "calls"] == row["Kern Inst"]
        assert round(k.loc[kname, "total_us"] * 1e3) == row["Total Time (ns)"]
        assert k.loc[kname, "median_us"] * 1e3 == pytest.approx(row["Med (ns)"], abs=0.5)


@pytest.mark.parametrize("name", GPU)
def test_launch_path_matches_kern_exec_sum(report, name):
    """API, queue and kernel durations per kernel (cuda_kern_exec_sum: AMed, QMed, KMed)."""
    t = nsys_sqlite.load(report(name))
    ex = csv(name, "kern_exec_sum")
    for _, row in ex.iterrows():
        k = t.kernels[t.kernels["full_name"] == row["Kernel Name"]]
        assert len(k) == row["Count"]
        lp = metrics_oracle.launch_path(k)
        assert lp["launch_api_us"] * 1e3 == pytest.approx(row["AMed (ns)"], abs=0.5)
        assert float(np.median(k["end"] - k["start"])) == pytest.approx(row["KMed (ns)"], abs=0.5)
        q = k["start"] - k["launch_end"]
        assert int((q >= 0).sum()) == row["QCount"]
        if row["QCount"]:
            assert lp["queue_us"] * 1e3 == pytest.approx(row["QMed (ns)"], abs=0.5)


@pytest.mark.parametrize("name", GPU)
def test_idle_breakdown_adds_up(report, name):
    m = metrics.range_metrics(nsys_sqlite.load(report(name)), "measure")
    total = m["gpu_busy_fraction"] + m["idle_host_wait_frac"] + m["idle_kernel_wait_frac"] + m["idle_other_frac"]
    assert total == pytest.approx(1.0, abs=1e-12)
    assert m["bound"] == "cpu"   # all four recorded runs are small and host-bound (busy < 15%)
    assert 0 <= m["short_kernel_share"] <= 1


def test_idle_breakdown_by_hand():
    # range [0, 100] ns, three kernels (start, end, launch start)
    k = pd.DataFrame({"start": [10, 23, 60], "end": [20, 40, 70], "launch_start": [0, 15, 45]})
    out = metrics_oracle.idle_breakdown(k, 0, 100, kernel_wait_us=0.005)   # 5 ns threshold
    # gap 0->10: launch 0 not after 0, 10 ns > 5 ns -> other; 20->23: launch 15 < 20, 3 ns -> kernel wait;
    # 40->60: launch 45 > 40 -> host wait 20; tail 70->100 -> other 30
    assert out == {"host_wait": 20, "kernel_wait": 3, "other": 40}


def test_fusion_names():
    assert fusion.classify("triton_poi_fused_add_relu_0") == ("pointwise", ["add", "relu"])
    assert fusion.classify("triton_per_fused__softmax_1") == ("persistent reduction", ["_softmax"])
    assert fusion.classify("triton_red_fused_native_layer_norm_2") == ("reduction", ["native_layer_norm"])
    assert fusion.classify("cpp_fused_add_relu_0") == ("cpp", ["add", "relu"])
    assert fusion.classify("aten::addmm") == ("aten", ["addmm"])
    assert fusion.classify("x", "void at::native::vectorized_elementwise_kernel<(int)4, "
                           "at::native::sin_kernel_cuda(at::TensorIteratorBase &)") == ("eager", ["sin"])
    assert fusion.classify("Kernel2", "void cutlass::Kernel2<cutlass_80_simt_sgemm>") == ("library", ["mm"])
    assert fusion.classify("weird_kernel") == ("other", ["weird_kernel"])


def test_fusion_map_and_diff_pointwise(report):
    """Eager's 35 kernels per iteration (12 distinct) against compile's one fused kernel."""
    e = fusion.annotate(metrics.kernel_table(nsys_sqlite.load(report("nsys2025_h200/pointwise_heavy_eager"))))
    c = fusion.annotate(metrics.kernel_table(nsys_sqlite.load(report("nsys2025_h200/pointwise_heavy_compile"))))
    assert e["calls_per_iter"].sum() == 35 and len(e) == 12
    assert set(e["ops"]) == {"mul", "add", "cos", "sin", "sigmoid", "tanh", "clamp", "div", "abs"}
    assert c["ops"].tolist() == ["abs+add+cos+div+mul+relu+sigmoid+sin+tanh"] and c["n_ops"].tolist() == [9]
    d = fusion.kernel_diff(e, c)
    assert (d["class"] == "deleted").sum() == 12 and (d["class"] == "added").sum() == 1


def _runs(wall):
    rows = []
    for (model, variant, batch), ts in wall.items():
        for i, w in enumerate(ts):
            rows.append(dict(model=model, variant=variant, batch=batch, mode="inference", dtype="float32",
                             repeat=i, backend="nsys", device="cuda", status="ok", reason=None,
                             wall_time_per_iter_ms=w, gpu_time_per_iter_ms=w / 2, kernels_per_iter=10,
                             compile_latency_s=0.0, peak_memory_bytes=100))
    return pd.DataFrame(rows)


def test_speedups_cis_and_noisy_flag():
    runs = _runs({("m", "eager", 8): [2.0, 2.0, 2.0], ("m", "compile", 8): [1.0, 1.0, 1.0],
                  ("m", "eager", 64): [2.0, 2.0, 2.0], ("m", "compile", 64): [1.0, 1.5, 0.5]})
    runs.loc[(runs.variant == "compile"), "kernels_per_iter"] = 2
    sp = tables.speedups(runs, noise_cv=0.05).set_index(["variant", "batch"])
    a, b = sp.loc[("compile", 8)], sp.loc[("compile", 64)]
    assert a.speedup_wall == 2.0 and a.speedup_wall_lo == 2.0 and a.speedup_wall_hi == 2.0
    assert not a.noisy and a.cv_wall == 0.0
    assert b.speedup_wall == 2.0          # the median, not the mean of the noisy repeats
    assert b.cv_wall == pytest.approx(0.5) and b.noisy
    assert b.speedup_wall_lo < 2.0 < b.speedup_wall_hi
    assert a.kernel_reduction == 5.0 and a.repeats == 3
    assert not sp.loc[("eager", 8)].noisy


@pytest.mark.parametrize("column", ["backend", "device", "dtype", "batch"])
def test_a_missing_key_value_still_finds_its_eager(column):
    # a key read as NaN (a blank cell) groups as one value: the variant finds the eager
    # beside it in the speedups and in the headline, not nothing
    runs = _runs({("m", "eager", 8): [2.0, 2.0], ("m", "compile", 8): [1.0, 1.0]})
    runs[column] = np.nan
    sp = tables.speedups(runs).set_index("variant")
    assert sp.loc["compile", "speedup_wall"] == 2.0
    head = headline.table(runs, sp.reset_index())
    assert head.set_index("variant").loc["compile", "speedup"] == 2.0


def test_failed_repeat_is_listed_not_averaged():
    runs = _runs({("m", "eager", 8): [2.0, 2.0], ("m", "compile", 8): [1.0, 1.0]})
    runs.loc[(runs.variant == "compile") & (runs.repeat == 1), ["status", "reason"]] = ["oom", "CUDA out of memory"]
    r = tables.speedups(runs).set_index("variant").loc["compile"]
    assert r.status == "ok,oom" and r.repeats_ok == 1 and "out of memory" in r.reason


def test_crossover():
    start, stop, note = stats.crossover([128, 1024, 4096], [0.5, 0.8, 1.6])
    assert start == pytest.approx(2 ** (10 + 0.25 * 2)) and np.isnan(stop)
    assert note == "starts to beat eager between batch 1024 and 4096 and still beats it at batch 4096"
    assert stats.crossover([8, 32], [1.1, 1.2])[:1] == (8,)
    start, stop, note = stats.crossover([8, 32], [0.5, 0.9])
    assert np.isnan(start) and np.isnan(stop) and note == "does not beat eager at any swept batch (8 to 32)"


def test_crossover_reads_the_paired_speedups_where_every_value_was_paired():
    """The host ran slow for compile's processes at batch 1024 (across processes 0.8x)
    while within each process compile won (paired 1.3x): the crossover follows the paired
    speedups, and falls back to those across processes where one value was not paired."""
    sp = pd.DataFrame({"model": "m", "variant": "compile", "mode": "inference", "dtype": "float32",
                       "backend": "nsys", "device": "cuda", "size": "default", "batch": [128, 1024, 4096],
                       "speedup_wall": [0.5, 0.8, 1.6], "speedup_wall_lo": np.nan, "speedup_wall_hi": np.nan,
                       "speedup_paired": [0.5, 1.3, 1.6], "speedup_paired_lo": np.nan, "speedup_paired_hi": np.nan})
    c = tables.crossover(sp).iloc[0]
    assert c["speedup_source"] == "paired" and c["starts_at"] == pytest.approx(2 ** (7 + 0.625 * 3))
    c = tables.crossover(sp.assign(speedup_paired=[0.5, np.nan, 1.6])).iloc[0]
    assert c["speedup_source"] == "across processes" and c["starts_at"] == pytest.approx(2 ** (10 + 0.25 * 2))


def test_crossover_start_and_stop_along_any_axis():
    """A fused kernel that wins at small dim and loses at large: where it starts and stops
    (linear in log2 between the swept values)."""
    start, stop, note = stats.crossover([256, 1024, 4096], [1.5, 1.2, 0.8], axis="dim")
    assert start == 256 and stop == pytest.approx(2 ** (10 + 0.5 * 2))
    assert note == "beats eager from dim 256, stops between dim 1024 and 4096"
    start, stop, note = stats.crossover([256, 1024, 4096], [0.8, 1.2, 0.9], axis="num_layers")
    assert start == pytest.approx(2 ** (8 + 0.5 * 2)) and stop == pytest.approx(2 ** (10 + 2 / 3 * 2))
    assert note == ("starts to beat eager between num_layers 256 and 1024, "
                    "stops between num_layers 1024 and 4096")


def test_model_cost_mlp_exact():
    from fusionlab.experiments.cost import count
    c = count("mlp", 128)
    assert c["flops"] == 2 * (128 * 1 * 1024 + 128 * 1024 * 1024 + 128 * 1024 * 1)
    params = 1 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 + 1
    assert c["bytes_fused"] == 4 * (128 + params + 128)
    assert c["bytes_unfused"] > c["bytes_fused"]
    p = count("pointwise_heavy", 128)
    assert p["flops"] == 0 and p["flops_pointwise"] > 0    # on the roofline all the same


def test_crossover_names_the_values_where_the_ci_includes_one():
    """A median above 1 whose CI includes 1 is a tie, and the note says so (the matmul of
    seed 004: compile 'beats' eager at dim 16384 by 0.2%, CI 0.999-1.005)."""
    dims, med = [2048, 4096, 8192, 16384], [0.997, 0.994, 0.999, 1.002]
    lo, hi = [0.974, 0.993, 0.9985, 0.999], [1.021, 0.996, 0.9995, 1.005]
    start, stop, note = stats.crossover(dims, med, axis="dim", lo=lo, hi=hi)
    assert start == pytest.approx(2 ** (13 + 1 / 3)) and np.isnan(stop)
    assert note == ("starts to beat eager between dim 8192 and 16384 and still beats it at dim 16384; "
                    "not distinguishable from eager (95% CI includes 1) at dim 2048, 16384")
    assert stats.ties(dims, lo, hi) == [2048.0, 16384.0]
    assert stats.ties(dims, [np.nan] * 4, hi) == []
    sp = pd.DataFrame({"model": "m", "variant": "compile", "mode": "train", "dtype": "float32",
                       "backend": "nsys", "device": "cuda", "batch": 1, "dim": dims, "size": [f"dim{d}" for d in dims],
                       "speedup_wall": med,
                       "speedup_wall_lo": lo, "speedup_wall_hi": hi})
    row = tables.crossover(sp).iloc[0]
    assert row["axis"] == "dim" and row["ties"] == "2048 16384" and row["note"] == note


def test_crossover_spans_list_every_interval():
    """matmul_heavy in the default sweep: compile wins at 128, loses at 1024, wins at 4096;
    starts_at is the last start, spans lists both intervals."""
    vals, med = [128, 1024, 4096], [1.71, 0.99, 1.03]
    start, stop, note = stats.crossover(vals, med)
    assert stats.spans(vals, med) == f"128-{stats._cross((128, 1.71), (1024, 0.99)):.0f}, {start:.0f}+"
    assert note.startswith("beats eager from batch 128, stops between batch 128 and 1024; starts to beat")
    assert stats.spans([8, 32], [0.5, 0.9]) == "" and stats.spans([8, 32], [1.2, 1.3]) == "8+"


def test_fixed_label_round_trip():
    label = tables.fixed_label({"batch": 256.0, "dim": 1024})
    assert label == "batch=256 dim=1024"
    assert tables.parse_fixed_label(label) == {"batch": 256.0, "dim": 1024.0}
    assert tables.parse_fixed_label("") == {} and tables.parse_fixed_label(float("nan")) == {}


@pytest.mark.parametrize("name", GPU)
def test_gpu_busy_time_is_the_union_and_the_sum_on_one_stream(report, name):
    # the recorded runs launch on one stream: no two kernels overlap, so the union of their
    # intervals (busy time) is their summed duration (nsys's Total Time), to the nanosecond
    # clipped at the range's edges at most
    m = metrics.range_metrics(nsys_sqlite.load(report(name)), "measure")
    assert m["gpu_busy_per_iter_ms"] == pytest.approx(m["gpu_busy_fraction"] * m["duration_ms"] / m["iterations"])
    assert m["gpu_busy_per_iter_ms"] <= m["gpu_time_per_iter_ms"] + 1e-12
    assert m["gpu_busy_per_iter_ms"] == pytest.approx(m["gpu_time_per_iter_ms"], rel=1e-3)


def test_overlapping_kernels_count_once_in_busy_time():
    # two streams: [0, 100) and [50, 150) overlap by 50; then [200, 250)
    assert metrics_oracle.union_ns([0, 50, 200], [100, 150, 250]) == 200
    assert metrics_oracle.union_ns([0, 50, 200], [100, 150, 250], lo=60, hi=220) == 110


def test_achieved_rates_use_the_busy_time(tmp_path):
    import json
    base = {"model": "lstm_cell", "variant": "cudnn_lstm", "batch": 1024, "mode": "inference", "dtype": "float32",
            "size": "default", "repeat": 0, "backend": "nsys", "device": "cuda", "status": "ok",
            "gpu_time_per_iter_ms": 0.5,
            "bytes_fused": 1e6, "flops": 2e9}
    for name, extra in (("new", {"gpu_busy_per_iter_ms": 0.4}), ("old", {})):   # old: a record without it
        (tmp_path / f"{name}.json").write_text(json.dumps({**base, **extra, "repeat": int(name == "old")}))
    df = tables.runs_table([str(tmp_path / "new.json"), str(tmp_path / "old.json")], peaks={"copy_bandwidth_Bps": 1e10})
    new, old = df.sort_values("repeat")["achieved_bandwidth_Bps"].tolist()
    assert new == pytest.approx(1e6 / 0.4e-3) and old == pytest.approx(1e6 / 0.5e-3)
    assert df.sort_values("repeat")["achieved_flops"].tolist()[0] == pytest.approx(2e9 / 0.4e-3)


def test_a_run_still_warming_up_is_named_in_the_summary():
    from fusionlab.analysis.run import run_metrics
    from fusionlab.analysis.report import summary
    # lenet5 x compile_reduce_overhead on the H100 zoo: its windows fell all the way
    w = [0.374, 0.319, 0.186, 0.148, 0.128]
    assert run_metrics.last_window_ratio(w) == pytest.approx(0.128 / 0.186)
    assert run_metrics.last_window_ratio([1.0, 2.0]) is None
    assert run_metrics.timing_fields({}, {"timing": {"untraced_wall_time_per_iter_ms": 0.186, "windows_ms": w}},
                                     None)["untraced_last_window_ratio"] == pytest.approx(0.128 / 0.186)
    runs = pd.DataFrame({"model": ["lenet5", "mlp"], "variant": ["compile_reduce_overhead", "eager"],
                         "batch": [128, 128], "size": ["default", "default"], "repeat": [0, 0],
                         "status": ["ok", "ok"], "untraced_wall_time_per_iter_ms": [0.186, 0.05],
                         "untraced_last_window_ratio": [0.128 / 0.186, 0.97]})
    text = "\n".join(summary.unsteady_md(runs))
    assert "Runs still warming up" in text and "compile_reduce_overhead" in text and "| mlp" not in text
    assert summary.unsteady_md(runs.assign(untraced_last_window_ratio=1.0)) == []
    # H100, grid f: pointwise_heavy eager at 256, windows 0.914 0.454 0.291 0.495 0.315 while
    # the host probe went 0.169 ... 0.074: the host sped up, not the process
    probe = [0.169, 0.166, 0.143, 0.081, 0.126, 0.074]
    f = run_metrics.timing_fields({}, {"timing": {"untraced_wall_time_per_iter_ms": 0.454, "host_probe_ms": probe,
                                                  "windows_ms": [0.914, 0.454, 0.291, 0.495, 0.315]}}, None)
    assert f["untraced_last_probe_ratio"] == pytest.approx(0.074 / 0.1345)
    host = runs.assign(untraced_last_probe_ratio=[0.55, 1.0])
    assert summary.unsteady_md(host) == []
    text = "\n".join(summary.unsteady_md(pd.concat([host, runs.assign(untraced_last_probe_ratio=[1.0, 1.0])],
                                                    ignore_index=True)))
    assert "1 more ended as fast" in text and text.count("| lenet5") == 1


def test_the_paired_speedup_is_the_median_over_repeats():
    runs = pd.DataFrame({"model": "m", "batch": 8, "size": "default", "mode": "inference", "dtype": "float32",
                         "backend": "nsys", "device": "cuda", "status": "ok", "reason": None,
                         "variant": ["eager"] * 3 + ["compile"] * 3, "repeat": [0, 1, 2] * 2,
                         "wall_time_per_iter_ms": [0.3, 0.45, 0.3, 0.06, 0.06, 0.09],
                         "gpu_time_per_iter_ms": 0.05, "kernels_per_iter": 1.0, "profiler_overhead": 1.0,
                         "peak_memory_bytes": 1.0, "compile_latency_s": 0.0,
                         "paired_speedup": [None, None, None, 4.8, 5.0, 5.3]})
    sp = tables.speedups(runs).set_index("variant")
    assert sp.loc["compile", "speedup_paired"] == 5.0 and sp.loc["eager", "speedup_paired"] == 1.0
    unpaired = tables.speedups(runs.assign(paired_speedup=None)).set_index("variant")   # paired_eager: false
    assert unpaired["speedup_paired"].isna().all()
    assert sp.loc["compile", "cv_paired"] == pytest.approx(pd.Series([4.8, 5.0, 5.3]).std() / pd.Series([4.8, 5.0, 5.3]).mean())
    assert sp.loc["compile", "speedup_paired_lo"] <= 5.0 <= sp.loc["compile", "speedup_paired_hi"]
    # noisy_paired: cv_paired (0.050) over the threshold, as `noisy` is for the wall times
    strict = tables.speedups(runs, noise_cv=0.04).set_index("variant")
    loose = tables.speedups(runs, noise_cv=0.06).set_index("variant")
    assert strict.loc["compile", "noisy_paired"] and not loose.loc["compile", "noisy_paired"]
    assert sp.loc["compile", "speedup_wall"] == pytest.approx(0.3 / 0.06)
    from fusionlab.analysis.run import run_metrics
    from fusionlab.analysis.report import summary
    from fusionlab.analysis.sweep import headline
    # the headline speedup alone, its interval named: a 95% t interval over the 3 processes
    # (by hand: exp(mean(log x) -+ 4.303 sd(log x) / sqrt(3)) = [4.44, 5.69])
    assert "| compile | 5.00x paired [4.44, 5.69] 95% t over 3 processes, faster, noisy |" in \
        "\n".join(summary.speedup_md(headline.table(runs, strict.reset_index())))
    cell = "\n".join(summary.speedup_md(headline.table(runs, sp.reset_index())))
    assert "| compile | 5.00x paired [4.44, 5.69] 95% t over 3 processes, faster |" in cell and "across" not in cell.split("|", 3)[-1]
    assert "| compile | 5.00x across processes [" in \
        "\n".join(summary.speedup_md(headline.table(runs.assign(paired_speedup=None), unpaired.reset_index())))
    # across processes within PAIRED_GAP of paired: not listed; a host that ran at another
    # speed for eager's processes (across 2.5x against paired 5x): listed, with the ratio
    assert summary.host_moved_md(sp.reset_index()) == []
    moved = tables.speedups(runs.assign(wall_time_per_iter_ms=[0.3] * 3 + [0.12] * 3,
                                        host_slowdown=[1.0] * 3 + [2.0] * 3))
    text = "\n".join(summary.host_moved_md(moved))
    assert "1 of 1 paired speedups" in text and "| m | compile | 8 | 5.0 | 2.5 | 0.5 | 2.0 | 1.0 |" in text
    assert moved.set_index("variant")["host_moved"].to_dict() == {"compile": True, "eager": False}
    # as far apart, but inside the CI of the speedup across processes: not listed
    wide = tables.speedups(runs.assign(wall_time_per_iter_ms=[0.3, 0.9, 0.3, 0.12, 0.06, 0.12]))
    lo, hi = wide.set_index("variant").loc["compile", ["speedup_wall_lo", "speedup_wall_hi"]]
    assert lo <= 5.0 <= hi and summary.host_moved_md(wide) == [] and not wide["host_moved"].any()
    # eager failed in its own processes: the paired speedup leads the cell alone
    alone = sp.reset_index().assign(speedup_wall=lambda d: d["speedup_wall"].where(d["variant"] == "eager"))
    assert "| compile | 5.00x paired [" in "\n".join(summary.speedup_md(headline.table(runs, alone)))
    assert summary.host_moved_md(alone) == []
    assert run_metrics.timing_fields({}, {"timing": {"untraced_wall_time_per_iter_ms": 0.06, "paired_speedup": 5.0}},
                                     None)["paired_speedup"] == 5.0


def test_a_paired_variant_keeps_its_speedup_where_eager_has_no_run_of_its_own():
    """A sweep stopped before eager's own run: the variant timed eager beside it, so its
    speedup, eager time and time saved stand; the parts of the time saved, which need
    eager's own run, stay empty. Unpaired, it has no speedup."""
    from fusionlab.analysis.sweep import headline
    runs = pd.DataFrame({"model": "m", "batch": 8, "size": "default", "mode": "inference", "dtype": "float32",
                         "backend": "nsys", "device": "cuda", "status": "ok", "reason": None,
                         "variant": "compile", "repeat": [0, 1, 2], "wall_time_per_iter_ms": [0.06, 0.06, 0.09],
                         "gpu_time_per_iter_ms": 0.05, "kernels_per_iter": 1.0, "profiler_overhead": 1.0,
                         "peak_memory_bytes": 1.0, "compile_latency_s": 0.0, "paired_speedup": [4.8, 5.0, 5.3]})
    h = headline.table(runs, tables.speedups(runs)).set_index("variant").loc["compile"]
    assert (h["estimator"], h["speedup"], h["verdict"]) == ("paired", 5.0, "faster")
    assert h["eager_wall_ms"] == pytest.approx(0.06 * 5.0) and h["saved_ms"] == pytest.approx(0.06 * 4.0)
    assert h["reference"] == headline.BESIDE_ONLY and pd.isna(h["traffic_ms"]) and pd.isna(h["host_saved_ms"])
    unpaired = runs.assign(paired_speedup=None)
    assert pd.isna(headline.table(unpaired, tables.speedups(unpaired)).loc[0, "speedup"])
    from fusionlab.analysis.report import audit, story
    assert story.comes_from(h) == "240 us per iteration saved (not split into parts: eager has no run of its own)"
    assert "saving 240 us: not split into parts: eager has no run of its own." in \
        "\n".join(story.saved_md(headline.table(runs, tables.speedups(runs))))
    a = audit.Audit()
    audit.check_records(a, headline.table(runs, tables.speedups(runs)))
    assert a.violations == []
    a = audit.Audit()   # a part of the time saved with no eager run to split it from: a contradiction
    audit.check_records(a, headline.table(runs, tables.speedups(runs)).assign(traffic_ms=0.1))
    assert len(a.violations) == 1 and "without an eager run of its own" in a.violations[0]


def test_a_run_timed_on_a_slow_host_is_named_in_the_summary(tmp_path):
    import json
    from fusionlab.analysis.run import run_metrics
    from fusionlab.analysis.report import summary
    # the H100 machine's two host speeds: the probe at 0.073 or 0.13-0.15 ms per pass
    f = run_metrics.probe_fields([0.073, 0.075, 0.140, 0.074])
    assert f["host_probe_ms"] == pytest.approx(0.0745)
    assert f["host_probe_cv"] == pytest.approx(pd.Series([0.073, 0.075, 0.140, 0.074]).std() / 0.0905)
    assert run_metrics.probe_fields(None) == {"host_probe_ms": None, "host_probe_cv": None}
    assert run_metrics.timing_fields({}, {"timing": {"untraced_wall_time_per_iter_ms": 0.3, "host_probe_ms": [0.1, 0.2, 0.3]}},
                                     None)["host_probe_ms"] == pytest.approx(0.2)
    base = {"backend": "nsys", "device": "cuda", "status": "ok", "model": "pointwise_heavy", "batch": 256,
            "mode": "inference", "dtype": "float32", "size": "default", "repeat": 0,
            "untraced_wall_time_per_iter_ms": 0.3}
    rows = [("eager", "a", 0.073), ("compile", "a", 0.146), ("eager", "b", 0.2), ("compile", "b", None)]
    for i, (variant, host, probe) in enumerate(rows):
        (tmp_path / f"{i}.json").write_text(json.dumps({**base, "variant": variant, "host": host, "host_probe_ms": probe}))
    df = tables.runs_table([str(tmp_path / f"{i}.json") for i in range(4)])
    got = {(r.variant, r.host): r.host_slowdown for r in df.itertuples()}
    assert got[("eager", "a")] == 1 and got[("compile", "a")] == pytest.approx(2.0)
    assert got[("eager", "b")] == 1 and pd.isna(got[("compile", "b")])     # per host; none without a probe
    text = "\n".join(summary.slow_host_md(df))
    assert "Runs timed while the host ran slow" in text and text.count("| pointwise_heavy") == 1
    assert "1 of 3 runs" in text and "slowest" not in text
    many = pd.concat([df] * 10, ignore_index=True)
    text = "\n".join(summary.slow_host_md(many, top=4))
    assert "10 of 30 runs" in text and "The 4 slowest" in text and text.count("| pointwise_heavy") == 4
    assert summary.slow_host_md(df.assign(host_slowdown=1.0)) == []


def test_compare_two_sweeps_joins_both_speedups(tmp_path, capsys):
    """Two real sweeps' tables (grid f on the H100 before paired_eager, on 2 x H200 with it):
    each configuration's wall times and ratio, and both speedups; the older sweep's paired
    speedups are empty, not an error."""
    from fusionlab.analysis.__main__ import main
    for name, src in (("a", "h100-untraced"), ("b", "h200x2-untraced")):
        os.makedirs(tmp_path / name / "tables")
        shutil.copy(os.path.join(os.path.dirname(__file__), "data", "sweeps", src, "grid-f", "speedups.csv"),
                    tmp_path / name / "tables" / "speedups.csv")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out")]) == 0
    m = pd.read_csv(tmp_path / "out" / "compare.csv").set_index(["model", "variant", "batch"])
    r = m.loc[("pointwise_heavy", "eager", 2048)]
    assert r["time_ratio_wall"] == pytest.approx(r["wall_time_per_iter_ms_b"] / r["wall_time_per_iter_ms_a"])
    assert m["speedup_paired_a"].isna().all() and len(m) == 8
    assert m.loc[("mlp", "compile_reduce_overhead", 256), "speedup_paired_b"] == pytest.approx(1.166578, abs=1e-6)
    assert "speedup_paired_b" in capsys.readouterr().out


def test_host_sensitive_paired_speedups_and_the_harness_cost_reach_the_summary():
    """A run whose paired speedup the host's state moved (timing.host_states: fast 1.13x,
    slow 0.66x, as mlp compile at 2048 on the H200) is listed with both values, and the
    summary does not say the paired speedups cancel the host's speed; the timing
    loop's own cost per iteration reaches runs.csv, speedups.csv and the summary."""
    from fusionlab.analysis.run import run_metrics
    from fusionlab.analysis.report import summary
    timing = {"untraced_wall_time_per_iter_ms": 0.15, "paired_speedup": 0.9, "harness_us_per_iter": 0.12,
              "paired_speedup_fast_host": 1.13, "paired_speedup_slow_host": 0.66, "paired_host_sensitive": True,
              "paired_stop": "time_cap"}
    f = run_metrics.timing_fields({}, {"timing": timing}, None)
    assert (f["harness_us_per_iter"], f["paired_speedup_fast_host"], f["paired_speedup_slow_host"],
            f["paired_host_sensitive"], f["paired_stop"]) == (0.12, 1.13, 0.66, True, "time_cap")
    runs = pd.DataFrame({"model": "mlp", "batch": 2048, "size": "default", "mode": "inference", "dtype": "float32",
                         "backend": "nsys", "device": "cuda", "status": "ok", "reason": None,
                         "variant": ["eager", "eager", "compile", "compile"], "repeat": [0, 1, 0, 1],
                         "wall_time_per_iter_ms": [0.137, 0.137, 0.15, 0.2], "untraced_wall_time_per_iter_ms":
                         [0.137, 0.137, 0.15, 0.2], "gpu_time_per_iter_ms": 0.1, "kernels_per_iter": 1.0,
                         "profiler_overhead": 1.0, "peak_memory_bytes": 1.0, "compile_latency_s": 0.0,
                         "paired_speedup": [None, None, 0.9, 0.87], "harness_us_per_iter": [0.1, 0.1, 0.12, 0.14],
                         "paired_speedup_fast_host": [None, None, 1.13, 1.12],
                         "paired_speedup_slow_host": [None, None, 0.66, 0.7],
                         "paired_host_sensitive": [None, None, True, False]})
    sp = tables.speedups(runs)
    c = sp.set_index("variant").loc["compile"]
    assert (c["speedup_paired_fast_host"], c["speedup_paired_slow_host"]) == (pytest.approx(1.125), pytest.approx(0.68))
    assert c["paired_host_sensitive"] and not sp.set_index("variant").loc["eager", "paired_host_sensitive"]
    text = "\n".join(summary.host_sensitive_md(sp))
    assert "## Paired speedups the host's state moved" in text and "| mlp | compile | 2048 | 0.885 | 1.125 | 0.68 |" in text
    assert summary.host_sensitive_md(sp.assign(paired_host_sensitive=False)) == []
    harness = "\n".join(summary.harness_md(runs))
    assert "0.11 us per iteration (median over 4 runs; at most 0.14)" in harness
    slow = "\n".join(summary.slow_host_md(runs.assign(host_slowdown=[1.0, 1.0, 1.0, 2.0], host_probe_ms=0.1)))
    assert "The paired speedups cancel it" not in slow and "only where the variant and eager" in slow
