"""The nsys export reader (readers.nsys_sqlite) on small exports written here, every value
worked out by hand: which API names launch GPU work (LAUNCH_API) and which differ only in
a version suffix (one launch written under two names, nsys 2022.2), the first launch call
of a correlation id joined and the others, a call without an id, a kernel without a launch
and one of a call that launches nothing left out; names stored as string ids or as text
(numbered in order of first appearance), a quote in a name, the string ids asked for in
parts of 500, a report without calls (cpu), without the runtime or the kernel table, and
the one-line errors of a table without its columns; each under both readers (columnar and
sqlite3), as streamed (scan) and as loaded (load)."""
import sqlite3

import numpy as np
import pytest

from fusionlab.analysis.readers import nsys_arrow, nsys_sqlite
from fusionlab.analysis.readers.trace import ReportError

RT, KT = "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL"
STRINGS = {1: "cudaLaunchKernel", 2: "cudaLaunchKernel_v7000", 3: "cudaMemcpyAsync_v3020", 4: "kA",
           5: "void kA<float>()", 6: "kB", 7: "void kB()"}
# runtime calls (start, end, nameId, correlationId, globalTid), in file order: launch 1 written under
# two names, a copy (2), launch 3 on another thread, a launch without an id
CALLS = [(100, 110, 2, 1, 7), (100, 112, 1, 1, 7), (120, 125, 3, 2, 7), (130, 140, 1, 3, 8), (150, 160, 1, None, 7)]
# kernels (start, end, shortName, demangledName, correlationId, streamId): 99 has no call, 2 is a copy's
KERNELS = [(200, 210, 4, 5, 1, 7), (190, 195, 6, 7, 3, 8), (300, 310, 4, 5, 99, 7), (195, 196, 6, 7, 2, 7)]


@pytest.fixture(params=["columnar", "sqlite3"])
def reader(request, monkeypatch):
    if request.param == "sqlite3":
        monkeypatch.setenv("FUSIONLAB_SQLITE_READER", "sqlite3")
    elif not nsys_arrow.available():
        pytest.skip("adbc-driver-sqlite is not installed: the columnar reader is off")
    return request.param


def export(path, calls=CALLS, kernels=KERNELS, strings=STRINGS, text=False, runtime=True, kernel=True,
           rt_cols=None, kt_cols=None) -> str:
    """An export of these rows (text: names as text, not string ids)."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", strings.items())
    name = "name TEXT" if text else "nameId INTEGER"
    if runtime:
        con.execute(f"CREATE TABLE {RT} ({rt_cols or f'start INTEGER, end INTEGER, {name}, correlationId INTEGER, globalTid INTEGER'})")
        if calls:
            con.executemany(f"INSERT INTO {RT} VALUES (?, ?, ?, ?, ?)",
                            [(s, e, strings[n] if text else n, c, t) for s, e, n, c, t in calls])
    if kernel:
        names = "shortName TEXT, demangledName TEXT" if text else "shortName INTEGER, demangledName INTEGER"
        con.execute(f"CREATE TABLE {KT} ({kt_cols or f'start INTEGER, end INTEGER, {names}, correlationId INTEGER, streamId INTEGER'})")
        if kernels:
            con.executemany(f"INSERT INTO {KT} VALUES (?, ?, ?, ?, ?, ?)",
                            [(s, e, strings[a] if text else a, strings[b] if text else b, c, st)
                             for s, e, a, b, c, st in kernels])
    con.commit()
    con.close()
    return str(path)


def rows(chunks) -> list:
    return [r for c in chunks for r in c.tolist()]


@pytest.mark.parametrize("name", ["cudaLaunchKernel", "cudaLaunchKernel_v7000", "cuLaunchKernel",
                                  "cuLaunchKernel_ptsz", "cudaLaunchCooperativeKernel_v9000",
                                  "cuLaunchCooperativeKernel", "cudaGraphLaunch_v10000", "cuGraphLaunch",
                                  "cudaLaunchKernelExC_v11060", "cuLaunchKernelEx"])
def test_launch_api_names_that_launch_gpu_work(name):
    assert nsys_sqlite.LAUNCH_API.match(name)


@pytest.mark.parametrize("name", ["cudaMemcpyAsync", "xcudaLaunchKernel", "cudaLaunchHostFunc",
                                  "cudaStreamIsCapturing", "CudaLaunchKernel", "cudLaunchKernel", "cuGraphInstantiate",
                                  "cudaLaunch", ""])
def test_api_names_that_launch_nothing(name):
    assert not nsys_sqlite.LAUNCH_API.match(name)


def test_a_version_suffix_is_an_underscore_v_and_digits_at_the_end():
    v = nsys_sqlite.VERSION
    assert v.sub("", "cudaLaunchKernel_v7000") == "cudaLaunchKernel"
    assert [v.sub("", s) for s in ("cuLaunchKernel_ptsz", "cudaLaunchKernel_v7000x", "cudaLaunchKernel_v",
                                   "a_v1_v2")] == ["cuLaunchKernel_ptsz", "cudaLaunchKernel_v7000x",
                                                   "cudaLaunchKernel_v", "a_v1"]


def test_the_launch_condition_by_string_id_and_whether_one_launch_has_two_names(tmp_path):
    con = sqlite3.connect(export(tmp_path / "a.sqlite"))
    assert nsys_sqlite.Report._launch_api(con, "nameId") == ("nameId IN (1,2)", True, [1, 2])
    assert nsys_sqlite.Report._launch_filter(con, "nameId") == "nameId IN (1,2)"
    con.close()
    con = sqlite3.connect(export(tmp_path / "b.sqlite", strings={**STRINGS, 1: "cuLaunchKernel"}))
    assert nsys_sqlite.Report._launch_api(con, "nameId") == ("nameId IN (1,2)", False, [1, 2])
    con.execute("DROP TABLE StringIds")
    assert nsys_sqlite.Report._launch_api(con, "nameId") == ("nameId IN ()", False, [])
    con.close()


def test_the_launch_condition_by_text_quotes_each_name(tmp_path):
    strings = {**STRINGS, 1: "cudaLaunchKernel'q"}
    con = sqlite3.connect(export(tmp_path / "t.sqlite", strings=strings, text=True))
    cond, twice, ids = nsys_sqlite.Report._launch_api(con, "name")
    assert (cond, twice, ids) == ("name IN ('cudaLaunchKernel_v7000','cudaLaunchKernel''q')", False, None)
    assert con.execute(f"SELECT count(*) FROM {RT} WHERE {cond}").fetchone()[0] == 4
    con.close()
    con = sqlite3.connect(export(tmp_path / "u.sqlite", text=True))
    assert nsys_sqlite.Report._launch_api(con, "name") == (
        "name IN ('cudaLaunchKernel_v7000','cudaLaunchKernel')", True, None)
    con.close()


def test_kernels_streamed_with_the_first_launch_of_their_id(tmp_path, reader):
    r = nsys_sqlite.scan(export(tmp_path / "a.sqlite"))
    assert (r.device, r.tool_version, r.gpu, r.gpus, r.notes) == ("cuda", None, None, {}, [])
    assert r.columnar is (reader == "columnar")
    assert rows(r.kernel_chunks()) == [[190, 195, 130, 140, 8], [200, 210, 100, 110, 7]]
    assert rows(r.kernel_chunks(names=True)) == [[190, 195, 130, 140, 8, 6, 7], [200, 210, 100, 110, 7, 4, 5]]
    assert [c.tolist() for c in r.kernel_chunks(chunk=1)] == [[[190, 195, 130, 140, 8]], [[200, 210, 100, 110, 7]]]
    for c in r.kernel_chunks(names=True):
        assert c.dtype == np.int64
    # one launch per correlation id (the call without an id too), in no particular order
    assert sorted(rows(r.launch_chunks())) == [[100, 110, 7], [130, 140, 8], [150, 160, 7]]
    assert sum(len(c) == 1 for c in r.launch_chunks(chunk=1)) == 3
    assert r.strings([6, 4.0, 5, 99]) == {4: "kA", 5: "void kA<float>()", 6: "kB", 99: ""}
    assert r.strings([]) == {}


def test_the_same_launch_under_one_name_is_never_twice(tmp_path, reader):
    calls = [(100, 110, 1, 1, 7), (130, 140, 1, 3, 8), (150, 160, 1, None, 7), (170, 180, 2, 4, 9)]
    r = nsys_sqlite.scan(export(tmp_path / "a.sqlite", calls=calls, strings={**STRINGS, 1: "cuLaunchKernel"}))
    assert r._runtime["twice"] is False
    assert sorted(rows(r.launch_chunks())) == [[100, 110, 7], [130, 140, 8], [150, 160, 7], [170, 180, 9]]


def test_kernel_config_columns_as_their_products_or_no_value(tmp_path, reader):
    cols = ("start INTEGER, end INTEGER, shortName INTEGER, demangledName INTEGER, correlationId INTEGER, "
            "streamId INTEGER, deviceId INTEGER, registersPerThread INTEGER, blockX INTEGER, blockY INTEGER, "
            "blockZ INTEGER")
    path = export(tmp_path / "c.sqlite", kernels=[], kt_cols=cols)
    con = sqlite3.connect(path)
    con.execute(f"INSERT INTO {KT} VALUES (200, 210, 4, 5, 1, 7, 0, 32, 128, 2, 1)")
    con.execute(f"INSERT INTO {KT} VALUES (220, 230, 6, 7, 3, 7, NULL, 16, 64, 1, 1)")
    con.commit()
    con.close()
    r = nsys_sqlite.scan(path)
    assert rows(r.kernel_chunks(names=True, config=True)) == [
        [200, 210, 100, 110, 7, 4, 5, 0, 32, -1, -1, -1, 256, -1],
        [220, 230, 130, 140, 8, 6, 7, -1, 16, -1, -1, -1, 64, -1]]
    assert rows(r.kernel_chunks(config=True)) == [[200, 210, 100, 110, 7], [220, 230, 130, 140, 8]]
    t = nsys_sqlite.load(path)
    assert t.kernels[["registers_per_thread", "block_threads", "grid_blocks", "device_id"]].values.tolist() == [
        [32, 256, -1, 0], [16, 64, -1, -1]]


def test_names_stored_as_text_numbered_in_order_of_first_appearance(tmp_path, reader):
    r = nsys_sqlite.scan(export(tmp_path / "t.sqlite", text=True))
    assert r._kernel["ids"] is False
    assert rows(r.kernel_chunks(names=True)) == [[190, 195, 130, 140, 8, 0, 1], [200, 210, 100, 110, 7, 2, 3]]
    for c in (*r.kernel_chunks(names=True), *r.kernel_chunks(names=True, config=True), *r.launch_chunks()):
        assert c.dtype == np.int64
    assert r.strings([3, 0, 2, 1, 7]) == {0: "kB", 1: "void kB()", 2: "kA", 3: "void kA<float>()", 7: ""}
    assert rows(r.kernel_chunks()) == [[190, 195, 130, 140, 8], [200, 210, 100, 110, 7]]
    assert sorted(rows(r.launch_chunks())) == [[100, 110, 7], [130, 140, 8], [150, 160, 7]]
    cfg = rows(r.kernel_chunks(names=True, config=True))
    assert cfg == [[190, 195, 130, 140, 8, 0, 1, -1, -1, -1, -1, -1, -1, -1],
                   [200, 210, 100, 110, 7, 2, 3, -1, -1, -1, -1, -1, -1, -1]]


def test_string_ids_asked_for_in_parts_of_500(tmp_path, reader):
    strings = {**STRINGS, **{i: f"s{i}" for i in range(10, 1300)}}
    r = nsys_sqlite.scan(export(tmp_path / "a.sqlite", strings=strings))
    got = r.strings(range(10, 1300))
    assert len(got) == 1290 and got[10] == "s10" and got[509] == "s509" and got[510] == "s510" \
        and got[1299] == "s1299" and all(got[i] == f"s{i}" for i in range(10, 1300))


def test_a_report_with_an_empty_runtime_table_is_of_the_cpu(tmp_path, reader):
    r = nsys_sqlite.scan(export(tmp_path / "a.sqlite", calls=[], kernels=[]))
    assert r.device == "cpu" and rows(r.kernel_chunks()) == [] and rows(r.launch_chunks()) == []
    t = nsys_sqlite.load(str(tmp_path / "a.sqlite"))
    assert t.device == "cpu" and len(t.api) == 0 and len(t.kernels) == 0


def test_a_report_without_runtime_or_kernel_tables(tmp_path, reader):
    path = export(tmp_path / "a.sqlite", runtime=False, kernel=False)
    r = nsys_sqlite.scan(path)
    assert r.device == "cpu" and r._runtime is None and r._kernel is None
    assert list(r.kernel_chunks()) == [] and list(r.launch_chunks()) == []
    assert r.notes and r.notes[0].startswith("no CUDA activity in this report")
    t = nsys_sqlite.load(path)
    assert t.device == "cpu" and list(t.api.columns) == ["name", "start", "end", "tid", "is_launch"]
    # calls without a kernel table: only those that launch nothing
    path = export(tmp_path / "b.sqlite", calls=[CALLS[2]], kernel=False)
    r = nsys_sqlite.scan(path)
    assert r.device == "cuda" and list(r.kernel_chunks()) == [] and list(r.launch_chunks()) == []
    t = nsys_sqlite.load(path)
    assert t.device == "cuda" and t.api["name"].tolist() == ["cudaMemcpyAsync_v3020"] and len(t.kernels) == 0
    path = export(tmp_path / "c.sqlite", calls=CALLS[3:4], kernel=False)
    for read in (nsys_sqlite.load, nsys_sqlite.scan):
        with pytest.raises(ReportError) as e:
            read(path)
        assert str(e.value) == f"{path}: 1 kernel launch calls but no kernel table ({KT}): a partial export " \
                               f"(export the .nsys-rep again)"


def test_a_loaded_report_marks_the_first_launch_of_each_id(tmp_path):
    t = nsys_sqlite.load(export(tmp_path / "a.sqlite"))
    assert t.api[["name", "start", "tid", "is_launch"]].values.tolist() == [
        ["cudaLaunchKernel_v7000", 100, 7, True], ["cudaLaunchKernel", 100, 7, False],
        ["cudaMemcpyAsync_v3020", 120, 7, False], ["cudaLaunchKernel", 130, 8, True],
        ["cudaLaunchKernel", 150, 7, True]]
    assert t.kernels[["name", "full_name", "start", "launch_start", "launch_end", "tid", "launch_name",
                      "stream"]].values.tolist() == [
        ["kB", "void kB()", 190, 130, 140, 8, "cudaLaunchKernel", 8],
        ["kA", "void kA<float>()", 200, 100, 110, 7, "cudaLaunchKernel_v7000", 7]]
    assert (t.device, t.backend, t.source) == ("cuda", "nsys", str(tmp_path / "a.sqlite"))


def test_a_loaded_report_with_text_names_and_no_stream_column(tmp_path):
    cols = "start INTEGER, end INTEGER, name TEXT, correlationId INTEGER, x INTEGER"
    path = export(tmp_path / "t.sqlite", text=True, kernels=[], kt_cols=cols)
    con = sqlite3.connect(path)
    con.execute(f"INSERT INTO {KT} VALUES (200, 210, 'kA', 1, 0)")
    con.commit()
    con.close()
    t = nsys_sqlite.load(path)
    assert t.kernels[["name", "full_name", "stream", "launch_name"]].values.tolist() == [
        ["kA", "kA", 0, "cudaLaunchKernel_v7000"]]
    assert t.api["is_launch"].tolist() == [True, False, False, True, True]


@pytest.mark.parametrize("table, cols, why", [
    (RT, "start INTEGER, end INTEGER, nameId INTEGER, corr INTEGER, globalTid INTEGER, x INTEGER",
     f"{RT} lacks nameId/correlationId (columns: ['corr', 'end', 'globalTid', 'nameId', 'start', 'x'])"),
    (RT, "start INTEGER, end INTEGER, label INTEGER, correlationId INTEGER, globalTid INTEGER, x INTEGER",
     f"{RT} lacks nameId/correlationId (columns: ['correlationId', 'end', 'globalTid', 'label', 'start', 'x'])"),
    (KT, "start INTEGER, end INTEGER, label INTEGER, x INTEGER, correlationId INTEGER, streamId INTEGER",
     f"{KT} lacks a name or correlationId column (columns: ['correlationId', 'end', 'label', 'start', 'streamId', "
     f"'x'])"),
    (KT, "start INTEGER, end INTEGER, shortName INTEGER, x INTEGER, corr INTEGER, streamId INTEGER",
     f"{KT} lacks a name or correlationId column (columns: ['corr', 'end', 'shortName', 'start', 'streamId', "
     f"'x'])")])
def test_a_table_without_its_columns_is_refused_in_one_line(tmp_path, table, cols, why):
    kw = {"rt_cols": cols} if table == RT else {"kt_cols": cols}
    path = export(tmp_path / "a.sqlite", calls=[], kernels=[], **kw)
    with pytest.raises(ReportError) as e:
        nsys_sqlite.scan(path)
    assert str(e.value) == f"{path}: {why}"
    if table == KT:   # load's reader of the kernel table says the same
        with pytest.raises(ReportError) as e:
            nsys_sqlite.load(path)
        assert str(e.value) == f"{path}: {why}"


def test_a_correlation_id_outside_cuptis_32_bits_is_an_unreadable_export_for_the_columnar_reader(tmp_path):
    if not nsys_arrow.available():
        pytest.skip("adbc-driver-sqlite is not installed: the columnar reader is off")
    why = ("unreadable nsys export (a correlation id outside 0..4294967295 (CUPTI's unsigned 32-bit ids; the "
           "reader reserves the others))")
    path = export(tmp_path / "calls.sqlite", calls=[*CALLS, (170, 180, 1, -5, 7)])
    r = nsys_sqlite.scan(path)
    with pytest.raises(ReportError) as e:
        list(r.launch_chunks())
    assert str(e.value) == f"{path}: {why}"
    path = export(tmp_path / "kernels.sqlite", kernels=[*KERNELS, (400, 410, 4, 5, 1 << 33, 7)])
    r = nsys_sqlite.scan(path)
    with pytest.raises(ReportError) as e:
        list(r.kernel_chunks())
    assert str(e.value) == f"{path}: {why}"


def test_a_query_sqlite_cannot_run_is_an_unreadable_export(tmp_path, reader):
    cols = "start INTEGER, end INTEGER, nameId INTEGER, correlationId INTEGER, thread INTEGER"   # no globalTid
    path = export(tmp_path / "a.sqlite", rt_cols=cols)
    r = nsys_sqlite.scan(path)
    for read in (r.launch_chunks, r.kernel_chunks):
        with pytest.raises(ReportError) as e:
            list(read())
        if reader == "sqlite3":
            assert str(e.value) == f"{path}: unreadable nsys export (no such column: globalTid)"
        else:
            assert str(e.value).startswith(f"{path}: unreadable nsys export (") and "\n" not in str(e.value)


def test_a_call_of_another_kind_sharing_a_launchs_id_leaves_the_launch_first(tmp_path):
    calls = [(90, 95, 3, 1, 7), *CALLS]                  # a copy call with launch 1's id, before it
    t = nsys_sqlite.load(export(tmp_path / "a.sqlite", calls=calls))
    assert t.api["is_launch"].tolist() == [False, True, False, False, True, True]


def test_a_name_id_without_a_string_is_an_empty_name(tmp_path):
    strings = {k: v for k, v in STRINGS.items() if k != 3}
    calls = [c for c in CALLS]
    path = export(tmp_path / "a.sqlite", calls=[], strings=strings)
    con = sqlite3.connect(path)
    con.executemany(f"INSERT INTO {RT} VALUES (?, ?, ?, ?, ?)", calls)
    con.commit()
    con.close()
    t = nsys_sqlite.load(path)
    assert t.api["name"].tolist() == ["cudaLaunchKernel_v7000", "cudaLaunchKernel", "", "cudaLaunchKernel",
                                      "cudaLaunchKernel"]


def test_correlation_columns_under_their_older_name(tmp_path, reader):
    rt = "start INTEGER, end INTEGER, nameId INTEGER, correlation INTEGER, globalTid INTEGER"
    kt = ("start INTEGER, end INTEGER, shortName INTEGER, demangledName INTEGER, correlation INTEGER, "
          "streamId INTEGER")
    path = export(tmp_path / "a.sqlite", rt_cols=rt, kt_cols=kt)
    r = nsys_sqlite.scan(path)
    assert rows(r.kernel_chunks()) == [[190, 195, 130, 140, 8], [200, 210, 100, 110, 7]]
    assert sorted(rows(r.launch_chunks())) == [[100, 110, 7], [130, 140, 8], [150, 160, 7]]
    t = nsys_sqlite.load(path)
    assert t.kernels["launch_start"].tolist() == [130, 100]
    assert t.api["is_launch"].tolist() == [True, False, False, True, True]


def test_a_loaded_runtime_table_without_its_columns_is_refused_in_one_line(tmp_path):
    cols = "start INTEGER, end INTEGER, nameId INTEGER, corr INTEGER, globalTid INTEGER"
    path = export(tmp_path / "a.sqlite", calls=[], kernels=[], rt_cols=cols)
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(path)
    assert str(e.value) == f"{path}: {RT} lacks nameId/correlationId (columns: ['corr', 'end', 'globalTid', " \
                           f"'nameId', 'start'])"
    # without a name column the launch calls cannot be picked out: SQLite's own words
    cols = "start INTEGER, end INTEGER, label INTEGER, correlationId INTEGER, globalTid INTEGER"
    path = export(tmp_path / "b.sqlite", calls=[], kernels=[], rt_cols=cols)
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(path)
    assert str(e.value) == f"{path}: unreadable nsys export (no such column: name)"


def test_loaded_kernels_in_start_order_numbered_from_0(tmp_path):
    t = nsys_sqlite.load(export(tmp_path / "a.sqlite"))
    assert t.kernels["start"].tolist() == [190, 200] and t.kernels.index.tolist() == [0, 1]


@pytest.mark.parametrize("names, want", [
    ("demangledName TEXT, mangledName TEXT", ("void kA<float>()", "void kA<float>()")),   # no short name
    ("mangledName TEXT, label TEXT", ("_Z2kAv", "_Z2kAv")),
    ("name TEXT, label TEXT", ("kA", "kA")),
    ("shortName TEXT, mangledName TEXT", ("kA", "_Z2kAv")),                               # no demangled name
])
def test_kernel_names_under_the_columns_an_export_has(tmp_path, names, want):
    cols = f"start INTEGER, end INTEGER, {names}, correlationId INTEGER, streamId INTEGER"
    path = export(tmp_path / "a.sqlite", kernels=[], kt_cols=cols)
    first = names.split()[0]
    value = {"demangledName": "void kA<float>()", "mangledName": "_Z2kAv", "name": "kA", "shortName": "kA"}[first]
    second = names.split(", ")[1].split()[0]
    other = {"mangledName": "_Z2kAv", "label": "x"}[second]
    con = sqlite3.connect(path)
    con.execute(f"INSERT INTO {KT} VALUES (200, 210, ?, ?, 1, 7)", (value, other))
    con.commit()
    con.close()
    t = nsys_sqlite.load(path)
    assert tuple(t.kernels[["name", "full_name"]].iloc[0]) == want
    r = nsys_sqlite.scan(path)
    (row,) = rows(r.kernel_chunks(names=True))
    assert [r.strings([row[5]])[row[5]], r.strings([row[6]])[row[6]]] == list(want)


def test_a_kernel_name_id_without_a_string_is_an_empty_name(tmp_path):
    t = nsys_sqlite.load(export(tmp_path / "a.sqlite", kernels=[(200, 210, 40, 5, 1, 7)]))
    assert t.kernels[["name", "full_name"]].values.tolist() == [["", "void kA<float>()"]]


def test_kernels_without_a_runtime_table_are_refused_when_loaded(tmp_path):
    path = export(tmp_path / "a.sqlite", runtime=False)
    for read in (nsys_sqlite.load, nsys_sqlite.scan):
        with pytest.raises(ReportError) as e:
            read(path)
        assert str(e.value) == f"{path}: kernels but no CUDA runtime table ({RT}): they cannot be attributed to " \
                               f"ranges (a partial export?)"
    t = nsys_sqlite.load(export(tmp_path / "b.sqlite", runtime=False, kernels=[]))   # an empty kernel table
    assert t.device == "cpu" and len(t.kernels) == 0


def test_a_query_pandas_cannot_run_is_an_unreadable_export_when_loaded(tmp_path):
    cols = "start INTEGER, end INTEGER, nameId INTEGER, correlationId INTEGER, thread INTEGER"   # no globalTid
    path = export(tmp_path / "a.sqlite", rt_cols=cols)
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(path)
    assert str(e.value) == (f"{path}: unreadable nsys export (Execution failed on sql 'SELECT start, end, nameId AS "
                            f"name, correlationId AS correlation, globalTid AS tid FROM {RT}': no such column: "
                            f"globalTid)")
