"""`nsys stats` to CSV (readers.nsys_stats) against a stand-in nsys (a script that prints
the report list of a 2022 or a 2023+ nsys and writes the CSVs a stats run would): the
report names read from `--help-reports` (an indented name before "[" or " --" only), the
newest name of each report this nsys has, the one stats command run with every report
picked, the CSVs renamed by their canonical report, an empty one and a missing one noted,
a report this nsys lacks, the empty marker of a run nsys wrote no report for, a failed
stats run (its output passed on, the folder left as it was), and the output folder
replaced whole; each manifest exact."""
import json
import os
import stat

import pytest

from fusionlab.analysis.readers import nsys_stats

HELP_2023 = """
The following built-in reports are available:

  cuda_api_sum -- CUDA API Summary
  cuda_gpu_kern_sum[:nvtx-name][:base|:mangled] -- CUDA GPU Kernel Summary
  nvtx_sum -- NVTX Range Summary
  nvtx_kern_sum[:base|:mangled] -- NVTX Range Kernel Summary
  cuda_kern_exec_sum[:base|:mangled] -- CUDA Kernel Launch & Exec Time Summary
"""
HELP_2022 = """
  gpukernsum[:base|:mangled] -- CUDA GPU Kernel Summary
  cudaapisum -- CUDA API Statistics
  nvtxsum -- NVTX Push/Pop Range Statistics
"""

FAKE = r'''#!/usr/bin/env python3
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "argv.json"), "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
spec = json.load(open(os.path.join(here, "spec.json")))
if sys.argv[1:] == ["stats", "--help-reports"]:
    sys.stdout.write(spec["help"])
    sys.exit(0)
out = sys.argv[sys.argv.index("-o") + 1]
for name, text in spec["write"].items():
    open(f"{out}_{name}.csv", "w").write(text)
sys.stdout.write(spec.get("stdout", ""))
sys.stderr.write(spec.get("stderr", ""))
sys.exit(spec.get("rc", 0))
'''


@pytest.fixture
def nsys(tmp_path):
    """A stand-in nsys: set(help, write={report: csv text}, rc, stdout, stderr); calls() its argv lists."""
    d = tmp_path / "bin"
    d.mkdir()
    exe = d / "nsys"
    exe.write_text(FAKE)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)

    class Fake:
        path = str(exe)

        def set(self, help=HELP_2023, **spec):
            (d / "spec.json").write_text(json.dumps({"help": help, "write": {}, **spec}))

        def calls(self):
            f = d / "argv.json"
            return [json.loads(x) for x in f.read_text().splitlines()] if f.exists() else []
    fake = Fake()
    fake.set()
    return fake


def test_the_report_names_are_the_indented_names_before_a_bracket_or_dashes(nsys):
    nsys.set(help="  cuda_api_sum -- CUDA API Summary\n"
                  "  cuda_gpu_kern_sum[:nvtx-name] -- kernels\n"
                  "\tnvtx_sum\t-- tab indented\n"
                  "nvtx_kern_sum -- not indented\n"
                  "  osrt_sum: no dashes\n"
                  "  um_sum x -- a word between\n"
                  "  Cuda_Upper -- upper case\n"
                  "  cuda_gpu_trace   -- several spaces\n")
    assert nsys_stats.available_reports(nsys.path) == {"cuda_api_sum", "cuda_gpu_kern_sum", "nvtx_sum",
                                                       "cuda_gpu_trace"}
    assert nsys.calls() == [["stats", "--help-reports"]]
    nsys.set(help="no reports\n")
    assert nsys_stats.available_reports(nsys.path) == set()


def test_choose_takes_each_reports_newest_name_this_nsys_has():
    both = {"cuda_gpu_kern_sum", "gpukernsum", "cudaapisum", "nvtxsum", "nvtx_sum", "other"}
    assert nsys_stats.choose(both) == {"kern_sum": "cuda_gpu_kern_sum", "api_sum": "cudaapisum",
                                       "nvtx_sum": "nvtx_sum", "nvtx_kern_sum": None, "kern_exec_sum": None}
    assert nsys_stats.choose(set()) == dict.fromkeys(nsys_stats.REPORTS)


def test_the_stats_csvs_named_by_their_report_and_the_manifest_says_which(nsys, tmp_path):
    sqlite = tmp_path / "report.sqlite"
    sqlite.write_bytes(b"SQLite format 3\0")
    nsys.set(write={"cuda_gpu_kern_sum": "Time (%),Name\n100,k\n", "cuda_api_sum": "Name\ncudaLaunchKernel\n",
                    "nvtx_sum": "", "other_report": "x\n"})
    out = tmp_path / "stats"
    manifest = nsys_stats.export_stats(str(sqlite), str(out) + "/", nsys.path)
    want = {"kern_sum": {"report": "cuda_gpu_kern_sum", "file": "kern_sum.csv"},
            "api_sum": {"report": "cuda_api_sum", "file": "api_sum.csv"},
            "nvtx_sum": {"report": "nvtx_sum", "file": "nvtx_sum.csv",
                         "note": "no data of this kind in the report (empty file)"},
            "nvtx_kern_sum": {"report": "nvtx_kern_sum", "note": "no data of this kind in the report"},
            "kern_exec_sum": {"report": "cuda_kern_exec_sum", "note": "no data of this kind in the report"}}
    assert manifest == want
    assert json.loads((out / "manifest.json").read_text()) == want
    assert (out / "manifest.json").read_text() == json.dumps(want, indent=2)
    assert sorted(os.listdir(out)) == ["api_sum.csv", "kern_sum.csv", "manifest.json", "nvtx_sum.csv",
                                       "stats_other_report.csv"]
    assert (out / "kern_sum.csv").read_text() == "Time (%),Name\n100,k\n"
    assert not (tmp_path / "stats.tmp").exists()
    assert nsys.calls()[1] == ["stats", "--force-export=false", "-r",
                               "cuda_gpu_kern_sum,cuda_api_sum,nvtx_sum,nvtx_kern_sum,cuda_kern_exec_sum", "-f",
                               "csv", "--force-overwrite", "true", "-o", str(tmp_path / "stats.tmp" / "stats"),
                               str(sqlite)]


def test_a_report_this_nsys_lacks_is_noted_and_not_asked_for(nsys, tmp_path):
    sqlite = tmp_path / "report.sqlite"
    sqlite.write_bytes(b"x")
    nsys.set(help=HELP_2022, write={"gpukernsum": "k\n1\n"})
    manifest = nsys_stats.export_stats(str(sqlite), str(tmp_path / "stats"), nsys.path)
    lacks = {"report": None, "note": "this nsys has no such report"}
    assert manifest == {"kern_sum": {"report": "gpukernsum", "file": "kern_sum.csv"},
                        "api_sum": {"report": "cudaapisum", "note": "no data of this kind in the report"},
                        "nvtx_sum": {"report": "nvtxsum", "note": "no data of this kind in the report"},
                        "nvtx_kern_sum": lacks, "kern_exec_sum": lacks}
    assert nsys.calls()[1][3] == "gpukernsum,cudaapisum,nvtxsum"


def test_the_empty_marker_of_a_run_without_a_report_runs_no_nsys_and_replaces_the_folder(nsys, tmp_path):
    sqlite = tmp_path / "report.sqlite"
    sqlite.write_bytes(b"")
    out = tmp_path / "stats"
    out.mkdir()
    (out / "kern_sum.csv").write_text("old\n")
    (tmp_path / "stats.tmp").mkdir()
    (tmp_path / "stats.tmp" / "left.csv").write_text("from a run cut short\n")
    manifest = nsys_stats.export_stats(str(sqlite), str(out), nsys.path)
    assert manifest == {"note": "no report: nsys wrote none for this run (see its run.json)"}
    assert os.listdir(out) == ["manifest.json"]
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert not (tmp_path / "stats.tmp").exists() and nsys.calls() == []


def test_a_failed_stats_run_passes_its_output_on_and_leaves_the_folder(nsys, tmp_path, capsys):
    sqlite = tmp_path / "report.sqlite"
    sqlite.write_bytes(b"x")
    out = tmp_path / "stats"
    out.mkdir()
    (out / "kern_sum.csv").write_text("old\n")
    nsys.set(rc=3, stdout="partial\n", stderr="nsys: cannot read\n")
    with pytest.raises(RuntimeError) as e:
        nsys_stats.export_stats(str(sqlite), str(out), nsys.path)
    assert str(e.value) == f"nsys stats failed on {sqlite} (exit 3)"
    assert capsys.readouterr().err == "partial\nnsys: cannot read\n"
    assert os.listdir(out) == ["kern_sum.csv"] and (out / "kern_sum.csv").read_text() == "old\n"


def test_nsys_is_the_one_on_path_by_default(nsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", os.path.dirname(nsys.path) + os.pathsep + os.environ.get("PATH", ""))
    assert nsys_stats.available_reports() == {"cuda_api_sum", "cuda_gpu_kern_sum", "nvtx_sum", "nvtx_kern_sum",
                                              "cuda_kern_exec_sum"}
    sqlite = tmp_path / "report.sqlite"
    sqlite.write_bytes(b"x")
    assert nsys_stats.export_stats(str(sqlite), str(tmp_path / "stats"))["api_sum"]["report"] == "cuda_api_sum"
    assert len(nsys.calls()) == 3


def test_the_staging_folder_is_the_output_folders_name_and_tmp(nsys, tmp_path):
    sqlite = tmp_path / "report.sqlite"
    sqlite.write_bytes(b"x")
    nsys_stats.export_stats(str(sqlite), str(tmp_path / "statsX") + "//", nsys.path)   # a name ending in X
    assert nsys.calls()[1][nsys.calls()[1].index("-o") + 1] == str(tmp_path / "statsX.tmp" / "stats")
    assert sorted(os.listdir(tmp_path)) == ["bin", "report.sqlite", "statsX"]
