"""A hostile or careless user's inputs, each at the boundary that reads it: one line naming
the file (and the event, field, column or key), nothing changed on disk, and no number
made from what no run writes. The probe round these come from: docs/outputs.md, "Bad
inputs"."""
import json
import os

import pytest

from fusionlab.analysis.readers import torch_trace
from fusionlab.analysis.readers.trace import ReportError
from fusionlab.analysis.run import run_metrics

RUN = "runs/torch/mlp/eager/inference_float32/bs8/r0"
STEP = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 1, "dur": 5}


def trace(tmp_path, **event) -> str:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [STEP, {**STEP, "name": "fusionlab:measure", **event}]}))
    return str(path)


@pytest.mark.parametrize("event, said", [
    ({"ts": "abc"}, "ts 'abc' is not a number of microseconds"),
    ({"ts": float("nan")}, "ts nan is not a finite time of at most 2.31e+15 us"),
    ({"ts": 10 ** 23}, "ts 1e+23 is not a finite time of at most 2.31e+15 us"),
    ({"dur": -5}, "dur -5.0 is not a non-negative finite time of at most 2.31e+15 us"),
    ({"ts": True}, "ts True is not a number of microseconds"),
    ({"ts": None}, "ts None is not a number of microseconds"),
    ({"args": [1]}, "args [1] is not an object"),
])
def test_a_trace_event_that_is_no_time_is_refused_naming_it(tmp_path, event, said):
    path = trace(tmp_path, **event)
    with pytest.raises(ReportError) as e:
        torch_trace.load(path)
    assert str(e.value) == f"{path}: event 1 ('fusionlab:measure'): {said}"


def test_a_trace_event_without_ts_is_refused_naming_it(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "dur": 1}]}))
    with pytest.raises(ReportError) as e:
        torch_trace.load(str(path))
    assert str(e.value) == f"{path}: event 0 ('k'): no 'ts'"


def test_trace_times_at_the_cap_are_read(tmp_path):
    t = torch_trace.load(trace(tmp_path, ts=torch_trace.MAX_US, dur=torch_trace.MAX_US))
    assert t.ranges["end"].max() == 2 * round(torch_trace.MAX_US * 1000) < 1 << 63


def run_folder(tmp_path, record: dict) -> str:
    d = tmp_path / RUN
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps(record))
    return str(d / "run.json")


GOOD = {"model": "mlp", "variant": "eager", "batch": 8, "size": "default", "mode": "inference",
        "dtype": "float32", "repeat": 0, "status": "ok", "timing": {"windows_ms": [1.0, 1.0, 1.0]}}


@pytest.mark.parametrize("change, said", [
    ({"timing": [1, 2]}, "timing is list, not an object"),
    ({"sizes": "hidden"}, "sizes is str, not an object"),
    ({"timing": {"windows_ms": [1.0, "x"]}}, "timing.windows_ms[1] holds 'x', not a time"),
    ({"timing": {"wall_time_per_iter_ms": True}}, "timing.wall_time_per_iter_ms holds True, not a time"),
    ({"timing": None}, "status ok but no timing (a run that measured records one)"),
    ({"timing": {"wall_time_per_iter_ms": 1e308}}, "timing.wall_time_per_iter_ms holds 1e+308, past 1e+12 (a time "
                                                   "no run takes)"),
    ({"timing": {"windows_ms": [1.0, -2e12]}}, "timing.windows_ms[1] holds -2e+12, past 1e+12 (a time no run takes)"),
    ({"timing": {"paired_speedup": 1e-308}}, "timing.paired_speedup holds 1e-308, not a speedup in 1e-06..1e+06"),
    ({"timing": {"paired_speedup": 0}}, "timing.paired_speedup holds 0, not a speedup in 1e-06..1e+06"),
    ({"model": None}, "no model (its folder is model 'mlp''s)"),
    ({"model": "softmax"}, "model 'softmax', but it is in the folder of model 'mlp'"),
    ({"batch": 32}, "batch 32, but it is in the folder of batch 8"),
    ({"size": "hidden256"}, "size 'hidden256', but it is in the folder of size 'default'"),
])
def test_a_run_json_of_another_shape_is_an_error_row_naming_it(tmp_path, change, said):
    path = run_folder(tmp_path, {**GOOD, **change})
    row, kernels = run_metrics.compute(path, None, "torch")
    assert (row["status"], row["reason"]) == ("error", f"{path}: {said}")
    assert (row["model"], row["batch"]) == ("mlp", 8) and kernels.empty      # the folder's keys


def test_a_run_json_of_its_own_folder_is_read(tmp_path):
    row, _ = run_metrics.compute(run_folder(tmp_path, GOOD), None, "torch")
    assert (row["status"], row["reason"], row["model"], row["size"]) == ("ok", None, "mlp", "default")


def test_a_part_of_another_shape_met_past_the_checks_is_an_error_row_naming_it(tmp_path):
    path = run_folder(tmp_path, {**GOOD, "timing": {"untraced_wall_time_per_iter_ms": 1.0},
                                 "host_check": {"block_states": 5}})
    profile = trace(tmp_path / RUN)
    row, kernels = run_metrics.compute(path, profile, "torch")
    assert (row["status"], row["reason"]) == ("error", f"{path}: cannot be analysed (TypeError: 'int' object is "
                                                       "not iterable)")
    assert kernels.empty


KERNELS = "name,kind,calls_per_iter,time_per_iter_us,full_name\nk1,gemm,1,10.0,void k1()\nk2,other,2,4.0,void k2()\n"


@pytest.mark.parametrize("text, said", [
    (KERNELS[:-20], "row 2: calls_per_iter is empty, not a finite number >= 0"),        # cut mid-row
    (KERNELS.replace("10.0", "nan"), "row 1: time_per_iter_us is empty, not a finite number >= 0"),
    (KERNELS.replace(",1,10.0", ",-5,10.0"), "row 1: calls_per_iter is -5, not a finite number >= 0"),
    (KERNELS.replace("10.0", "ten"), "row 1: time_per_iter_us is 'ten', not a finite number >= 0"),
    (KERNELS.replace("time_per_iter_us", "t"), "no column time_per_iter_us (a run's kernels.csv has name, "
                                               "calls_per_iter, time_per_iter_us)"),
    (KERNELS.replace("\nk2,", "\n,"), "row 2: no kernel name"),
])
def test_a_kernels_csv_that_would_drop_or_zero_a_kernel_is_refused(tmp_path, capsys, text, said):
    from fusionlab.cli import main
    for name, kernels in (("a", text), ("b", KERNELS)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "kernels.csv").write_text(kernels)
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == f"error: {tmp_path}/a/kernels.csv: {said}\n"


def test_diff_shows_control_characters_in_kernel_names_as_escapes(tmp_path, capsys):
    from fusionlab.cli import main
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "kernels.csv").write_text(KERNELS.replace("void k1()", "\x1b[31mred\u202e" if name == "a"
                                                                     else "void k1()"))
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b[31mred\\u202e" in out


SPEEDUPS = ("model,variant,batch,size,mode,dtype,wall_time_per_iter_ms\n"
            "mlp,eager,8,default,inference,float32,2.0\nmlp,compile,8,default,inference,float32,1.0\n")


@pytest.mark.parametrize("text, said", [
    ("1,2,3\n4,5,6\n", "no column model (a speedups table has model, variant, batch, size, mode, dtype and "
                       "wall_time_per_iter_ms)"),
    (SPEEDUPS.replace(",wall_time_per_iter_ms", ",w"), "no column wall_time_per_iter_ms (a speedups table has "
                                                       "model, variant, batch, size, mode, dtype and "
                                                       "wall_time_per_iter_ms)"),
    (SPEEDUPS.replace("compile,8", "compile,eight"), "row 2: batch is 'eight', not a whole number"),
    (SPEEDUPS + SPEEDUPS.split("\n", 1)[1], "configuration mlp/eager/8/default/inference/float32 is in 2 rows; "
                                            "a speedups table has one row per configuration"),
    (SPEEDUPS.replace("1.0\n", "0\n"), "row 2: wall_time_per_iter_ms is 0, not a time > 0 (empty where a "
                                         "configuration did not run)"),
    (SPEEDUPS.replace("2.0\n", "-2\n"), "row 1: wall_time_per_iter_ms is -2, not a time > 0 (empty where a "
                                          "configuration did not run)"),
    (SPEEDUPS.replace("mlp,compile", "\x1bmlp,eager"), None),
])
def test_a_speedups_table_compare_cannot_join_is_refused(tmp_path, capsys, text, said):
    from fusionlab.cli import main
    for name, table in (("a", text), ("b", SPEEDUPS)):
        (tmp_path / name / "tables").mkdir(parents=True)
        (tmp_path / name / "tables" / "speedups.csv").write_text(table)
    out_dir = tmp_path / "out"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out_dir)]) == (2 if said else 0)
    out = capsys.readouterr()
    if said:
        assert out.out == "" and out.err == f"error: {tmp_path}/a/tables/speedups.csv: {said}\n"
        assert not out_dir.exists()
    else:
        assert "\x1b" not in out.out + out.err and "\\x1bmlp" in out.out


def test_printable_shows_control_and_format_characters_as_escapes():
    from fusionlab.core.io import printable
    assert printable("a\x1b[31mb\u202ec\n\té") == "a\\x1b[31mb\\u202ec\\n\\té"
    assert printable("one\x07\ntwo", lines=True) == "one\\x07\ntwo"


def test_an_error_naming_a_hostile_path_is_one_printable_line(tmp_path, capsys):
    from fusionlab.cli import main
    bad = tmp_path / "\x1b[2J\nrun"
    assert main(["diff", str(bad), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path}/\\x1b[2J\\nrun: no such file\n"


CONFIG = {"models": ["mlp_small"], "variants": ["eager"], "batch_sizes": [8]}


@pytest.mark.parametrize("change, said", [
    ({"batch_sizes": [10 ** 23]}, "config key batch_sizes[0]: 100000000000000000000000 is too large; allowed values: "
                                  "at most 2147483647"),
    ({"repeats": 100_001}, "config: 100001 runs (models x modes x variants x dtypes x sizes x batch_sizes x "
                           "repeats); at most 100000 in one sweep: sweep fewer values, or split it into several "
                           "sweeps"),
    ({"results": "/etc/fusionlab"}, "config key results: '/etc/fusionlab' is a system folder; allowed values: a "
                                    "folder of its own for the sweep's outputs (default: results)"),
])
def test_a_config_past_what_a_sweep_can_be_is_refused_before_it_is_expanded(change, said):
    from fusionlab.plan import sweep
    with pytest.raises(sweep.ConfigError) as e:
        sweep.validate({**CONFIG, **change})
    assert str(e.value) == said


def test_the_run_count_at_the_cap_passes_and_counts_as_runs_does():
    from fusionlab.plan import runs, sweep
    cfg = sweep.validate({**CONFIG, "variants": ["eager", "compile"], "batch_sizes": [8, 32],
                          "mode": ["inference", "train"], "sizes": {"mlp_small": {"hidden": [64, 128, 256]}}})
    assert runs.run_count(cfg) == len(runs.runs(cfg, "torch")) == 2 * 2 * 3 * 2
    assert sweep.validate({**CONFIG, "repeats": 100_000})["repeats"] == 100_000


@pytest.mark.parametrize("text, said", [
    ("models: [mlp_small]\nmodels: [mlp]\n", "key 'models' is given twice (line 2); YAML would keep the last silently"),
    ("nsys:\n  trace: cuda\n  trace: nvtx\n", "key 'trace' is given twice (line 3); YAML would keep the last silently"),
    ("- 1\n- 2\n", "a list, not a mapping of config keys"),
    ("models: [mlp\n", "cannot be read (ParserError: "),
    ("!!python/object/apply:os.system [touch pwned]\n", "cannot be read (ConstructorError: "),
])
def test_a_config_file_is_a_mapping_with_each_key_once(tmp_path, text, said):
    from fusionlab.plan import config_checks
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(config_checks.ConfigError) as e:
        config_checks.load_file(str(path))
    assert str(e.value).startswith(f"config file {path}: {said}")
    assert "\n" not in str(e.value) and not (tmp_path / "pwned").exists()


def test_an_empty_config_file_is_an_empty_mapping_and_list_names_a_bad_one(tmp_path, capsys):
    from fusionlab.cli import main
    from fusionlab.plan import config_checks
    (tmp_path / "empty.yaml").write_text("")
    assert config_checks.load_file(str(tmp_path / "empty.yaml")) == {}
    (tmp_path / "bad.yaml").write_text("import_models: 5\n")
    assert main(["list", "--configfile", str(tmp_path / "bad.yaml")]) == 2
    assert capsys.readouterr().err == (f"fusionlab list: ConfigError: {tmp_path}/bad.yaml: config key import_models: "
                                       "5 is not a mapping of name -> import path\n")


def test_pinning_to_a_core_the_process_may_not_use_is_the_runs_error():
    from fusionlab.runner import process
    allowed = sorted(os.sched_getaffinity(0))
    with pytest.raises(ValueError) as e:
        process.pin_cpus(f"{allowed[0]},99999", "cpu")
    assert str(e.value) == (f"--pin-cpus {allowed[0]},99999: core 99999 is not one this process may use "
                            f"(cores {','.join(map(str, allowed))})")
    assert sorted(os.sched_getaffinity(0)) == allowed                # nothing pinned


def test_a_run_folder_no_job_could_be_is_left_out_of_a_regenerate_and_named(tmp_path):
    from fusionlab.plan import sweep
    good = tmp_path / "runs/torch/mlp/eager/inference_float32/bs8/r0"
    odd = [tmp_path / f"runs/torch/{name}" for name in ("<script>/eager/inference_float32/bs8/r0",
                                                        "{x}/eager/inference_float32/bs8/r0",
                                                        "mlp/eval()/inference_float32/bs8/r0",
                                                        "mlp/eager/inference_float64/bs8/r0",
                                                        "mlp/eager/inference_float32/bs0/r0")]
    for d in [good, *odd]:
        d.mkdir(parents=True)
        (d / "run.json").write_text("{}")
        (d / "trace.json").write_text("{}")
    left_out = []
    found = sweep.existing_runs({"results": str(tmp_path)}, left_out)
    assert [(r["model"], r["variant"], r["batch"]) for r in found] == [("mlp", "eager", 8)]
    assert sorted(left_out) == sorted(map(str, odd))


def made_results(tmp_path):
    """A results folder whose tables record what they were made from (analysis.sweep.made_from),
    every table given a time before its inputs', as a copy (cp -r, a git checkout) can."""
    from fusionlab.analysis.sweep import made_from
    res = tmp_path / "res"
    (res / RUN).mkdir(parents=True)
    (res / RUN / "metrics.json").write_text('{"status": "ok"}')
    (res / "tables").mkdir()
    t = {n: str(res / "tables" / f"{n}.csv") for n in ("runs", "speedups", "kernels", "headline")}
    for p in t.values():
        open(p, "w").write("x\n")
    made_from.record([t["runs"], t["speedups"], t["kernels"]], [str(res / RUN / "metrics.json")])
    made_from.record([t["headline"]], [t["runs"], t["speedups"]])
    for p in t.values():
        os.utime(p, (1e9, 1e9))
    return res


def inputs_audit(res) -> list[str]:
    from fusionlab.analysis.report import audit, audit_inputs
    a = audit.Audit()
    audit_inputs.check(a, str(res))
    return a.violations


def test_a_copied_folder_whose_tables_record_their_inputs_passes_whatever_its_times(tmp_path):
    res = made_results(tmp_path)
    assert inputs_audit(res) == []
    (res / RUN / "metrics.json").write_text('{"status": "error"}')
    stale = " (a table left from an earlier build: build the tables again)"
    assert inputs_audit(res) == [f"tables/{n}.csv: made from another {RUN}/metrics.json than the one there now{stale}"
                                 for n in ("runs", "speedups", "kernels")]
    os.remove(res / RUN / "metrics.json")
    assert inputs_audit(res)[0] == f"tables/runs.csv: made from {RUN}/metrics.json, which is gone{stale}"


def test_a_run_the_tables_did_not_read_is_judged_by_its_time(tmp_path):
    res = made_results(tmp_path)
    other = RUN.replace("bs8", "bs32")
    (res / other).mkdir(parents=True)
    (res / other / "metrics.json").write_text("{}")
    stale = " (a table left from an earlier build: build the tables again)"
    assert inputs_audit(res) == [f"tables/{n}.csv: older than {other}/metrics.json, which it was not made from{stale}"
                                 for n in ("runs", "speedups", "kernels")]
    os.utime(res / other / "metrics.json", (1e9, 1e9))            # as old as the tables: kept from before
    assert inputs_audit(res) == []


def test_a_record_naming_a_file_outside_the_folder_is_not_read(tmp_path):
    from fusionlab.analysis.sweep import made_from
    res = made_results(tmp_path)
    path = res / "tables" / made_from.RECORD
    rec = json.loads(path.read_text())
    rec["tables/runs.csv"] = {"../../../../dev/zero": None}
    rec["/etc/passwd"] = {}
    rec["tables/speedups.csv"] = {"runs/fifo": "x"}
    os.mkfifo(res / "runs" / "fifo")
    path.write_text(json.dumps(rec))
    assert sorted(made_from.read(str(res))) == ["tables/headline.csv", "tables/kernels.csv", "tables/speedups.csv"]
    assert made_from.digest(str(res / "runs" / "fifo")) is None
    stale = " (a table left from an earlier build: build the tables again)"
    assert inputs_audit(res) == [f"tables/runs.csv: older than its input {RUN}/metrics.json{stale}",
                                 f"tables/speedups.csv: made from another runs/fifo than the one there now{stale}",
                                 f"tables/speedups.csv: older than {RUN}/metrics.json, which it was not made "
                                 f"from{stale}"]


def test_a_write_that_fails_names_its_file_and_leaves_the_old_one(tmp_path):
    import errno
    from fusionlab.core.io import atomic_path
    path = tmp_path / "compare.csv"
    path.write_text("old\n")
    with pytest.raises(OSError) as e:
        with atomic_path(str(path)) as tmp:
            open(tmp, "w").write("half")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert str(e.value) == f"[Errno 28] {path}: cannot be written (No space left on device)"
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["compare.csv"]


def test_a_pipe_or_a_link_to_a_device_in_a_results_folder_is_named_never_read(tmp_path):
    from fusionlab import results
    from fusionlab.analysis.report import audit
    res = tmp_path / "res"
    (res / "tables").mkdir(parents=True)
    (res / "figures" / "headline").mkdir(parents=True)
    os.symlink("/dev/zero", res / "tables" / "headline.csv")
    os.mkfifo(res / "figures" / "headline" / "mlp.data.csv")
    os.mkfifo(res / "summary.md")
    a = audit.audit(str(res))
    assert a.violations[:3] == [
        "tables/runs.csv: missing: the audit needs it (build the tables again: snakemake tables)",
        "tables/speedups.csv: missing: the audit needs it (build the tables again: snakemake tables)",
        "tables/headline.csv: not a regular file (a folder, a pipe, or a link to a device): the audit reads no "
        "table from it"]
    r = results.open(str(res))
    for read in (lambda: r.headline, lambda: r.figure_data("headline", "mlp"), lambda: r.summary):
        with pytest.raises(results.ResultsError, match=r"not a regular file \(a pipe or device\)"):
            read()


def test_a_bounded_csv_reads_plain_and_gzip_and_refuses_past_its_cap(tmp_path):
    import gzip
    from fusionlab.core.io import read_csv
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    with gzip.open(tmp_path / "t.csv.gz", "wt") as f:
        f.write("a,b\n1,2\n")
    assert read_csv(str(tmp_path / "t.csv")).to_dict("records") == [{"a": 1, "b": 2}]
    assert read_csv(str(tmp_path / "t.csv.gz")).to_dict("records") == [{"a": 1, "b": 2}]
    with pytest.raises(ValueError, match="^8 bytes, over the cap of 7 bytes$"):
        read_csv(str(tmp_path / "t.csv"), cap=7)


@pytest.mark.parametrize("argv, said", [
    (["diff"], "fusionlab diff: error: the following arguments are required: a, b"),
    (["compare", "a"], "fusionlab compare: error: the following arguments are required: b"),
    (["analyse", "--bogus", "x"], "fusionlab analyse: error: unrecognized arguments: --bogus"),
    (["list", "--device", "tpu"], "fusionlab list: error: argument --device: invalid choice: 'tpu' (choose from "
                                  "'cuda', 'cpu')"),
    (["audit"], "fusionlab audit: error: the following arguments are required: results"),
    (["progress", "a", "b"], "fusionlab progress: error: unrecognized arguments: b"),
    (["restore", "r"], "fusionlab restore: error: give the results folder and at least one archive (fusionlab "
                       "restore RESULTS ARCHIVE [ARCHIVE ...])"),
])
def test_every_subcommands_argument_error_is_one_line(capsys, argv, said):
    from fusionlab.cli import main
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    assert (status, out.out, out.err) == (2, "", said + "\n")


def test_restore_names_a_folder_given_as_an_archive(tmp_path):
    from fusionlab.plan import restore
    with pytest.raises(restore.RestoreError) as e:
        restore.restore(str(tmp_path / "res"), [str(tmp_path)])
    assert str(e.value) == f"{tmp_path}: a folder, not an archive" and not (tmp_path / "res").exists()


def test_tables_on_a_full_disk_name_the_table_and_leave_the_last_ones(tmp_path, monkeypatch):
    import errno
    import pandas as pd
    from fusionlab.analysis.sweep import build

    def full(self, path, **kw):
        open(path, "w").write("half")
        raise OSError(errno.ENOSPC, "No space left on device")
    (tmp_path / "runs.csv").write_text("old\n")
    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    with pytest.raises(OSError) as e:
        build.write_all([(pd.DataFrame({"a": [1]}), str(tmp_path / "runs.csv"), None)])
    assert str(e.value) == f"[Errno 28] {tmp_path}/runs.csv: cannot be written (No space left on device)"
    assert os.listdir(tmp_path) == ["runs.csv"] and (tmp_path / "runs.csv").read_text() == "old\n"


def test_times_and_speedups_at_their_bounds_are_read():
    from fusionlab.analysis.run import records
    rec = {"timing": {"wall_time_per_iter_ms": 1e12, "windows_ms": [-1e12], "paired_speedup": 1e6,
                      "paired_speedup_ci": [0, 2e6]}, "kernel_speedup": 1e-6}
    assert records.check(rec, "run.json") is rec
