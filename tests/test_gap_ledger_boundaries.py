"""The gap ledger (analysis.sweep.gap_ledger) at its edges, against numbers worked out by
hand: each kernel's role, the kernels by name (medians over repeats, the kind of most time,
a tie, missing columns), the GPU terms of two small kernel tables, one configuration's
rows (terms, ranks, order, residual and its parts, the interval and whether it explains
the residual at exactly its bounds), the sentence (three terms at most, what pulls against
the gap past its share, no term of the gap's sign), top_cause, build's choice of rows and
kernels, write, and the known-cause cases read from their files."""
import math
import warnings

import pandas as pd
import pytest

from fusionlab.analysis.sweep import gap_ledger as gl

CFG = {"model": "m", "batch": 8, "size": "default", "mode": "inference", "dtype": "bf16", "backend": "nsys",
       "device": "cuda"}


def test_role_of_each_kind():
    assert gl.role("aten::mm", "aten") == "library" and gl.role("conv2d", "aten") == "library"
    assert gl.role("aten::add", "aten") == "eager" and gl.role("aten::aten::mm", "aten") == "eager"
    assert gl.role("k", "other", "void at::native::f<float>()") == "eager"
    assert gl.role("k", "other", "at::cuda::g") == "eager" and gl.role("k", "library", "at::native::x") == "library"
    assert gl.role("k", "other", "nvjet_sm90") == "library" and gl.role("k", "other") == "library"
    assert gl.role("k", "library") == "library" and gl.role("k", "eager", "at::native::x") == "eager"
    assert gl.role("k", "triton") == "generated" and gl.role("k", "aten_fallback") == "generated"


def _k(rows, cols=("repeat", "name", "kind", "time_per_iter_us", "full_name")):
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_by_name_medians_kinds_and_missing_columns():
    k = _k([(0, "A", "triton", 10.0, "a0"), (1, "A", "triton", 20.0, "a1"), (1, "A", "triton", 5.0, ""),
            (2, "A", "triton", 30.0, None), (0, "B", None, 4.0, "void at::native::x"),
            (0, "C", "library", 3.0, ""), (0, "C", "eager", 5.0, ""),
            (0, "D", "library", 4.0, None), (1, "D", "eager", 4.0, None),
            (0, "E", "other", 1.0, None), (1, "E", "other", 1.0, "void at::native::e()"),
            (0, "aten::mm", "aten", 2.0, ""), (0, "aten::add", "aten", 3.0, "")])
    b = gl.by_name(k)
    # A: 10, 20 + 5, 30 over the repeats: 25; C: the eager row has the most time; D: a tie, the
    # kind last in name order (library after eager) kept; E: the first row's full name, empty
    assert b.to_dict("list") == {"name": ["A", "B", "C", "D", "E", "aten::add", "aten::mm"],
                                 "kind": ["triton", "other", "eager", "library", "other", "aten", "aten"],
                                 "time_per_iter_us": [25.0, 4.0, 8.0, 4.0, 1.0, 3.0, 2.0],
                                 "role": ["generated", "eager", "eager", "library", "library", "eager", "library"]}
    bare = gl.by_name(pd.DataFrame({"name": ["x", "y", "x"], "time_per_iter_us": [1.0, 2.0, 3.0]}))
    assert bare.to_dict("list") == {"name": ["x", "y"], "kind": ["other", "other"], "time_per_iter_us": [4.0, 2.0],
                                    "role": ["library", "library"]}
    # a kernels table read from a CSV whose kind and full_name cells are all empty (numbers to
    # pandas): filled as text, no warning that pandas will refuse it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        blank = gl.by_name(pd.DataFrame({"name": ["x"], "kind": [math.nan], "time_per_iter_us": [1.0],
                                         "full_name": [math.nan]}))
    assert blank.to_dict("list") == {"name": ["x"], "kind": ["other"], "time_per_iter_us": [1.0], "role": ["library"]}
    empty = gl.by_name(pd.DataFrame())
    assert list(empty.columns) == ["name", "kind", "time_per_iter_us", "role"] and len(empty) == 0
    assert [str(t) for t in empty.dtypes] == ["object", "object", "float64", "object"]


def _tables():
    e = _k([(0, "add", "eager", 1000.0, ""), (0, "mm", "library", 3000.0, ""), (0, "keep", "eager", 500.0, ""),
            (0, "lib2", "library", 200.0, ""), (0, "tr_old", "triton", 50.0, "")])
    v = _k([(0, "tr_fused", "triton", 600.0, ""), (0, "keep", "eager", 700.0, ""), (0, "nvjet", "other", 2000.0, ""),
            (0, "copy", "eager", 100.0, "")])
    return e, v


def test_gpu_terms_of_two_tables_by_hand():
    """Variant 3400 us against eager 4750: fused 600 - (1000 + 50), library 2000 - 3200,
    kept 700 - 500, added 100; -1.35 ms in all."""
    e, v = _tables()
    t = gl.gpu_terms(e, v)
    assert t == {"fused": (pytest.approx(-0.45), "1 generated kernels 600 us against 2 eager kernels 1.05 ms"),
                 "library": (pytest.approx(-1.2), "gone: mm 3 ms; lib2 200 us; new: nvjet 2 ms"),
                 "kept": (pytest.approx(0.2), "1 kernels by name"), "added": (pytest.approx(0.1), "copy 100 us")}
    assert sum(ms for ms, _ in t.values()) == pytest.approx(-1.35)
    none = gl.gpu_terms(pd.DataFrame(), pd.DataFrame())
    assert none == {"fused": (0.0, "0 generated kernels 0 us against 0 eager kernels 0 us"),
                    "library": (0.0, "gone: none; new: none"), "kept": (0.0, "0 kernels by name"),
                    "added": (0.0, "none")}
    four = _k([(0, "n" * 70, "eager", 4.0, ""), (0, "b", "eager", 3.0, ""), (0, "c", "eager", 1.0, ""),
               (0, "d", "eager", 2.0, "")])
    assert gl.gpu_terms(pd.DataFrame(), four)["added"][1] == f"{'n' * 60} 4 us; b 3 us; d 2 us"


def _v(**kw):
    return {**CFG, "variant": "compile", "wall_ms": 10.0, "eager_wall_ms": 8.0, "speedup": 0.8, "speedup_lo": 0.6,
            "speedup_hi": 0.95, "launches_per_iter": 10, "host_ms": 0.5, "kernel_ms": 9.0, "remainder_ms": -0.3,
            "kernel_wait_ms": 0.2, "other_ms": 0.1, "host_speed_ms": 0.25, "eager_own_ms": 8.25, **kw}


E = {**CFG, "variant": "eager", "launches_per_iter": 20, "host_per_launch_us": 10.0, "host_ms": 1.0,
     "kernel_ms": 6.0, "kernel_wait_ms": 0.05, "other_ms": 0.05}


def test_one_configurations_rows_by_hand():
    """Gap 2 ms. Host: 10 launches x 10 us, all exposed, less eager's 1 ms: -0.9. GPU
    (test_gpu_terms...): -1.35; idle 0.3; host speed -0.25: the residual 2 + 2.2 = 4.2.
    Its parts: host 0.5 - 1 + 0.9 = 0.4, kernels 9 - 6 - (-1.35) = 4.35, -0.55 not split.
    Ranked (the gap's sign): idle, kept, added."""
    e, v = _tables()
    rows = gl.rows_of(_v(), E, None, v, e)
    got = {r["term"]: r for r in rows}
    assert [r["term"] for r in rows] == ["idle", "kept", "added", "launches", "fused", "library", "host_speed",
                                         "residual", "total"]
    assert [r.get("rank") for r in rows] == [1, 2, 3, None, None, None, None, None, None]
    assert got["launches"]["ms"] == pytest.approx(-0.9) and got["host_speed"]["ms"] == -0.25
    assert got["idle"]["ms"] == 0.3 and got["idle"]["detail"] == ("kernel wait 0.2 + other idle 0.1 ms against "
                                                                 "eager's 0.05 + 0.05 ms")
    assert got["host_speed"]["detail"] == "eager beside the variant 8 ms, in its own processes 8.25 ms"
    assert got["residual"]["ms"] == pytest.approx(4.2)
    assert got["residual"]["detail"] == ("the variant's exposed host time no host term covers +400 us; the "
                                         "headline's kernel time less the kernels table's +4.35 ms; not split "
                                         "-550 us")
    r = got["idle"]
    assert {k: r[k] for k in ("side", "label", "source", "model", "variant", "batch")} == {
        "side": "gpu", "label": "GPU idle gaps", "source": "headline -remainder_ms", "model": "m",
        "variant": "compile", "batch": 8}
    t = got["total"]
    assert {k: t[k] for k in ("side", "label", "ms", "detail", "source", "gap_ms", "speedup",
                              "residual_explained")} == {
        "side": "total", "label": "gap (variant - eager)", "ms": 2.0, "detail": "",
        "source": "headline wall_ms - eager_wall_ms", "gap_ms": 2.0, "speedup": 0.8, "residual_explained": False}
    assert t["gap_lo_ms"] == pytest.approx(0.5) and t["gap_hi_ms"] == pytest.approx(4.0)
    assert t["sentence"] == (
        "0.80x, +2 ms per iteration (interval +500 us to +4 ms): GPU idle gaps (kernel wait 0.2 + other idle 0.1 ms "
        "against eager's 0.05 + 0.05 ms), +300 us; kernels both run +200 us; kernels added +100 us; against it: "
        "library kernels displaced and their replacements -1.2 ms; residual +4.2 ms.")


def _bare(wall, eager, idle, **kw):
    """A configuration with no launch counts, kernels or pairing: its terms 0 but idle."""
    v = {**CFG, "variant": "compile", "wall_ms": wall, "eager_wall_ms": eager, "speedup": eager / wall,
         "remainder_ms": -idle, **kw}
    return {r["term"]: r for r in gl.rows_of(v, {"host_ms": 0.0}, None, pd.DataFrame(), pd.DataFrame())}


def test_the_residual_explained_at_its_bounds():
    # gap 20: 5% of it is exactly 1 ms
    assert _bare(40.0, 20.0, 19.0)["total"]["residual_explained"] is True
    assert _bare(40.0, 20.0, 18.5)["total"]["residual_explained"] is False
    assert _bare(20.0, 40.0, -19.0)["total"]["residual_explained"] is True    # gap -20, residual -1
    assert _bare(20.0, 40.0, -18.0)["total"]["residual_explained"] is False   # residual -2
    # the interval 40 x (1 - 0.75) to 40 x (1 - 0.25): half its width 10 ms
    iv = {"speedup_lo": 0.25, "speedup_hi": 0.75}
    assert _bare(40.0, 20.0, 10.0, **iv)["total"]["residual_explained"] is True
    assert _bare(40.0, 20.0, 9.5, **iv)["total"]["residual_explained"] is False
    # gap -20 (variant 20 ms): the interval 5 to 15 ms, half its width 5
    assert _bare(20.0, 40.0, -15.0, **iv)["total"]["residual_explained"] is True    # residual -5
    assert _bare(20.0, 40.0, -14.0, **iv)["total"]["residual_explained"] is False   # residual -6
    assert _bare(40.0, 20.0, 9.5, speedup_hi=0.75)["total"]["residual_explained"] is False
    b = _bare(40.0, 20.0, 10.0, **iv)
    assert (b["total"]["gap_lo_ms"], b["total"]["gap_hi_ms"]) == (10.0, 30.0)
    assert b["host_speed"] == {**b["host_speed"], "ms": 0.0, "detail": ""}
    assert _bare(40.0, 20.0, 10.0, reference="eager in its own processes")["host_speed"]["detail"] == (
        "eager in its own processes")
    # no host or kernel time in the headline: the residual is not split
    assert b["residual"]["detail"] == "not split +10 ms"
    assert _bare(40.0, 20.0, 20.0)["residual"]["detail"] == ""


def test_ranks_follow_the_gaps_sign():
    # a gap of -20: the negative terms ranked by size; idle -30 first
    r = _bare(20.0, 40.0, -30.0)
    assert r["idle"]["rank"] == 1 and "rank" not in r["launches"] and "rank" not in r["residual"]
    # no gap measured: the terms that add time ranked
    v = _v(eager_wall_ms=None)
    e, k = _tables()
    rows = {x["term"]: x for x in gl.rows_of(v, E, None, k, e)}
    assert (rows["idle"]["rank"], rows["kept"]["rank"], rows["added"]["rank"]) == (1, 2, 3)
    assert math.isnan(rows["total"]["ms"]) and math.isnan(rows["residual"]["ms"])


def test_fmt_us_at_its_edges():
    assert gl._fmt_us(4.9e-7) == "0 us" and gl._fmt_us(-4.9e-7) == "0 us" and gl._fmt_us(5e-7) == "+0.0005 us"
    assert gl._fmt_us(0.999) == "+999 us" and gl._fmt_us(1.0) == "+1 ms" and gl._fmt_us(-1.0) == "-1 ms"
    assert gl._fmt_us(-0.5) == "-500 us"


def _row(term, ms, rank=None, label=None, detail="d"):
    return {"term": term, "ms": ms, "label": label or term, "detail": detail, **({"rank": rank} if rank else {})}


def test_sentence_at_its_edges():
    total = {"term": "total", "ms": 20.0, "speedup": 0.5, "gap_lo_ms": float("nan"), "gap_hi_ms": 25.0}
    res = _row("residual", 0.0)
    rows = [_row("a", 8.0, 1), _row("b", 6.0, 2), _row("c", 4.0, 3), _row("d", 3.0, 4), _row("e", -1.0),
            _row("f", -1.5), _row("g", -1.2), res, total]
    assert gl.sentence(rows) == ("0.50x, +20 ms per iteration: a (d), +8 ms; b +6 ms; c +4 ms; against it: f -1.5 ms; "
                                 "residual 0 us.")
    # the residual is never a term against the gap
    assert gl.sentence(rows[:-2] + [_row("residual", -3.0), total]).endswith("against it: f -1.5 ms; residual -3 ms.")
    assert gl.sentence(rows, n=1) == "0.50x, +20 ms per iteration: a (d), +8 ms; against it: f -1.5 ms; residual 0 us."
    # a term of exactly 5% of the gap does not pull against it; rank NaN is no rank
    rows = [_row("e", -1.0), {**_row("x", 2.0), "rank": float("nan")}, res,
            {**total, "gap_lo_ms": 10.0, "speedup": 2.0}]
    assert gl.sentence(rows) == ("2.00x, +20 ms per iteration (interval +10 ms to +25 ms): no named term of the gap's "
                                 "sign; residual 0 us.")


def _ledger():
    e, v = _tables()
    a = gl.rows_of(_v(), E, None, v, e)
    b = gl.rows_of(_v(batch=16, remainder_ms=0.0), {**E, "batch": 16}, None, pd.DataFrame(), pd.DataFrame())
    return pd.DataFrame(a + b, columns=gl.COLUMNS)


def test_top_cause_of_a_configuration():
    led = _ledger()
    term, ms, text = gl.top_cause(led, {**CFG, "variant": "compile"})
    assert (term, ms) == ("idle", 0.3) and text.startswith("0.80x, +2 ms per iteration (interval")
    # batch 16: nothing of the gap's sign (no idle time, no kernels)
    term, ms, text = gl.top_cause(led, {"batch": 16, "variant": "compile", "other": 1})
    assert term == "" and math.isnan(ms) and ": no named term of the gap's sign;" in text
    term, ms, text = gl.top_cause(led, {"batch": 32})
    assert (term, text) == ("", "") and math.isnan(ms)


def test_build_takes_each_ok_variant_beside_its_eager_row(tmp_path):
    e, v = _tables()
    other = {**CFG, "batch": 16}
    # the headline's eager rows hold their own wall time as eager_wall_ms: no ledger of their own
    h = pd.DataFrame([{**_v(batch=4), "status": "ok"}, {**E, "batch": 4, "status": "ok"},
                      {**_v(batch=32, variant="compile"), "status": "ok"},
                      {**_v(variant="compile2", eager_wall_ms=None), "status": "ok"},
                      {**_v(), "status": "ok", "size": None}, {**E, "status": "ok", "wall_ms": 8.0, "eager_wall_ms": 8.0},
                      {**_v(batch=16), "status": "failed"}, {**E, **other, "status": "ok"}])
    # kernels of a table written before size axes: no size (with_size: "default")
    k = pd.concat([e.assign(variant="eager", **{**CFG, "size": None}), v.assign(variant="compile", **CFG),
                   e.assign(variant="compile", **other), v.assign(variant="eager", **{**CFG, "model": "m2"}),
                   v.assign(variant="compile", **{**CFG, "mode": "train"})])
    led = gl.build(h, k, {})
    assert list(led.columns) == gl.COLUMNS
    # batch 4's and batch 8's compile: batch 16 failed, batch 32 has no eager row, compile2 no gap
    assert set(led["variant"]) == {"compile"} and list(led["batch"].drop_duplicates()) == [4, 8]
    led = led[led["batch"] == 8]
    assert len(led) == 9
    none = gl.build(h[h["variant"] == "eager"], k, {})
    assert list(none.columns) == gl.COLUMNS and none.empty
    want = pd.DataFrame(gl.rows_of({**_v(), "status": "ok", "size": "default"}, E, None, v, e), columns=gl.COLUMNS)
    got = led.set_index("term")["ms"]
    assert got.to_dict() == pytest.approx(want.set_index("term")["ms"].to_dict())
    assert led["sentence"].iloc[-1] == want["sentence"].iloc[-1]
    # no kernels table: the GPU terms 0
    bare = gl.build(h, pd.DataFrame(), {})
    bare = bare[bare["batch"] == 8].set_index("term")
    assert bare.loc["fused", "ms"] == 0.0 and bare.loc["library", "detail"] == "gone: none; new: none"
    # the dynamo record by KEYS (as text)
    dyn = {tuple(str(x) for x in ("m", 8, "default", "inference", "bf16", "nsys", "cuda", "compile")):
           {"guards": {"frames": [{"code": "f", "entry": 0, "lookup_us": 100.0}]}}}
    with_dyn = gl.build(h, k, dyn)
    with_dyn = with_dyn[with_dyn["batch"] == 8].set_index("term")
    assert with_dyn.loc["guards", "detail"].startswith("1 frame(s), 100 us cache lookup")
    # write: the ledger and its account; a missing kernels file is no kernels
    h.to_csv(tmp_path / "h.csv", index=False)
    k.to_csv(tmp_path / "k.csv", index=False)
    out = tmp_path / "t" / "gap_ledger.csv"
    (tmp_path / "t").mkdir()
    assert gl.write([], str(tmp_path / "h.csv"), str(tmp_path / "k.csv"), str(out)) == (
        "gap ledger: 2 configurations, 0 with the residual explained")
    back = pd.read_csv(out)
    assert back[back["batch"] == 8]["ms"].sum() == pytest.approx(led["ms"].sum())
    (tmp_path / "empty.csv").write_text("")
    for missing in ("nothing.csv", "empty.csv"):
        gl.write([], str(tmp_path / "h.csv"), str(tmp_path / missing), str(out))
        assert (pd.read_csv(out).set_index("term").loc["kept", "ms"] == 0.0).all()


def test_expected_causes_and_case_verdicts(tmp_path, monkeypatch):
    d = tmp_path / "a:b"
    d.mkdir()
    (d / "case.py").write_text('import os\nX = os.getcwd()\nVARIANT = "compile"\nEXPECTED = ["wrapper", "guards"]\n'
                               "def build():\n    pass\n")
    (d / "half.py").write_text('EXPECTED = ["guards"]\n')
    (d / "none.py").write_text('VARIANT = "compile"\n')
    exp = gl.expected_causes({"mod": "x.y:build", "c": f"{d}/case.py:build", "r": {"factory": "a:b/case.py:build"},
                              "h": f"{d}/half.py:build", "n": f"{d}/none.py:build"},
                             root=str(tmp_path))
    assert exp == {"c": ("compile", ("wrapper", "guards")), "r": ("compile", ("wrapper", "guards"))}
    monkeypatch.chdir(tmp_path)   # a relative path from the working folder by default
    assert gl.expected_causes({"r": "a:b/case.py:build"}) == {"r": ("compile", ("wrapper", "guards"))}
    (d / "bad.py").write_text("VARIANT = (\n")
    with pytest.raises(SyntaxError) as err:
        gl.expected_causes({"b": f"{d}/bad.py:build"})
    assert err.value.filename == f"{d}/bad.py"
    led = _ledger()
    none = gl.case_verdicts(led, {"a": ("compile", ("guards",))})
    assert list(none.columns) == ["model", "variant", "expected", "top", "top_ms", "ok", "sentence"]
    v = gl.case_verdicts(led, {"m": ("compile", ("kept", "idle")), "a": ("compile", ("guards", "x"))})
    assert list(v["model"]) == ["a", "m", "m"]
    a = v.iloc[0].to_dict()
    assert {k: a[k] for k in ("variant", "expected", "top", "ok", "sentence")} == {
        "variant": "compile", "expected": "guards or x", "top": "", "ok": False, "sentence": "no ledger row"}
    assert math.isnan(a["top_ms"])
    m8, m16 = v.iloc[1], v.iloc[2]
    assert (m8["batch"], m8["top"], m8["top_ms"], m8["ok"], m8["expected"]) == (8, "idle", 0.3, True, "kept or idle")
    assert (m16["batch"], m16["top"], bool(m16["ok"])) == (16, "", False)
    assert m8["sentence"] == led[(led["batch"] == 8) & (led["term"] == "total")]["sentence"].iloc[0]


def test_reduce_overhead_by_variant_name_or_compile_mode():
    """A CUDA graph skipped counts the launch path as cudagraph_skipped only under
    reduce-overhead: named by the variant, or by its compile_mode."""
    dyn = {"total": {"cudagraph_skips": 1}, "guards": {}}
    v = _v(host_ms=None)
    for variant, mode, skipped in (("compile_reduce_overhead", None, True), ("compile", "reduce-overhead", True),
                                   ("compile", "max-autotune", False), ("compile", None, False)):
        row = {**v, "variant": variant, **({"compile_mode": mode} if mode else {})}
        terms = {r["term"]: r["ms"] for r in gl.rows_of(row, E, dyn, pd.DataFrame(), pd.DataFrame())}
        # 10 launches x 10 us, less eager's 1 ms
        assert (("cudagraph_skipped" in terms), ("launches" in terms)) == (skipped, not skipped), (variant, mode)
        assert terms.get("cudagraph_skipped", terms.get("launches")) == pytest.approx(0.1 - 1.0)


def test_a_residual_of_exactly_half_a_thousandth_of_a_microsecond_is_not_split():
    assert _bare(5e-7, 0.0, 0.0)["residual"]["detail"] == ""
    assert _bare(6e-7, 0.0, 0.0)["residual"]["detail"] == "not split +0.0006 us"


def test_a_gap_of_0_ranks_no_term():
    r = _bare(10.0, 10.0, 1.0)
    assert all("rank" not in x for x in r.values()) and r["residual"]["ms"] == -1.0
    # and none pulls against it
    assert r["total"]["sentence"] == "1.00x, 0 us per iteration: no named term of the gap's sign; residual -1 ms."
