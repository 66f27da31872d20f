"""The sweep's attribution table and what a model's page says of it (analysis.sweep.
attribution) at their edges, against numbers worked out by hand: a run's name with and
without runs/ in its path, the table of runs with, without and with an empty
attribution.csv (module "NA" read as text), the table read back, coverage per run, the
repeat chosen (most attributed; ties to the first by name; none attributed), layer
indices folded, the movers (no eager, the loop's parts and the model itself, n, ties in
order) and their sentence (1 ms, a share of exactly 99%, a loop share of 0.5%)."""
import json

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.run import attribution as A
from fusionlab.analysis.sweep import attribution as SW

CFG = {"model": "m", "batch": 1, "size": "", "mode": "train", "dtype": "float32", "backend": "nsys",
       "device": "cuda"}


def _run(root, rel, meta, rows):
    d = root.joinpath(*rel.split("/"))
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps(meta))
    if rows is not None:
        (d / "attribution.csv").write_text(rows)
    return str(d / "metrics.json")


HEAD = "module,source,op,phase,kernel,time_us,share,rule,extra\n"


def test_run_name_build_read_and_write(tmp_path):
    assert SW.run_name("/x/runs/nsys/m/eager/r0/metrics.json") == "nsys/m/eager/r0"
    assert SW.run_name("/a/b/c/d/e/f/g/h/metrics.json") == "c/d/e/f/g/h"
    meta = {**CFG, "variant": "eager", "repeat": 0}
    files = [_run(tmp_path, "runs/nsys/m/eager/r0", meta,
                  HEAD + "a.x,m.py:3,aten::mm,forward,k1,10.5,0.5,launch,1\n,,,,k2,2,,no op record,2\n"
                         "NA,NA,NA,,k3,1,,equal,3\n"),
             _run(tmp_path, "runs/nsys/m/eager/r1", meta, None),
             _run(tmp_path, "runs/nsys/m/eager/r2", meta, HEAD),
             _run(tmp_path, "runs/nsys/m/compile/r0", {}, HEAD + "b,,,,k4,4,,launch,4\n")]
    t = SW.build(files)
    assert list(t.columns) == SW.TABLE_COLUMNS and len(t) == 4
    assert list(t["run"]) == ["nsys/m/eager/r0"] * 3 + ["nsys/m/compile/r0"]
    assert list(t["module"]) == ["a.x", "", "NA", "b"] and list(t["source"]) == ["m.py:3", "", "NA", ""]
    assert t["op"].iloc[0] == "aten::mm" and pd.isna(t["op"].iloc[1]) and t["op"].iloc[2] == "NA"
    assert t.iloc[0][SW.TABLE_COLUMNS[1:10]].to_dict() == {**meta}
    assert t.iloc[3][SW.TABLE_COLUMNS[1:10]].isna().all()
    assert list(t["time_us"]) == [10.5, 2.0, 1.0, 4.0]
    # an nn.Sequential's layer "0" with every module and source of its file a number: still text
    seq = SW.build([_run(tmp_path, "runs/nsys/s/eager/r0", meta, HEAD + "0,1,,,k,2,,launch,1\n")])
    assert list(seq["module"]) == ["0"] and list(seq["source"]) == ["1"]
    empty = SW.build(files[1:3])
    assert list(empty.columns) == SW.TABLE_COLUMNS and empty.empty
    out = tmp_path / "attribution.csv"
    assert SW.write(files, str(out)).equals(t)
    back = SW.read(str(out))
    assert list(back["module"]) == ["a.x", "", "NA", "b"] and list(back["source"]) == ["m.py:3", "", "NA", ""]
    assert back["share"].isna().tolist() == [False, True, True, True] and back["batch"].isna().tolist()[3]
    for none in (None, "", str(tmp_path / "nothing.csv")):
        r = SW.read(none)
        assert list(r.columns) == SW.TABLE_COLUMNS and r.empty


def _rows(variant, repeat, times, run=None, **cfg):
    return [{"run": run or f"{variant}/r{repeat}", **CFG, **cfg, "variant": variant, "repeat": repeat, "module": m,
             "source": "s.py:1" if m.startswith("a") else "", "op": "", "phase": "", "kernel": "k", "time_us": t,
             "share": np.nan, "rule": "launch"} for m, t in times.items()]


def test_coverage_per_run_in_name_order():
    t = pd.DataFrame(_rows("eager", 0, {"a.x": 6.0, "b": 2.0, A.UNATTRIBUTED: 1.0, A.LOSS: 1.0}, run="z")
                     + _rows("compile", 0, {"a.x": 3.0}, run="y"))
    c = SW.coverage(t)
    assert list(c.columns) == ["run", "variant", "time_us", "module_share", "source_share", "loop_share"]
    assert c.to_dict("records") == [
        {"run": "y", "variant": "compile", "time_us": 3.0, "module_share": 1.0, "source_share": 1.0, "loop_share": 0.0},
        {"run": "z", "variant": "eager", "time_us": 10.0, "module_share": 0.8, "source_share": 0.6,
         "loop_share": 0.1}]
    assert list(SW.coverage(t.iloc[:0]).columns) == list(c.columns)


def test_chosen_keeps_the_most_attributed_repeat():
    t = pd.DataFrame(_rows("eager", 0, {"a": 5.0, A.UNATTRIBUTED: 5.0})      # 50%
                     + _rows("eager", 10, {"a": 8.0, A.UNATTRIBUTED: 2.0})   # 80%, "10" before "9" by name
                     + _rows("eager", 9, {"a": 4.0, A.UNATTRIBUTED: 1.0})    # 80%
                     + _rows("compile", 0, {"a": 0.0}) + _rows("compile", 1, {"a": 0.0})   # none: the first
                     + _rows("compile", 2, {"a": 3.0, A.UNATTRIBUTED: 1.0}, batch=2)
                     + _rows("compile", 3, {"a": 0.0, A.UNATTRIBUTED: 1.0}, batch=2))   # 0% beats no time
    kept = SW.chosen(t)
    assert list(kept.index) == [2, 3, 6, 8, 9]
    assert list(zip(kept["variant"], kept["repeat"])) == [("eager", 10)] * 2 + [("compile", 0), ("compile", 2),
                                                                                 ("compile", 2)]
    t2 = pd.DataFrame(_rows("eager", 0, {"a": 1.0}) + _rows("eager", 1, {"a": 0.0, A.UNATTRIBUTED: 1.0}))
    assert list(SW.chosen(t2)["repeat"]) == [0]
    norep = t.drop(columns="repeat")
    assert SW.chosen(norep) is norep and SW.chosen(t.iloc[:0]).empty


def test_fold_layer_indices():
    assert SW.fold("encoder.layer.10.attention.self") == "encoder.layer.*.attention.self"
    assert SW.fold("h.0") == "h.*" and SW.fold("0.a") == "0.a" and SW.fold("a.1.2") == "a.*.*"
    assert SW.fold("fc10.w2") == "fc10.w2" and SW.fold("a.1b.c") == "a.1b.c"
    for m in SW.NOT_MODULES:
        assert SW.fold(m) == m


def _movers_table():
    e = {"": 2.0, "a.x": 10.0, "a.y": 5.0, "b": 3.0, "c": 1.0, A.UNATTRIBUTED: 4.0, A.OPTIMIZER_STEP: 4.0}
    v = {"": 1.0, "a.x": 4.0, "a.y": 6.0, "b": 6.0, "d": 3.0, A.UNATTRIBUTED: 9.0, A.OPTIMIZER_STEP: 1.0}
    return pd.DataFrame(_rows("eager", 0, e) + _rows("compile", 0, v) + _rows("compile2", 0, {"a.x": 11.0})
                        + _rows("compile", 0, {"a.x": 1.0}, batch=2))   # batch 2: no eager


def test_movers_by_hand():
    """compile against eager: a.x -6, b +3, d +3, the model itself -1, a.y +1, c -1 (equal
    changes in the order of the paths' names, the outer join's); the unattributed and the
    optimizer step left out."""
    mv = SW.movers(_movers_table(), n=4)
    assert list(mv.columns) == [*SW.CONFIG, "variant", "module", "eager_us", "variant_us", "delta_us", "rank",
                                "eager_attributed", "variant_attributed", "eager_loop", "variant_loop"]
    got = [(r.variant, r.module, r.eager_us, r.variant_us, r.delta_us, r.rank) for r in mv.itertuples()]
    # compile2 (a.x 11 us alone): a.y -5, b -3, the model itself -2, a.x +1 and c -1 (a.x first)
    assert got == [("compile", "a.x", 10.0, 4.0, -6.0, 1), ("compile", "b", 3.0, 6.0, 3.0, 2),
                   ("compile", "d", 0.0, 3.0, 3.0, 3), ("compile", "(model)", 2.0, 1.0, -1.0, 4),
                   ("compile2", "a.y", 5.0, 0.0, -5.0, 1), ("compile2", "b", 3.0, 0.0, -3.0, 2),
                   ("compile2", "(model)", 2.0, 0.0, -2.0, 3), ("compile2", "a.x", 10.0, 11.0, 1.0, 4)]
    c = mv[mv["variant"] == "compile"].iloc[0]
    # eager 29 us: 21 on module paths ("" included), 4 on the loop; compile 30 us: 20 and 1
    assert (c["eager_attributed"], c["eager_loop"]) == (pytest.approx(21 / 29), pytest.approx(4 / 29))
    assert (c["variant_attributed"], c["variant_loop"]) == (pytest.approx(20 / 30), pytest.approx(1 / 30))
    assert c[SW.CONFIG].to_dict() == CFG
    assert SW.movers(_movers_table(), n=1)["module"].tolist() == ["a.x", "a.y"]
    all_ = SW.movers(_movers_table(), n=10)
    assert all_[all_["variant"] == "compile"]["module"].tolist() == ["a.x", "b", "d", "(model)", "a.y", "c"]


def test_movers_folded_and_empty():
    t = pd.DataFrame(_rows("eager", 0, {"h.0.attn": 2.0, "h.1.attn": 3.0, "h.0.mlp": 1.0})
                     + _rows("compile", 0, {"h.0.attn": 1.0, "h.1.attn": 1.0, "h.0.mlp": 1.5}))
    mv = SW.movers(t, folded=True)
    assert list(zip(mv["module"], mv["delta_us"])) == [("h.*.attn", -3.0), ("h.*.mlp", 0.5)]
    assert list(SW.movers(t)["module"]) == ["h.1.attn", "h.0.attn", "h.0.mlp"]
    none = SW.movers(t.iloc[:0])
    assert none.empty and "variant_loop" in none.columns
    assert SW.movers(t[t["variant"] == "compile"]).empty


def test_movers_sentence_at_its_edges():
    assert SW._us(999.0) == "999 us" and SW._us(1000.0) == "1.00 ms" and SW._us(-1000.0) == "-1.00 ms"
    assert SW._us(-999.4) == "-999 us"
    rows = pd.DataFrame([{"variant": "compile", "module": "b", "eager_us": 1500.0, "variant_us": 1500.0,
                          "delta_us": 0.0, "rank": 2, "eager_attributed": 0.99, "variant_attributed": 0.5,
                          "eager_loop": 0.2, "variant_loop": 0.005},
                         {"variant": "compile", "module": "a", "eager_us": 3000.0, "variant_us": 1800.0,
                          "delta_us": -1200.0, "rank": 1, "eager_attributed": 0.99, "variant_attributed": 0.5,
                          "eager_loop": 0.2, "variant_loop": 0.005}])
    assert SW.movers_sentence(rows) == ("most changed under compile: a (-1.20 ms: 3.00 ms -> 1.80 ms), b (+0 us: "
                                        "1.50 ms -> 1.50 ms) (kernel time attributed to a module: compile 50%, its "
                                        "training loop's loss and optimizer step 0%)")
    low = rows.assign(eager_attributed=0.25, eager_loop=float("nan"), variant_loop=0.0049)
    assert SW.movers_sentence(low).endswith("(kernel time attributed to a module: eager 25%; compile 50%)")
    bare = rows.drop(columns=["eager_attributed", "variant_attributed", "eager_loop", "variant_loop"])
    assert SW.movers_sentence(bare).endswith("1.50 ms -> 1.50 ms)")
    noloop = rows.drop(columns=["eager_loop", "variant_loop"])
    assert SW.movers_sentence(noloop).endswith("(kernel time attributed to a module: compile 50%)")
    nan = rows.assign(variant_attributed=float("nan"))
    assert SW.movers_sentence(nan).endswith("1.50 ms -> 1.50 ms)")
    assert SW.movers_sentence(None) == "" and SW.movers_sentence(rows.iloc[:0]) == ""


def test_movers_sentence_of_one_row_and_long_times():
    assert SW._us(100000.0) == "100.00 ms"
    one = pd.DataFrame([{"variant": "compile", "module": "a", "eager_us": 100000.0, "variant_us": 40.0,
                         "delta_us": -99960.0, "rank": 1, "eager_attributed": 0.5, "variant_attributed": 1.0,
                         "eager_loop": 0.0, "variant_loop": 0.0}])
    assert SW.movers_sentence(one) == ("most changed under compile: a (-99.96 ms: 100.00 ms -> 40 us) (kernel time "
                                       "attributed to a module: eager 50%)")
