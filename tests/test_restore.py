"""fusionlab restore: packed run records unpacked so that a sweep goes on from them, with
Snakemake itself as the oracle of "nothing to run again"."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile

import pytest

from fusionlab.plan import restore

RUN = "runs/nsys/m/compile/inference_float32/bs8{}/r0"
# a chain of three steps over a run folder, as the workflow's are: timing -> run -> metrics
SNAKEFILE = """
RUN = "runs/nsys/m/compile/inference_float32/bs8/r{r}"
rule all:
    input: expand(RUN + "/metrics.json", r=[0])
rule run:
    input: RUN + "/timing.json"
    output: RUN + "/run.json"
    shell: "cp {input} {output}"
rule metrics:
    input: RUN + "/run.json"
    output: RUN + "/metrics.json"
    shell: "cp {input} {output}"
"""


def pack(path, files: dict, prefix="results/real-models/", times: dict | None = None):
    """A tar.gz of files (relative path -> text) under prefix, each with its mtime from
    times (seconds, with a fraction), as tar keeps them."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            info.mtime = (times or {}).get(name, 1.7e9)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_unfinished_runs_and_killed_ncu_records_are_left_out_and_the_rest_kept(tmp_path):
    files = {f"{RUN.format('')}/{n}": n for n in ("timing.json", "run.json", "metrics.json", "ncu.json",
                                                  "ncu_run.json", "ncu.log")}
    files.update({f"{RUN.format('-dim64')}/timing.json": "process died"})            # killed: no run.json
    files.update({f"{RUN.format('-dim128')}/{n}": n for n in ("timing.json", "run.json", "ncu.log")})
    files[f"{RUN.format('-dim128')}/ncu_run.json"] = '{"status": "error", "reason": "%s"}' % restore.KILLED
    files.update({f"{RUN.format('-dim32')}/{n}": n for n in ("timing.json", "run.json", "ncu.log")})
    files[f"{RUN.format('-dim32')}/ncu_run.json"] = '{"status": "error", "reason": "ncu: ERR_NVGPUCTRPERM"}'
    files[RUN.format("-dim16").replace("compile", "cuda_graph") + "/unsupported.json"] = "{}"
    files["tables/runs.csv"] = "model\n"
    res = tmp_path / "res"
    got = restore.restore(str(res), [pack(tmp_path / "a.tgz", files)])
    assert (got["packed"], got["runs"]) == (5, 4)
    assert got["unfinished_runs"] == [RUN.format("-dim64")]
    assert got["unfinished_ncu"] == [RUN.format("-dim128")]
    assert sorted(os.listdir(res / RUN.format("-dim128"))) == ["run.json", "timing.json"]
    assert "ncu_run.json" in os.listdir(res / RUN.format("-dim32"))     # a failure of its own: kept
    assert os.listdir(res / RUN.format("-dim16").replace("compile", "cuda_graph")) == ["unsupported.json"]
    assert sorted(os.listdir(res / RUN.format(""))) == sorted(n.rsplit("/", 1)[1] for n in files
                                                              if n.startswith(RUN.format("") + "/"))
    assert sorted(os.listdir(res)) == [".sweep.lock", "runs"]   # a pack's tables are made again, not restored
    times = {os.stat(os.path.join(h, n)).st_mtime_ns for h, ds, fs in os.walk(res) for n in ds + fs
             if n != ".sweep.lock"}                  # the lock, let go after, is no input of a step
    assert len(times) == 1


def test_an_unfinished_folder_of_a_later_archive_never_replaces_a_finished_one(tmp_path):
    run = RUN.format("")
    done = pack(tmp_path / "a.tgz", {f"{run}/run.json": "r", f"{run}/timing.json": "t", f"{run}/ncu.json": "n",
                                     f"{run}/ncu_run.json": "{}"})
    died = pack(tmp_path / "b.tgz", {f"{run}/timing.json": restore.KILLED,
                                     f"{run}/ncu_run.json": '{"reason": "%s"}' % restore.KILLED})
    res = tmp_path / "res"
    got = restore.restore(str(res), [done, died])
    assert got["unfinished_runs"] == [] and got["runs"] == 1      # restored finished from the first
    assert {n: (res / run / n).read_text() for n in os.listdir(res / run)} == {
        "run.json": "r", "timing.json": "t", "ncu.json": "n", "ncu_run.json": "{}"}


def test_nothing_is_restored_when_one_archive_cannot_be(tmp_path):
    good = pack(tmp_path / "a.tgz", {f"{RUN.format('')}/run.json": "r"})
    (tmp_path / "notes.tgz").write_text("not a tar")
    for second in (tmp_path / "none.tgz", tmp_path / "notes.tgz"):
        res = tmp_path / f"res-{second.name}"
        with pytest.raises(restore.RestoreError):
            restore.restore(str(res), [good, str(second)])
        assert not res.exists() or os.listdir(res) == []


def test_a_link_member_is_refused(tmp_path):
    path = tmp_path / "link.tgz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(f"{RUN.format('')}/run.json")
        info.type, info.linkname = tarfile.SYMTYPE, "elsewhere.json"
        tar.addfile(info)
    with pytest.raises(restore.RestoreError, match="not a plain file or folder"):
        restore.restore(str(tmp_path / "res"), [str(path)])


def test_the_killed_reason_is_the_runners_first_record():
    from fusionlab.runner import record
    assert restore.KILLED in record.DIED


def test_a_run_in_two_archives_is_refused_naming_it_and_nothing_is_restored(tmp_path):
    """Archive A's run.json, metrics.json and ncu.json, archive B's run.json alone for the
    same run: never one run built of two measurements."""
    run = RUN.format("")
    first = pack(tmp_path / "a.tgz", {f"{run}/run.json": "A", f"{run}/metrics.json": "A", f"{run}/ncu.json": "A"})
    second = pack(tmp_path / "b.tar.gz", {f"{run}/run.json": "B"}, prefix="")
    res = tmp_path / "res"
    with pytest.raises(restore.RestoreError, match=f"run {run} is in .*a.tgz and in .*b.tar.gz"):
        restore.restore(str(res), [first, second])
    assert not (res / "runs").exists()


def test_the_same_run_twice_is_one_run_and_a_bare_runs_archive_lands_the_same(tmp_path):
    run = RUN.format("")
    files = {f"{run}/run.json": "r", f"{run}/timing.json": "t"}
    res = tmp_path / "res"
    got = restore.restore(str(res), [pack(tmp_path / "a.tgz", files), pack(tmp_path / "b.tgz", files, prefix="")])
    assert got["runs"] == 1 and sorted(os.listdir(res / run)) == ["run.json", "timing.json"]


def test_a_restored_run_replaces_the_folder_there_whole(tmp_path):
    """A run folder already in RESULTS (run.json and metrics.json of an older measurement) is
    replaced by the archive's whole: its old metrics.json never stays beside the new run.json."""
    run = RUN.format("")
    res = tmp_path / "res"
    (res / run).mkdir(parents=True)
    (res / run / "run.json").write_text("old")
    (res / run / "metrics.json").write_text("old")
    restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{run}/run.json": "new"})])
    assert {n: (res / run / n).read_text() for n in os.listdir(res / run)} == {"run.json": "new"}


def test_a_packed_run_with_ncu_json_and_no_run_json_is_not_finished(tmp_path):
    run = RUN.format("")
    got = restore.restore(str(tmp_path / "res"), [pack(tmp_path / "a.tgz", {f"{run}/ncu.json": "n",
                                                                           f"{run}/metrics.json": "m"})])
    assert got["unfinished_runs"] == [run] and not (tmp_path / "res" / run).exists()


def test_a_runs_folder_that_is_a_link_is_refused_and_nothing_outside_is_touched(tmp_path):
    """RESULTS/runs a link to a scratch folder: refused in one line; the scratch folder's
    in-flight run (no run.json) stays and nothing of the archive lands there."""
    scratch = tmp_path / "scratch"
    inflight = scratch / RUN.format("").split("/", 1)[1]
    inflight.mkdir(parents=True)
    (inflight / "timing.json").write_text("running")
    res = tmp_path / "res"
    res.mkdir()
    (res / "runs").symlink_to(scratch)
    archive = pack(tmp_path / "a.tgz", {f"{RUN.format('-dim64')}/run.json": "r"})
    with pytest.raises(restore.RestoreError, match="runs is a symbolic link"):
        restore.restore(str(res), [archive])
    assert (inflight / "timing.json").read_text() == "running"
    assert sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if p.is_file()) == [
        str((inflight / "timing.json").relative_to(scratch))]
    p = subprocess.run([sys.executable, "-m", "fusionlab.cli", "restore", str(res), archive],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "symbolic link" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_a_link_deeper_inside_runs_is_refused(tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "keep").mkdir(parents=True)
    res = tmp_path / "res"
    (res / "runs").mkdir(parents=True)
    (res / "runs" / "nsys").symlink_to(scratch)
    with pytest.raises(restore.RestoreError, match="nsys is a symbolic link"):
        restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{RUN.format('')}/run.json": "r"})])
    assert os.listdir(scratch) == ["keep"]


def test_a_restore_beside_a_live_sweep_is_refused_and_its_in_flight_run_kept(tmp_path):
    """A real process holds the results folder's sweep lock, as a running sweep does."""
    res = tmp_path / "res"
    inflight = res / RUN.format("")
    inflight.mkdir(parents=True)
    (inflight / "timing.json").write_text("running")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from fusionlab.plan import sweep_lock; "
         f"sweep_lock.acquire({str(res)!r}); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(restore.RestoreError, match=f"another sweep is running.*pid {holder.pid}"):
            restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{RUN.format('-dim64')}/run.json": "r"})])
        assert (inflight / "timing.json").read_text() == "running"
        assert not (res / RUN.format("-dim64")).exists()
    finally:
        holder.communicate("")
    got = restore.restore(str(res), [pack(tmp_path / "b.tgz", {f"{RUN.format('-dim64')}/run.json": "r"})])
    assert got["runs"] == 1 and got["unfinished_runs"] == [RUN.format("")]     # the sweep ended: its run left out


def test_a_sparse_member_past_the_cap_is_refused_before_anything_is_written(tmp_path):
    """A few hundred bytes of archive holding a 5 GiB sparse file (GNU tar -S): its size in
    the headers counts, and the run already there keeps its files."""
    run = RUN.format("")
    src = tmp_path / "src"
    (src / run).mkdir(parents=True)
    (src / run / "run.json").write_text("new")
    with open(src / run / "timing.json", "wb") as f:
        f.truncate(5 << 30)
    archive = tmp_path / "sparse.tgz"
    subprocess.run(["tar", "-cSzf", str(archive), "-C", str(src), "runs"], check=True)
    assert archive.stat().st_size < 10_000
    res = tmp_path / "res"
    (res / run).mkdir(parents=True)
    (res / run / "run.json").write_text("old")
    (res / run / "metrics.json").write_text("old")
    with pytest.raises(restore.RestoreError, match=f"unpack to {(5 << 30) + 3} bytes, over the cap of {4 << 30}"):
        restore.restore(str(res), [str(archive)])
    assert sorted(os.listdir(res)) == ["runs"]                       # no staging folder left, no lock taken
    assert {n: (res / run / n).read_text() for n in os.listdir(res / run)} == {"run.json": "old",
                                                                               "metrics.json": "old"}


@pytest.mark.parametrize("member, said", [("../evil.json", "cannot be unpacked"),
                                          ("{tmp_path}/abs-evil.json", "no runs/ folder")])
def test_an_archive_reaching_outside_the_results_folder_writes_nothing_there(tmp_path, member, said):
    """A member that climbs out is refused; an absolute one lands inside, its slash
    stripped (the tar module's data filter), and the archive has no runs/ either way.
    The absolute one names a path under tmp_path: where a change breaks the check, the
    file lands there (seen, and removed with tmp_path), never at the file system's root."""
    member = member.format(tmp_path=tmp_path)
    path = tmp_path / "bad.tgz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(member)
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(restore.RestoreError, match=said):
        restore.restore(str(tmp_path / "res"), [str(path)])
    assert not any(p.name.startswith("evil") for p in tmp_path.rglob("*")) and not os.path.exists(member)


def test_a_missing_or_foreign_archive_is_one_line_from_the_command(tmp_path):
    (tmp_path / "notes.txt").write_text("not a tar")
    for arg, said in ((tmp_path / "none.tgz", "no such file"), (tmp_path / "notes.txt", "cannot be unpacked")):
        p = subprocess.run([sys.executable, "-m", "fusionlab.cli", "restore", str(tmp_path / "res"), str(arg)],
                           capture_output=True, text=True)
        assert p.returncode == 2 and said in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.slow          # a Snakemake dry run (the slow tier's, as the other dry runs of the tests)
def test_a_run_whose_metrics_predate_its_record_is_made_again_by_snakemake_and_left_out_by_restore(tmp_path):
    """tar keeps each file's time: a run's metrics.json packed older than its run.json
    (made from the profile before) makes Snakemake measure it again after a plain unpack;
    restore, which gives every file one time, leaves that run out instead (stale)."""
    run = RUN.format("")
    archive = pack(tmp_path / "a.tgz", {f"{run}/timing.json": "t", f"{run}/run.json": "r",
                                        f"{run}/metrics.json": "m"}, prefix="",
                   times={f"{run}/timing.json": 1.7e9, f"{run}/run.json": 1.7e9 + 0.5,
                          f"{run}/metrics.json": 1.7e9 + 0.25})
    plain = tmp_path / "plain"
    plain.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(plain, filter="data")
    (plain / "Snakefile").write_text(SNAKEFILE)
    p = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=plain,
                       capture_output=True, text=True)
    assert p.returncode == 0 and "rule metrics" in p.stdout + p.stderr, p.stderr
    got = restore.restore(str(tmp_path / "restored"), [archive])
    assert got["stale_runs"] == [run] and got["runs"] == 0
    assert not (tmp_path / "restored" / run).exists()


def test_a_python_without_the_data_filter_refuses_the_same_by_hand(tmp_path, monkeypatch):
    monkeypatch.delattr(tarfile, "data_filter")
    ok = pack(tmp_path / "ok.tgz", {f"{RUN.format('')}/run.json": "r"}, prefix=f"{tmp_path}/abs/")  # absolute
    restore.restore(str(tmp_path / "res"), [ok])
    assert (tmp_path / "res" / RUN.format("") / "run.json").read_text() == "r"
    bad = pack(tmp_path / "bad.tgz", {f"{RUN.format('')}/run.json": "r", "../../evil.json": "x"}, prefix="")
    with pytest.raises(restore.RestoreError, match="not a plain file or folder inside"):
        restore.restore(str(tmp_path / "res2"), [bad])
    assert not any(p.name.startswith("evil") for p in tmp_path.rglob("*")) and not (tmp_path / "abs").exists()
