"""fusionlab restore (plan.restore) at the edges a careless change crosses: the size cap
and free space at exactly the archives' size, the cap's setting, a run in two archives
that differ only in one file's bytes, in a file the other lacks or in a subfolder, a
file or link where a folder must be made, a link under device/, the run folders' depth
and name, what a killed Nsight Compute record is, the one time given, and the command's
own lines (main, in this process)."""
from __future__ import annotations

import collections
import io
import os
import tarfile

import pytest

from fusionlab.plan import restore
from test_restore import RUN, pack

RUN0 = RUN.format("")


def test_the_cap_is_4_gib_unless_set_and_a_setting_that_is_no_number_is_named(monkeypatch):
    monkeypatch.delenv("FUSIONLAB_RESTORE_MAX_BYTES", raising=False)
    assert restore.max_bytes() == restore.MAX_BYTES == 4 * 2**30
    for raw, cap in (("", 4 * 2**30), ("  ", 4 * 2**30), ("1000", 1000), (" 7 ", 7)):
        monkeypatch.setenv("FUSIONLAB_RESTORE_MAX_BYTES", raw)
        assert restore.max_bytes() == cap
    monkeypatch.setenv("FUSIONLAB_RESTORE_MAX_BYTES", "4G")
    with pytest.raises(restore.RestoreError) as e:
        restore.max_bytes()
    assert str(e.value) == "FUSIONLAB_RESTORE_MAX_BYTES='4G' is not a whole number of bytes"


def test_archives_of_exactly_the_cap_pass_and_one_byte_over_is_refused(tmp_path, monkeypatch):
    """Two archives of 3 + 4 bytes of files (their folders count nothing): 7 bytes."""
    a = pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "abc"})
    b = pack(tmp_path / "b.tgz", {f"{RUN.format('-dim64')}/run.json": "defg"})
    monkeypatch.setenv("FUSIONLAB_RESTORE_MAX_BYTES", "6")
    with pytest.raises(restore.RestoreError) as e:
        restore.restore(str(tmp_path / "res"), [a, b])
    assert str(e.value) == ("the archives unpack to 7 bytes, over the cap of 6 bytes "
                            "(FUSIONLAB_RESTORE_MAX_BYTES sets another)")
    assert not (tmp_path / "res").exists()
    monkeypatch.setenv("FUSIONLAB_RESTORE_MAX_BYTES", "7")
    got = restore.restore(str(tmp_path / "res"), [a, b])
    assert (got["archives"], got["packed"], got["runs"]) == (2, 2, 2)


def test_a_folder_members_header_size_is_not_counted(tmp_path, monkeypatch):
    """A folder's header stating 10**12 bytes (a folder has no data): 1 byte in all."""
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w") as tar:
        d = tarfile.TarInfo("runs/nsys")
        d.type, d.size = tarfile.DIRTYPE, 10**12
        tar.addfile(d)
        f = tarfile.TarInfo(f"{RUN0}/run.json")
        f.size = 1
        tar.addfile(f, io.BytesIO(b"r"))
    monkeypatch.setenv("FUSIONLAB_RESTORE_MAX_BYTES", "1")
    assert restore._check_sizes([str(path)], str(tmp_path / "res")) == 1


def test_the_free_space_of_the_nearest_folder_is_the_limit(tmp_path, monkeypatch):
    """The results folder two levels below tmp_path, not made yet: tmp_path's free space is
    asked; exactly the archive's 3 bytes free pass, 2 are refused."""
    usage = collections.namedtuple("usage", "total used free")
    asked = []
    archive = pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "abc"})
    res = str(tmp_path / "new" / "res")
    for free in (3, 2):
        monkeypatch.setattr(restore.shutil, "disk_usage", lambda p, free=free: asked.append(p) or usage(9, 9, free))
        if free == 3:
            assert restore._check_sizes([archive], res) == 3
        else:
            with pytest.raises(restore.RestoreError) as e:
                restore._check_sizes([archive], res)
            assert str(e.value) == f"the archives unpack to 3 bytes; {res} has 2 bytes free"
    assert asked == [str(tmp_path)] * 2


def test_missing_archive_folder_archive_and_a_file_as_results_are_named(tmp_path):
    archive = pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r"})
    for arg, said in ((tmp_path / "none.tgz", "no such file"), (tmp_path, "a folder, not an archive")):
        with pytest.raises(restore.RestoreError) as e:
            restore.restore(str(tmp_path / "res"), [archive, str(arg)])
        assert str(e.value) == f"{arg}: {said}"
    (tmp_path / "file").write_text("x")
    with pytest.raises(restore.RestoreError) as e:
        restore.restore(str(tmp_path / "file"), [archive])
    assert str(e.value) == f"{tmp_path / 'file'} is not a folder"


def two(tmp_path, first: dict, second: dict):
    """Restore one run packed twice with these files (relative to the run folder)."""
    a = pack(tmp_path / "a.tgz", {f"{RUN0}/{n}": t for n, t in first.items()})
    b = pack(tmp_path / "b.tgz", {f"{RUN0}/{n}": t for n, t in second.items()})
    return restore.restore(str(tmp_path / "res"), [a, b])


@pytest.mark.parametrize("first, second", [
    ({"run.json": "A"}, {"run.json": "B"}),                                     # the same size and time
    ({"run.json": "r", "metrics.json": "m"}, {"run.json": "r"}),               # a file the second lacks
    ({"run.json": "r"}, {"run.json": "r", "metrics.json": "m"}),               # a file the first lacks
    ({"run.json": "r", "extra": "x"}, {"run.json": "r", "extra/x": "x"}),      # a file and a folder
    ({"run.json": "r", "sub/a.json": "A"}, {"run.json": "r", "sub/a.json": "B"}),   # a subfolder's file
])
def test_a_run_packed_twice_with_any_difference_is_refused(tmp_path, first, second):
    with pytest.raises(restore.RestoreError, match=f"run {RUN0} is in .*a.tgz and in .*b.tgz with different files"):
        two(tmp_path, first, second)
    assert not (tmp_path / "res" / "runs").exists()


def test_a_run_packed_twice_the_same_with_a_subfolder_is_one_run(tmp_path):
    files = {"run.json": "r", "sub/a.json": "A", "sub/deeper/b.json": "B"}
    got = two(tmp_path, files, files)
    assert (got["packed"], got["runs"]) == (2, 1)
    assert (tmp_path / "res" / RUN0 / "sub" / "deeper" / "b.json").read_text() == "B"


def test_a_file_where_a_folder_is_made_is_refused(tmp_path):
    res = tmp_path / "res"
    (res / "runs").mkdir(parents=True)
    (res / "runs" / "nsys").write_text("not a folder")
    with pytest.raises(restore.RestoreError) as e:
        restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r"})])
    assert str(e.value) == (f"{res / 'runs' / 'nsys'} is a symbolic link or not a folder: restore follows none "
                            f"inside the results folder")
    assert (res / "runs" / "nsys").read_text() == "not a folder"
    assert sorted(os.listdir(res)) == [".sweep.lock", "runs"]      # the staging folder removed


def test_a_folder_where_the_archive_holds_a_file_is_refused(tmp_path):
    res = tmp_path / "res"
    (res / "device" / "peaks.json").mkdir(parents=True)
    archive = pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r", "device/peaks.json": "{}"})
    with pytest.raises(restore.RestoreError) as e:
        restore.restore(str(res), [archive])
    assert str(e.value) == f"{res / 'device' / 'peaks.json'} is a folder; the archive holds a file there"


def test_files_of_runs_and_device_outside_run_folders_are_restored_the_last_archive_last(tmp_path):
    a = pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r", "device/peaks.json": "A", "runs/nsys/index": "A"})
    b = pack(tmp_path / "b.tgz", {"device/peaks.json": "B", "runs/README": "B", "tables/runs.csv": "B"},
             prefix="")
    res = tmp_path / "res"
    got = restore.restore(str(res), [a, b])
    assert (res / "device" / "peaks.json").read_text() == "B"
    assert (res / "runs" / "nsys" / "index").read_text() == "A" and (res / "runs" / "README").read_text() == "B"
    assert not (res / "tables").exists() and os.listdir(res / RUN0) == ["run.json"]
    assert (got["packed"], got["runs"]) == (1, 1)


@pytest.mark.parametrize("where", ["device", "device/sub"])
def test_a_link_under_device_is_refused(tmp_path, where):
    res = tmp_path / "res"
    (res / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "elsewhere").mkdir()
    (res / where).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(restore.RestoreError) as e:
        restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r"})])
    said = " (restore into the folder it points to instead)" if where == "device" else ""
    assert str(e.value) == f"{res / where} is a symbolic link: restore follows none inside the results folder{said}"
    assert os.listdir(tmp_path / "elsewhere") == [] and not (res / "runs").exists()


def test_a_file_link_under_runs_is_refused(tmp_path):
    res = tmp_path / "res"
    (res / RUN0).mkdir(parents=True)
    (tmp_path / "target.json").write_text("t")
    (res / RUN0 / "run.json").symlink_to(tmp_path / "target.json")
    with pytest.raises(restore.RestoreError, match="run.json is a symbolic link"):
        restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{RUN.format('-dim64')}/run.json": "r"})])


def test_run_folders_are_six_levels_down_named_r_and_never_a_link(tmp_path):
    top = tmp_path / "runs"
    for rel in ("p/m/v/s/b/r0", "p/m/v/s/b/r1/deeper", "p/m/v/s/b/x0", "p/m/v/s/r0", "p/m/v/s/b/c/r0",
                "p/m/v/s/a/r2"):
        (top / rel).mkdir(parents=True)
    (top / "p/m/v/s/b/r9").symlink_to(top / "p/m/v/s/b/r0")
    assert restore.run_dirs(str(tmp_path)) == [str(top / "p/m/v/s/a/r2"), str(top / "p/m/v/s/b/r0"),
                                               str(top / "p/m/v/s/b/r1")]


def test_unpack_gives_the_folder_holding_runs_and_its_run_count(tmp_path):
    archive = pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r", f"{RUN.format('-dim64')}/timing.json": "t",
                                        "runs/nsys/m/compile/inference_float32/bs8/x0/run.json": "x"})
    root, n = restore.unpack(archive, str(tmp_path / "stage"))
    assert (root, n) == (str(tmp_path / "stage" / "results" / "real-models"), 2)
    empty = pack(tmp_path / "b.tgz", {"tables/runs.csv": "t"})
    with pytest.raises(restore.RestoreError) as e:
        restore.unpack(empty, str(tmp_path / "stage2"))
    assert str(e.value) == f"{empty}: no runs/ folder in it"


def test_the_first_runs_folder_in_name_order_is_taken(tmp_path):
    for top in ("b", "a", "c"):
        (tmp_path / top / "runs").mkdir(parents=True)
    assert restore._runs_root(str(tmp_path)) == str(tmp_path / "a")


def test_unpack_refuses_a_link_inside_even_where_the_data_filter_would_take_it(tmp_path):
    path = tmp_path / "link.tar"
    with tarfile.open(path, "w") as tar:
        f = tarfile.TarInfo(f"{RUN0}/timing.json")
        f.size = 1
        tar.addfile(f, io.BytesIO(b"t"))
        link = tarfile.TarInfo(f"{RUN0}/run.json")
        link.type, link.linkname = tarfile.SYMTYPE, "timing.json"
        tar.addfile(link)
    with pytest.raises(restore.RestoreError) as e:
        restore.unpack(str(path), str(tmp_path / "stage"))
    assert str(e.value) == (f"{path}: cannot be unpacked (TarError: '{RUN0}/run.json' is not a plain file or folder "
                            f"inside the results folder)")
    assert not (tmp_path / "stage" / RUN0 / "run.json").exists()


def tar_of(path, members: dict, modes: dict | None = None):
    """A plain tar of members (name -> text), each with its mode from modes (0o644 else)."""
    with tarfile.open(path, "w") as tar:
        for name, text in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text), (modes or {}).get(name, 0o644)
            tar.addfile(info, io.BytesIO(text.encode()))
    return str(path)


def test_unpack_names_a_member_that_climbs_out_and_keeps_a_name_beginning_with_dots(tmp_path):
    """`../evil.json` refused by restore's own check (its message, not the data filter's);
    `X../runs/...` (a folder named X.., no `..` part) unpacks inside; an absolute name lands
    inside, its slash stripped."""
    bad = tar_of(tmp_path / "bad.tar", {f"{RUN0}/run.json": "r", "../evil.json": "x"})
    with pytest.raises(restore.RestoreError) as e:
        restore.unpack(bad, str(tmp_path / "stage"))
    assert str(e.value) == (f"{bad}: cannot be unpacked (TarError: '../evil.json' is not a plain file or folder "
                            f"inside the results folder)")
    assert not (tmp_path / "evil.json").exists() and not (tmp_path / "stage" / RUN0).exists()
    odd = tar_of(tmp_path / "odd.tar", {f"X../{RUN0}/run.json": "r", f"{tmp_path}/abs/a.json": "a"})
    assert restore.unpack(odd, str(tmp_path / "stage2")) == (str(tmp_path / "stage2" / "X.."), 1)
    assert (tmp_path / "stage2" / str(tmp_path).lstrip("/") / "abs" / "a.json").read_text() == "a"
    assert not (tmp_path / "abs").exists()        # (a broken check would write there, not at /)


def test_a_members_setuid_and_group_or_other_write_bits_are_cleared(tmp_path):
    """The data filter (this Python has it): mode 0o4777 lands as 0o755."""
    archive = tar_of(tmp_path / "a.tar", {f"{RUN0}/run.json": "r"}, {f"{RUN0}/run.json": 0o4777})
    restore.restore(str(tmp_path / "res"), [archive])
    assert os.stat(tmp_path / "res" / RUN0 / "run.json").st_mode & 0o7777 == 0o755


def test_members_are_checked_before_anything_is_written(tmp_path):
    """restore's own first check (_members, before the sizes): a link, a `..` part, a file
    that is no archive, each named in its own words; names beginning with X.. or ` ..`
    (folders of those names, no `..` part) pass."""
    link = tmp_path / "link.tar"
    with tarfile.open(link, "w") as tar:
        info = tarfile.TarInfo("runs/x")
        info.type, info.linkname = tarfile.SYMTYPE, "y"
        tar.addfile(info)
    climb = tar_of(tmp_path / "climb.tar", {"runs/../../evil.json": "x"})
    for archive, name in ((str(link), "runs/x"), (climb, "runs/../../evil.json")):
        with pytest.raises(restore.RestoreError) as e:
            restore._members(archive)
        assert str(e.value) == (f"{archive}: cannot be unpacked ({name!r} is not a plain file or folder inside "
                                f"the results folder)")
    (tmp_path / "notes.tar").write_text("not a tar")
    with pytest.raises(restore.RestoreError) as e:
        restore._members(str(tmp_path / "notes.tar"))
    assert str(e.value).startswith(f"{tmp_path / 'notes.tar'}: cannot be unpacked (ReadError: ")
    odd = tar_of(tmp_path / "odd.tar", {"X../a.json": "a", " ../b.json": "b", "/c.json": "c"})
    assert [m.name for m in restore._members(odd)] == ["X../a.json", " ../b.json", "/c.json"]


def test_without_the_data_filter_a_name_beginning_with_x_dots_unpacks_inside(tmp_path, monkeypatch):
    monkeypatch.delattr(tarfile, "data_filter")
    odd = tar_of(tmp_path / "odd.tar", {f"X../{RUN0}/run.json": "r"})
    assert restore.unpack(odd, str(tmp_path / "stage")) == (str(tmp_path / "stage" / "X.."), 1)
    assert not (tmp_path / "runs").exists()


def test_each_run_already_there_is_replaced_whole(tmp_path):
    """Two runs in RESULTS (an older run.json and metrics.json each), both in the archive."""
    res = tmp_path / "res"
    runs = (RUN0, RUN.format("-dim64"))
    for rel in runs:
        (res / rel).mkdir(parents=True)
        (res / rel / "run.json").write_text("old")
        (res / rel / "metrics.json").write_text("old")
    restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{rel}/run.json": "new" for rel in runs})])
    for rel in runs:
        assert {n: (res / rel / n).read_text() for n in os.listdir(res / rel)} == {"run.json": "new"}


def test_the_staging_folder_is_inside_the_results_folder(tmp_path, monkeypatch):
    """Each archive unpacked into RESULTS/.restore-*/<its index> (one file system: moved by
    rename), gone at the end."""
    folders, unpack = [], restore.unpack
    monkeypatch.setattr(restore, "unpack", lambda a, folder: folders.append(folder) or unpack(a, folder))
    res = tmp_path / "res"
    restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r"}),
                               pack(tmp_path / "b.tgz", {f"{RUN.format('-dim64')}/run.json": "r"})])
    staging = os.path.dirname(folders[0])
    assert os.path.dirname(staging) == str(res) and os.path.basename(staging).startswith(".restore-")
    assert folders == [os.path.join(staging, "0"), os.path.join(staging, "1")] and not os.path.exists(staging)


@pytest.mark.parametrize("files, killed", [
    ({}, False),                                                          # no ncu_run.json
    ({"ncu_run.json": '{"reason": "process died"}', "ncu.json": "{}"}, False),   # finished after all
    ({"ncu_run.json": '{"reason": "at 3 s: process died (SIGKILL)"}'}, True),
    ({"ncu_run.json": '{"reason": "ncu: ERR_NVGPUCTRPERM"}'}, False),     # a failure of its own
    ({"ncu_run.json": '{"status": "error"}'}, False),                     # no reason
    ({"ncu_run.json": '{"reason": "proc'}, True),                          # cut off mid-write
    ({"ncu_run.json": '["process died"]'}, True),                          # not a record
])
def test_a_killed_nsight_compute_record(tmp_path, files, killed):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert restore._killed_ncu(str(tmp_path)) is killed


def test_a_run_is_finished_by_a_file_named_run_or_unsupported_only(tmp_path):
    for name, finished in (("run.json", True), ("unsupported.json", True), ("ncu.json", False),
                           ("timing.json", False)):
        d = tmp_path / name.split(".")[0]
        d.mkdir()
        (d / name).write_text("{}")
        assert restore._finished(str(d)) is finished
    (tmp_path / "folder" / "run.json").mkdir(parents=True)
    assert restore._finished(str(tmp_path / "folder")) is False


def test_drop_unfinished_names_what_it_removed_relative_to_the_folder(tmp_path):
    done, died, killed = RUN0, RUN.format("-dim64"), RUN.format("-dim128")
    for rel, files in ((done, {"run.json": "r", "ncu.log": "l"}), (died, {"timing.json": "t"}),
                       (killed, {"run.json": "r", "ncu_run.json": '{"reason": "process died"}'})):
        (tmp_path / rel).mkdir(parents=True)
        for name, text in files.items():
            (tmp_path / rel / name).write_text(text)
    assert restore.drop_unfinished(str(tmp_path)) == ([died], [killed])
    assert not (tmp_path / died).exists() and os.listdir(tmp_path / killed) == ["run.json"]
    assert sorted(os.listdir(tmp_path / done)) == ["ncu.log", "run.json"]


def test_same_time_gives_the_time_asked_to_each_file_folder_and_the_top_and_counts_them(tmp_path):
    top = tmp_path / "res"
    (top / "a").mkdir(parents=True)
    (top / "a" / "f").write_text("f")
    (top / "g").write_text("g")
    (tmp_path / "outside").write_text("o")
    before = os.stat(tmp_path / "outside").st_mtime_ns
    (top / "link").symlink_to(tmp_path / "outside")
    assert restore.same_time(str(top), 1.7e9) == 3                  # a, a/f, g; the link left alone
    for p in (top, top / "a", top / "a" / "f", top / "g"):
        assert os.stat(p).st_mtime_ns == 1_700_000_000_000_000_000
    assert os.stat(tmp_path / "outside").st_mtime_ns == before


def test_what_a_killed_sweep_left_in_the_results_folder_is_left_out_and_named(tmp_path):
    """RESULTS holds a run without run.json and a run with a killed Nsight Compute record;
    the archive another run: both are named, the first removed, the second's record."""
    res = tmp_path / "res"
    died, killed = RUN.format("-dim64"), RUN.format("-dim128")
    (res / died).mkdir(parents=True)
    (res / died / "timing.json").write_text("t")
    (res / killed).mkdir(parents=True)
    (res / killed / "run.json").write_text("r")
    (res / killed / "ncu_run.json").write_text('{"reason": "process died"}')
    (res / "ncu.json").write_text("{}")            # a file of the results folder itself, no run's
    got = restore.restore(str(res), [pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r"})])
    assert got == {"archives": 1, "packed": 1, "runs": 2, "unfinished_runs": [died], "stale_runs": [], "unfinished_ncu": [killed]}
    assert not (res / died).exists() and os.listdir(res / killed) == ["run.json"]


def test_the_command_says_what_it_restored_and_left_out(tmp_path, capsys):
    died, killed = RUN.format("-dim64"), RUN.format("-dim128")
    archive = pack(tmp_path / "a.tgz", {f"{RUN0}/run.json": "r", f"{died}/timing.json": "t",
                                        f"{killed}/run.json": "r", f"{killed}/ncu_run.json": "{"})
    res = str(tmp_path / "res")
    assert restore.main([res, archive]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{res}: 2 runs from 1 archive(s); left out 1 unfinished run(s), 0 stale run(s) and 1 killed Nsight Compute record(s); "
        f"every file given one time",
        f"  left out a run (no run.json): {died}",
        f"  left out an Nsight Compute record (no ncu.json): {killed}"]


def test_the_commands_help_and_usage(capsys, monkeypatch):
    for flag in ("-h", "--help"):
        assert restore.main([flag]) == 0
        out = capsys.readouterr().out
        assert out == "usage: fusionlab restore RESULTS ARCHIVE [ARCHIVE ...]\n\n" + \
            restore.__doc__.split("\n\n")[0] + "\n"
    for args in ([], ["res"]):
        assert restore.main(args) == 2
        got = capsys.readouterr()
        assert got.out == "" and got.err == ("fusionlab restore: error: give the results folder and at least one "
                                             "archive (fusionlab restore RESULTS ARCHIVE [ARCHIVE ...])\n")
    monkeypatch.setattr("sys.argv", ["fusionlab-restore", "--help"])
    assert restore.main() == 0 and capsys.readouterr().out.startswith("usage: fusionlab restore")
