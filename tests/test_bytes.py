"""DRAM bytes with their spread (analysis.run.traffic, analysis.sweep.traffic) on the
reports recorded on the H100 (tests/data/ncu_h100: `y = x * 2` on 1 MiB, 4 launches, one
per iteration; hand counts from its oracles.json), and the step's passes (fake ncu that
copies the recorded report)."""
import gzip
import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from fusionlab.analysis.readers import ncu_report
from fusionlab.analysis.run import traffic as run_traffic
from fusionlab.analysis.sweep import traffic
from fusionlab.core import ncu_passes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "data", "ncu_h100")
PROFILE = os.path.join(ROOT, "workflow", "scripts", "ncu_profile.py")
needs_module = pytest.mark.skipif(not ncu_report.available(), reason=ncu_report.MISSING_MODULE)
# oracles.json "small": each launch's DRAM read + write (one launch an iteration)
PER_ITER = [7168 + 91904, 2048 + 46848, 1792 + 38400, 2560 + 39168]


def _unpack(name, out):
    with gzip.open(os.path.join(FIXTURE, f"{name}.ncu-rep.gz")) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return str(out)


def _step_dir(tmp_path, passes=("steady", "cold", "range")):
    ok = {"status": "ok", "reason": None, "passes": 1}
    rec = {"status": "ok", "reason": None, "settings": {"iterations": 4}, "passes": list(passes)}
    for p in passes:
        _unpack("oracle_range" if p in ("range", "cold") else "oracle", tmp_path / ncu_passes.PASSES[p].report)
        rec[p] = {**ok, "report": ncu_passes.PASSES[p].report, "iterations": 4}
    (tmp_path / "ncu.json").write_text(json.dumps(rec))
    return str(tmp_path / "ncu.json")


@needs_module
def test_steady_bytes_are_the_median_and_range_of_the_iterations(tmp_path):
    row, kernels = run_traffic.compute(_step_dir(tmp_path))
    s = sorted(PER_ITER)
    assert row["steady_iterations"] == 4
    assert row["dram_bytes_measured"] == (s[1] + s[2]) / 2 == 45312
    assert (row["dram_bytes_steady_min"], row["dram_bytes_steady_max"]) == (40192, 99072)
    assert row["l2_size_bytes"] == 52428800   # the H100's 50 MiB, from the report
    assert row["ncu_passes"] == "steady, cold, range" and row["ncu_note"] is None


# oracle_range: each of the 4 iteration ranges' DRAM read and write (its raw CSV)
RANGE_READ, RANGE_WRITE = [1536, 19456, 17152, 18176], [46336, 34816, 18944, 15104]


@needs_module
def test_cold_bytes_are_each_iteration_range_flushed_once(tmp_path):
    """The cold pass replays each iteration as one range (results without kernel names):
    each range result is one iteration's bytes, so their median and range."""
    row, kernels = run_traffic.compute(_step_dir(tmp_path))
    per = sorted(r + w for r, w in zip(RANGE_READ, RANGE_WRITE))   # 33280, 36096, 47872, 54272
    assert row["cold_replay"] == "range" and row["cold_iterations"] == 4
    assert row["dram_bytes_cold"] == (36096 + 47872) / 2 == 41984
    assert (row["dram_bytes_cold_min"], row["dram_bytes_cold_max"]) == (33280, 54272)
    assert row["dram_read_bytes_cold"] == (17152 + 18176) / 2
    assert row["dram_write_bytes_cold"] == (18944 + 34816) / 2
    assert per[0] == row["dram_bytes_cold_min"]
    assert kernels["dram_bytes_cold"].isna().all()   # ranges name no kernel: no per-kernel cold bytes


@needs_module
def test_a_cold_report_of_kernels_reads_as_each_iterations_kernels_summed(tmp_path):
    """A cold pass recorded by kernel replay (caches flushed before each kernel): the same
    4 launches read as one iteration, its bytes their sum, each kernel's its own."""
    j = _step_dir(tmp_path, passes=("steady",))
    _unpack("oracle", tmp_path / ncu_passes.PASSES["cold"].report)
    rec = json.loads(open(j).read())
    rec["cold"] = {"status": "ok", "reason": None, "passes": 1, "report": ncu_passes.PASSES["cold"].report,
                   "iterations": 1}
    open(j, "w").write(json.dumps(rec))
    row, kernels = run_traffic.compute(j)
    assert row["cold_replay"] == "kernel" and row["cold_iterations"] == 1
    assert row["dram_bytes_cold"] == sum(PER_ITER) == 229888
    assert kernels.loc[0, "dram_bytes_cold"] == sum(PER_ITER)
    assert row["dram_read_bytes_cold"] == 7168 + 2048 + 1792 + 2560
    assert kernels.loc[0, "dram_bytes_cold"] == sum(PER_ITER)
    assert kernels.loc[0, "dram_bytes"] == sum(PER_ITER) / 4   # steady, per iteration


def test_iterations_that_launch_different_kernels_have_no_range():
    row = lambda k: {"full_name": k, "dram_read_bytes": 1.0, "dram_write_bytes": 2.0}
    assert run_traffic.iteration_bytes([row("a"), row("b"), row("a"), row("b")], 2) == [{"read": 2.0, "write": 4.0}] * 2
    assert run_traffic.iteration_bytes([row("a"), row("b"), row("b"), row("a")], 2) is None
    assert run_traffic.iteration_bytes([row("a")] * 3, 2) is None


def _runs(bytes_fused):
    keys = dict(model="softmax", batch=1024, size="default", mode="inference", dtype="float32", backend="nsys",
                device="cuda", repeat=0, status="ok", bytes_unfused=1e8, flops=0.0, flops_pointwise=1e6)
    return pd.DataFrame([{**keys, "variant": v, "bytes_fused": bytes_fused} for v in ("eager", "compile")])


def _files(tmp_path, measured):
    out = []
    for v, rec in measured.items():
        d = tmp_path / v
        d.mkdir(exist_ok=True)
        (d / "metrics.json").write_text(json.dumps({**_runs(1.0).iloc[0][traffic.CONFIG].to_dict(), "variant": v}))
        (d / "traffic.json").write_text(json.dumps({**rec, "l2_size_bytes": 50e6, "ncu_status": "ok"}))
        out.append((str(d / "metrics.json"), str(d / "traffic.json"), str(d / "traffic.csv")))
    return out


# softmax 1024 as the H200 measured it: one steady pass says 46.5 MB removed, another 0.16 MB
SOFTMAX = {"eager": {"dram_bytes_measured": 50.9e6, "dram_bytes_steady_min": 27.2e6, "dram_bytes_steady_max": 59.4e6,
                     "dram_bytes_cold": 84e6},
           "compile": {"dram_bytes_measured": 4.3e6, "dram_bytes_steady_min": 4.3e6, "dram_bytes_steady_max": 27.1e6,
                       "dram_bytes_cold": 33.6e6}}


def test_near_l2_a_reader_is_told_the_range_between_cold_and_steady(tmp_path):
    runs = traffic.add_to_runs(_runs(33.6e6), _files(tmp_path, SOFTMAX)).set_index("variant")
    e = runs.loc["eager"]
    assert e["bytes_regime"] == "near or below L2" and e["working_set_over_l2"] == pytest.approx(0.672)
    assert (e["dram_bytes_low"], e["dram_bytes_high"]) == (27.2e6, 84e6)
    sp = traffic.add_to_speedups(runs.reset_index()[traffic.CONFIG].assign(status="ok"), runs.reset_index())
    c = sp.set_index("variant").loc["compile"]
    assert c["bytes_removed_measured"] == pytest.approx(46.6e6)
    assert c["bytes_removed_cold"] == pytest.approx(50.4e6)
    # eager's low - compile's high .. eager's high - compile's low, and the cold difference
    assert (c["bytes_removed_low"], c["bytes_removed_high"]) == (pytest.approx(0.1e6), pytest.approx(55.1e6))
    assert c["bytes_regime"] == "near or below L2"


def test_above_l2_one_figure_with_the_steady_iterations_range(tmp_path):
    runs = traffic.add_to_runs(_runs(134e6), _files(tmp_path, SOFTMAX)).set_index("variant")
    e = runs.loc["eager"]
    assert e["bytes_regime"] == "above L2"
    assert (e["dram_bytes_low"], e["dram_bytes_high"]) == (27.2e6, 59.4e6)   # the cold bytes not in it


def test_table_8_1_puts_cold_and_steady_bytes_beside_the_formula():
    runs = pd.DataFrame([{"model": "mlp_small", "variant": "eager", "batch": 128, "size": "default",
                          "dtype": "float32", "mode": "inference", "dram_read_bytes_measured": 1.0,
                          "dram_write_bytes_measured": 2.0, "dram_bytes_measured": 3.0, "dram_bytes_steady_min": 2.0,
                          "dram_bytes_steady_max": 5.0, "dram_read_bytes_cold": 10.0, "dram_write_bytes_cold": 20.0,
                          "dram_bytes_cold": 30.0, "l2_bytes_measured": 3.0, "iteration_dram_bytes_measured": 2.0,
                          "bytes_unfused": 5.0, "ncu_note": None}])
    t = traffic.memory_access_table(runs).iloc[0]
    assert t["table_reads_bytes"] == 4 * (128 + 64 + 3 * 128 * 64 + 2 * 64 + 2 * 128)
    assert (t["dram_bytes_cold"], t["dram_bytes_steady"], t["dram_bytes_steady_min"], t["dram_bytes_steady_max"]) == \
        (30.0, 3.0, 2.0, 5.0)


def _fake_ncu(tmp_path, report, range_report=None):
    """An ncu stand-in that writes the recorded report where -o says (range_report under
    `--replay-mode range`) and logs 1 pass."""
    p = tmp_path / "ncu"
    p.write_text(f"""#!/bin/sh
[ "$1" = "--query-metrics" ] && exit 0
out=""; prev=""; rep={report}
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; [ "$prev $a" = "--replay-mode range" ] && rep={range_report or report}; prev="$a"; done
echo "==PROF== Profiling \\"k\\" - 0: 0%....50%....100% - 1 pass"
cp $rep "$out.ncu-rep"
""")
    p.chmod(0o755)
    return str(p)


@needs_module
def test_the_step_runs_each_pass_with_its_cache_control(tmp_path):
    d = tmp_path / "r0"
    d.mkdir()
    (d / "timing.json").write_text(json.dumps({"status": "ok"}))
    ncu = _fake_ncu(tmp_path, _unpack("oracle", tmp_path / "o.ncu-rep"),
                    _unpack("oracle_range", tmp_path / "r.ncu-rep"))
    subprocess.run([sys.executable, PROFILE, "--run-dir", str(d), "--ncu", ncu, "--passes", "cold,steady",
                    "--iters", "4", "--", "python"], env={**os.environ, "PYTHONPATH": ROOT}, check=True)
    rec = json.loads((d / "ncu.json").read_text())
    assert rec["status"] == "ok" and rec["passes"] == ["steady", "cold"]
    steady, cold = rec["steady"]["command"], rec["cold"]["command"]
    assert "--replay-mode kernel --cache-control none" in steady and "--iters 4 " in steady
    assert "--nvtx-include fusionlab@measure/" in steady
    # cold: each iteration one range, the caches flushed once before it
    assert "--replay-mode range --cache-control all" in cold and "--nvtx-include fusionlab@iteration/" in cold
    assert "--iters 4 " in cold
    assert (rec["steady"]["results"], rec["cold"]["results"]) == (4, 4)
    row, _ = run_traffic.compute(str(d / "ncu.json"))
    assert row["dram_bytes_measured"] == 45312 and row["dram_bytes_cold"] == 41984


def test_the_headline_carries_the_measured_bytes_removed_as_a_range():
    """Near or below L2 the memory term's bytes are a range (cold to steady), named in the
    note; its time scales with the bytes at the bandwidth the term used."""
    from fusionlab.analysis.sweep.headline import traffic_spread
    row = {"traffic_source": "measured", "traffic_bytes": 48e6, "traffic_ms": 0.016, "traffic_note": ""}
    sp = {"bytes_removed_low": 40e6, "bytes_removed_high": 67e6, "bytes_regime": "near or below L2"}
    out = traffic_spread(sp, row)
    assert (out["traffic_bytes_low"], out["traffic_bytes_high"]) == (40e6, 67e6)
    assert abs(out["traffic_ms_low"] - 0.016 * 40 / 48) < 1e-15
    assert out["traffic_note"] == ("the working set is near or below L2: the DRAM bytes removed lie between 40 and "
                                   "67 MB (cold and steady-state iterations), 48 MB being the steady median")
    assert "traffic_note" not in traffic_spread({**sp, "bytes_regime": "above L2"}, row)
    modelled = traffic_spread(sp, {**row, "traffic_source": "modelled"})
    assert set(modelled) == {"traffic_bytes_low", "traffic_bytes_high"} and modelled["traffic_bytes_low"] != modelled["traffic_bytes_low"]


def test_ncu_by_hand_splits_iterations_after_the_kernels_that_ran_once():
    """benchmarks/bytes.py hand: a first iteration's one-time kernels (here two) come before
    the repeating iterations; the split finds the shortest period of the tail and counts
    them apart; a tail that does not repeat gives no split (no per-iteration figure)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks", "bytes.py")
    spec = importlib.util.spec_from_file_location("bytes_benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    it = ["max", "sub_exp", "sum", "div", "copy"]
    assert bench.iteration_split(["ws_init", "fill"] + it * 3, 3) == (2, 5)
    assert bench.iteration_split(it * 3, 3) == (0, 5)
    assert bench.iteration_split(["a", "a", "a"], 3) == (0, 1)
    assert bench.iteration_split(it + it + ["max", "sum", "sub_exp", "div", "copy"], 3) is None
