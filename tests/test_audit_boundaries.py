"""The audit (report.audit) at its tolerance: a consistent results folder passes; every
single-field change larger than the tolerance the audit states (REL of the larger of the
two numbers a check compares, plus 1e-9) is caught, and none smaller; the small, wrong-signed
and missing contradictions a careless change makes (a 2.16x speedup against a 2.0 ratio,
a -4.9 ms largest part of a +5 ms saving, a geometric mean quoted from records with no
speedup, a break-even count off by 1000) are caught."""
import math
import os

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fusionlab.analysis.report import audit
from fusionlab.analysis.sweep import headline, suite

PARTS = headline.PARTS
KEY = {"model": "m", "batch": 8, "size": "default", "mode": "inference", "dtype": "float32", "backend": "nsys",
       "device": "cuda", "status": "ok"}


def consistent(wall=1.0, speedup=3.0, fractions=(0.25, 0.5, 0.2, 0.0), compile_s=12.0):
    """A headline table of eager and one variant whose numbers agree: eager's time =
    wall x speedup, the time saved split into PARTS by `fractions` (the last part the
    rest), the largest part and the break-even count as sweep.headline computes them."""
    eager = wall * speedup
    saved = eager - wall
    parts = [f * saved for f in fractions]
    parts.append(saved - sum(parts))
    lo, hi = speedup * 0.95, speedup * 1.05
    verdict = headline.verdict(speedup, lo, hi)
    name, value = headline.largest(dict(zip(PARTS, parts)), saved)
    variant = {**KEY, "variant": "compile", "estimator": "across processes", "speedup": speedup,
               "speedup_lo": lo, "speedup_hi": hi, "verdict": verdict, "wall_ms": wall, "eager_wall_ms": eager,
               "reference": "eager in its own processes", "saved_ms": saved, **dict(zip(PARTS, parts)),
               "largest_part": name, "largest_part_ms": value, "compile_s": compile_s, "traffic_source": "modelled",
               "break_even_iters": compile_s * 1e3 / saved if verdict == "faster" else math.nan}
    ref = {**KEY, "variant": "eager", "estimator": "reference", "speedup": 1.0, "wall_ms": eager,
           "eager_wall_ms": eager, "reference": "itself"}
    return pd.DataFrame([ref, variant])


def violations(h: pd.DataFrame) -> list[str]:
    a = audit.Audit()
    audit.check_records(a, h)
    return a.violations


def edited(h, **fields):
    h = h.copy()
    for k, v in fields.items():
        h[k] = h[k].astype(object) if isinstance(v, str) else h[k]
        h.loc[h["variant"] == "compile", k] = v
    return h


def test_a_consistent_record_passes():
    assert violations(consistent()) == []
    assert violations(consistent(speedup=0.5)) == []       # slower: negative parts, no break-even


def test_a_speedup_a_few_percent_off_the_times_ratio_is_caught():
    h = consistent(wall=1.0, speedup=2.0)
    found = violations(edited(h, speedup=2.16))
    assert any("eager's time / the variant's = 2, speedup 2.16" in v for v in found), found
    assert violations(edited(h, speedup=2.0 * (1 + 0.5e-6))) == []   # within REL: one number


def test_a_largest_part_of_the_other_sign_is_caught():
    """+5 ms saved, its largest part named as -4.9 ms (the parts add up)."""
    h = consistent(wall=1.0, speedup=6.0, fractions=(0.4, 0.3, 0.0, 0.0))   # host 2, traffic 1.5, remainder 1.5
    assert h.loc[1, "largest_part"] == "host_saved_ms"
    bad = edited(h, host_saved_ms=2.0 + 4.9, remainder_ms=1.5 - 4.9, largest_part="remainder_ms",
                 largest_part_ms=1.5 - 4.9)
    found = violations(bad)
    assert any("largest part remainder_ms -3.4 ms of the other sign than the time saved 5 ms" in v
               for v in found), found
    # the parts give none (host 6.9 > 5: they pull both ways)
    assert any("names remainder_ms (-3.4 ms) as the largest part; its parts give none" in v for v in found), found


def test_a_largest_part_that_is_not_the_largest_or_is_left_out_is_caught():
    h = consistent(wall=1.0, speedup=6.0, fractions=(0.4, 0.3, 0.0, 0.0))
    found = violations(edited(h, largest_part="traffic_ms", largest_part_ms=1.5))
    assert any("names traffic_ms (1.5 ms) as the largest part; its parts give host_saved_ms (2 ms)" in v
               for v in found), found
    found = violations(edited(h, largest_part="", largest_part_ms=math.nan))
    assert any("names no part (nan ms) as the largest part; its parts give host_saved_ms" in v for v in found), found


def test_a_break_even_count_off_by_a_thousand_is_caught():
    h = consistent(wall=1.0, speedup=3.0, compile_s=12.0)   # 12000 ms / 2 ms = 6000
    assert h.loc[1, "break_even_iters"] == 6000.0
    found = violations(edited(h, break_even_iters=6.0))
    assert any("break-even after 6 iterations, but 12.0 s / 2.0 ms saved per iteration = 6000" in v
               for v in found), found
    found = violations(edited(consistent(speedup=0.5), break_even_iters=10.0))
    assert any("a break-even count 10 with verdict 'slower'" in v for v in found), found


def test_no_verdict_or_break_even_without_a_speedup():
    h = edited(consistent(), speedup=math.nan, speedup_lo=math.nan, speedup_hi=math.nan)
    assert not any("without a speedup" in v for v in violations(edited(h, verdict="", break_even_iters=math.nan)))
    found = violations(h)
    assert any("verdict 'faster' without a speedup" in v for v in found), found
    assert any("a break-even count 6000.0 without a speedup" in v for v in found), found


def test_a_missing_number_never_agrees_with_one():
    assert not audit._close(math.nan, 1.5) and not audit._close(1.5, math.nan)
    assert not audit._close(None, 1.5) and not audit._close(0.0, None)
    assert audit._close(math.nan, math.nan) and audit._close(None, None)   # both say there is none
    assert audit._close(2.0, 2.0 * (1 + 0.9e-6)) and not audit._close(2.0, 2.0 * (1 + 1.1e-6))
    found = violations(edited(consistent(), saved_ms=math.nan))
    assert any("saved_ms nan but eager's time - the variant's = 2" in v for v in found), found


def test_a_geometric_mean_quoted_from_records_with_no_speedup_is_caught():
    h = pd.concat([edited(consistent(), model=m, speedup=math.nan, speedup_lo=math.nan, speedup_hi=math.nan,
                          verdict="", break_even_iters=math.nan) for m in ("a", "b")], ignore_index=True)
    table = suite.suite(h)
    assert math.isnan(table.loc[0, "geomean_speedup"])
    a = audit.Audit()
    audit.check_suite(a, h, table, None)
    assert a.violations == []
    a = audit.Audit()
    audit.check_suite(a, h, table.assign(geomean_speedup=1.5), None)
    assert any("geometric mean 1.5 but the records' is nan" in v for v in a.violations), a.violations


# --- the tolerance, as a property -------------------------------------------------------

def _tol(x, y):
    """The smallest difference _close(x, y) refuses, at these magnitudes."""
    return 1e-9 + audit.REL * max(abs(x), abs(y))


def threshold(r: dict, field: str) -> float:
    """The smallest change of one field of a consistent record that some check of
    check_records refuses (to first order): each check's tolerance carried back to the
    field through the formula the check applies."""
    e, w, s, saved = r["eager_wall_ms"], r["wall_ms"], r["speedup"], r["saved_ms"]
    ratio, diff, parts = _tol(e / w, s), _tol(saved, e - w), _tol(saved, saved)
    be = r["break_even_iters"]
    if field == "speedup":
        return ratio
    if field == "eager_wall_ms":
        return min(ratio * w, diff)
    if field == "wall_ms":
        return min(ratio * w / s, diff)
    if field == "saved_ms":
        return min(diff, parts, _tol(be, be) * saved / be if be == be else math.inf)
    if field == "largest_part_ms":
        return _tol(r[field], r[field])
    if field == "compile_s":   # read only through the break-even count
        return _tol(be, be) * saved / 1e3 if be == be else math.inf
    if field == "break_even_iters":
        return _tol(be, be)
    # a part: the sum, and the largest part's own value where it is that one
    return min(parts, _tol(r[field], r[field]) if r["largest_part"] == field else math.inf)


FIELDS = ["speedup", "eager_wall_ms", "wall_ms", "saved_ms", "largest_part_ms", "compile_s", "break_even_iters",
          *PARTS]


@st.composite
def records(draw):
    speedup = draw(st.one_of(st.floats(0.2, 0.98), st.floats(1.02, 8.0)))
    fractions = tuple(draw(st.floats(-0.5, 1.0)) for _ in range(4))
    h = consistent(wall=draw(st.floats(0.01, 100.0)), speedup=speedup, fractions=fractions,
                   compile_s=draw(st.floats(0.5, 600.0)))
    r = h.loc[1].to_dict()
    parts = sorted(abs(r[p]) for p in PARTS)
    same = [abs(r[p]) for p in PARTS if r[p] * r["saved_ms"] > 0]
    # away from the boundaries of largest() itself (a tie, a part of the total's sign as
    # large as the total), where a change within the tolerance may rightly move the largest part
    if any(b - a < 1e-3 * abs(r["saved_ms"]) for a, b in zip(parts, parts[1:])) or \
            any(abs(x - abs(r["saved_ms"])) < 1e-3 * abs(r["saved_ms"]) for x in same):
        draw(st.nothing())
    field = draw(st.sampled_from([f for f in FIELDS if pd.notna(r[f]) and threshold(r, f) < math.inf]))
    return h, r, field


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much,
                                                                     HealthCheck.function_scoped_fixture])
@given(records(), st.floats(1.1, 1e4), st.floats(0.0, 0.9), st.sampled_from([1, -1]))
def test_every_change_past_the_tolerance_is_caught_and_none_within(tmp_path, rec, big, small, sign):
    """Through the folder, as `fusionlab audit` reads it (tables/headline.csv)."""
    h, r, field = rec
    os.makedirs(tmp_path / "tables", exist_ok=True)
    t = threshold(r, field)
    for k, caught in ((big, True), (small, False)):
        h.assign(**{field: h[field].where(h["variant"] == "eager", r[field] + sign * k * t)}).to_csv(
            tmp_path / "tables" / "headline.csv", index=False)
        # the headline's own checks (audit_inputs' about the tables beside it aside: this
        # folder holds the headline alone)
        found = [v for v in audit.audit(str(tmp_path)).violations if ": missing: " not in v]
        assert bool(found) is caught, (field, k, t, found)


def test_the_suite_counts_each_said_with_both_numbers():
    h = pd.concat([edited(consistent(), model=m) for m in ("a", "b", "c")], ignore_index=True)
    table = suite.suite(h)
    a = audit.Audit()
    audit.check_suite(a, h, table.assign(n_not_run=2, n_host_skewed=1), None)
    assert a.violations == ["tables/suite.csv compile inference float32: 2 configurations not run but the records "
                            "have 0",
                            "tables/suite.csv compile inference float32: 1 host-skewed but the records have 0"]
    a = audit.Audit()   # a suite table without the later counts: each taken as the records'
    audit.check_suite(a, h, table.drop(columns=["n_not_run", "n_compared", "n_host_skewed"]), None)
    assert a.violations == [] and a.checks == 5


def test_the_suites_geometric_mean_and_pass_count_each_said_with_both_numbers():
    h = pd.concat([edited(consistent(), model=m) for m in ("a", "b", "c")], ignore_index=True)
    table = suite.suite(h)
    a = audit.Audit()
    audit.check_suite(a, h, table.assign(geomean_speedup=2.5, n_compared=2), None)
    assert a.violations == [
        "tables/suite.csv compile inference float32: geometric mean 2.5 but the records' is 3.0000000000000004",
        "tables/suite.csv compile inference float32: 3 of 3 passed (2 compared) but the records have 3 of 3 "
        "(3 with a speedup)"], a.violations


def test_a_speedup_of_zero_or_text_is_not_compared():
    """A record from someone else's folder: a speedup of 0 or one that is not a number is
    not in the geometric mean (nor does it stop the audit)."""
    h = pd.concat([edited(consistent(), model=m) for m in ("a", "b", "c")], ignore_index=True)
    h["speedup"] = h["speedup"].astype(object)
    h.loc[(h["model"] == "b") & (h["variant"] == "compile"), "speedup"] = 0.0
    h.loc[(h["model"] == "c") & (h["variant"] == "compile"), "speedup"] = "n/a"
    row = {"variant": "compile", "mode": "inference", "dtype": "float32", "geomean_speedup": 3.0, "n_pass": 3,
           "n_configs": 3, "n_compared": 1, "geomean_lo": float("nan"), "geomean_hi": float("nan"),
           "verdict": "no interval"}
    a = audit.Audit()
    audit.check_suite(a, h, pd.DataFrame([row]), None)
    assert a.violations == [] and a.checks == 5


@pytest.mark.parametrize("lo, hi, verdict", [
    (1.5, 2.0, "faster"), (1.0001, 2.0, "faster"), (1.0, 2.0, "inconclusive"), (0.5, 1.0, "inconclusive"),
    (0.5, 0.9999, "slower"), (float("nan"), 2.0, "no interval"), (1.5, float("nan"), "no interval"),
])
def test_the_suites_verdict_read_from_its_interval(lo, hi, verdict):
    h = pd.concat([edited(consistent(), model=m) for m in ("a", "b", "c")], ignore_index=True)
    table = suite.suite(h).assign(geomean_lo=lo, geomean_hi=hi, verdict=verdict)
    a = audit.Audit()
    audit.check_suite(a, h, table, None)
    assert a.violations == []
    a = audit.Audit()
    audit.check_suite(a, h, table.assign(verdict="wrong"), None)
    assert a.violations == [f"tables/suite.csv compile inference float32: verdict wrong but its interval [{lo}, {hi}] "
                            f"reads {verdict}"]


def test_no_suite_verdict_without_the_configurations_own_intervals():
    h = pd.concat([edited(consistent(), model=m) for m in ("a", "b", "c")], ignore_index=True)
    table = suite.suite(h).assign(geomean_lo=1.5, geomean_hi=2.0, verdict="faster")
    a = audit.Audit()
    audit.check_suite(a, h.assign(speedup_lo=float("nan")), table, None)
    assert any("verdict faster but its interval [1.5, 2.0] reads no interval" in v for v in a.violations)
    none = h.assign(status="error", speedup=float("nan"))        # none compared
    a = audit.Audit()
    audit.check_suite(a, none, table.assign(geomean_speedup=float("nan"), n_pass=0, n_compared=0), None)
    assert any("verdict faster but its interval [1.5, 2.0] reads no interval" in v for v in a.violations)


def test_summary_md_quotes_the_suites_geometric_mean():
    h = pd.concat([edited(consistent(), model=m) for m in ("a", "b", "c")], ignore_index=True)
    table = suite.suite(h)
    md = "# Summary\n\n## The suite\n\n| variant | mode | dtype | geometric mean |\n| compile | inference | float32 | 3.00x |\n"
    a = audit.Audit()
    audit.check_suite(a, h, table, md)
    assert a.violations == [] and a.checks == 6
    earlier = "# Summary\n\n| compile | inference | float32 | 3.00x |\n\n## The suite\n\n| compile | inference | float32 | 3.10x |\n"
    for wrong in (md.replace("3.00x", "3.10x"), md.replace("| compile | inference | float32 | 3.00x |", ""), earlier):
        a = audit.Audit()
        audit.check_suite(a, h, table, wrong)
        assert a.violations == ["summary.md: The suite: compile inference float32: the table does not quote 3.00x"]


def test_the_memory_terms_byte_source_against_runs_csv():
    """Measured where Nsight Compute's DRAM bytes are in tables/runs.csv for both sides
    (ok runs), modelled otherwise; each violation names the record."""
    h = edited(consistent(), traffic_source="modelled")
    runs = pd.DataFrame([{**KEY, "variant": v, "repeat": 0, "dram_bytes_measured": 1e9} for v in ("eager", "compile")])
    a = audit.Audit()
    audit.check_records(a, h, runs)
    assert a.violations == ["headline.csv m compile batch 8 inference float32: memory term from modelled bytes, but "
                            "Nsight Compute measured both sides (tables/runs.csv dram_bytes_measured)"]
    for other in (runs.assign(status=["ok", "error"]), runs.assign(dram_bytes_measured=[1e9, float("nan")]),
                  runs.assign(model=["m", "other"]), runs.assign(dtype=["float32", "bfloat16"]),
                  runs.assign(batch=[8, 16]), runs.assign(mode=["inference", "train"]),
                  runs.assign(device=["cuda", "cpu"]), runs.assign(size=["default", "big"])):
        a = audit.Audit()
        audit.check_records(a, h, other)
        assert a.violations == [], other
    a = audit.Audit()
    audit.check_records(a, edited(h, traffic_source="measured"), runs.assign(status=["ok", "error"]))
    assert a.violations == ["headline.csv m compile batch 8 inference float32: memory term from measured bytes, but "
                            "Nsight Compute measured not both sides (tables/runs.csv dram_bytes_measured)"]


def test_each_record_violation_names_its_record_and_both_numbers():
    where = "headline.csv m compile batch 8 inference float32: "
    h = consistent(wall=1.0, speedup=3.0)
    cases = {"speedup": (2.5, "eager's time / the variant's = 3, speedup 2.5"),
             "verdict": ("slower", "verdict 'slower' but its interval [2.8499999999999996, 3.1500000000000004] "
                                   "gives 'faster'"),
             "saved_ms": (2.5, "saved_ms 2.5 but eager's time - the variant's = 2"),
             "remainder_ms": (1.0, "parts add up to 2.9 ms, time saved 2 ms"),
             "largest_part": ("kernels_saved_ms", "names kernels_saved_ms (1 ms) as the largest part; its parts give "
                                                  "traffic_ms (1 ms)")}
    for field, (value, said) in cases.items():
        found = violations(edited(h, **{field: value}))
        assert where + said in found, (field, found)
        assert all(v.startswith(where) for v in found)
    found = violations(edited(h, reference=headline.BESIDE_ONLY))
    assert found == [where + "parts of the time saved (2 ms) without an eager run of its own"]


def test_the_times_ratio_said_with_a_variant_time_other_than_one():
    """eager 8 ms, the variant 2 ms: the ratio said is 8 / 2 = 4 (not 8 x 2 = 16)."""
    found = violations(edited(consistent(wall=2.0, speedup=4.0), speedup=4.5))
    assert "headline.csv m compile batch 8 inference float32: eager's time / the variant's = 4, speedup 4.5" in found


def test_no_largest_part_read_back_as_missing_passes_where_the_parts_pull_both_ways():
    """Host +6 ms and traffic -1.5 ms of 5 ms saved: no largest part, written as an empty
    cell, which tables/headline.csv gives back as NaN (not a name)."""
    h = consistent(wall=1.0, speedup=6.0, fractions=(1.2, -0.3, 0.0, 0.0))
    assert h.loc[1, "largest_part"] == "" and math.isnan(h.loc[1, "largest_part_ms"])
    assert violations(edited(h, largest_part=math.nan)) == []
    found = violations(edited(h, largest_part="host_saved_ms", largest_part_ms=6.0))
    assert any("names host_saved_ms (6 ms) as the largest part; its parts give none (they pull both ways)" in v
               for v in found), found


def test_a_record_without_eager_time_or_the_later_columns_is_read_as_it_is():
    h = edited(consistent(), eager_wall_ms=math.nan, saved_ms=math.nan, break_even_iters=math.nan)
    assert violations(h) == []
    assert violations(consistent().drop(columns=["compile_s", "largest_part", "largest_part_ms",
                                                 "break_even_iters"])) == []


def test_an_inconclusive_gpu_bound_speedup_gives_its_kernel_time_and_the_audit_holds_it():
    """BERT compile as an H100 measured it (benchmarks/results/h100-host-gate): paired
    0.65x [0.22, 1.70], GPU-bound, kernel time 0.39x: the opening names the kernel-time
    speedup; a faster or host-bound one does not say GPU-bound; the audit refuses a
    GPU-bound mark where the record is decisive, and a kernel time off the record."""
    import pandas as pd
    from fusionlab.analysis.report import audit_opening, story
    r = pd.Series({"host_bound": False, "kernel_speedup": 0.386, "verdict": "inconclusive"})
    words = story.host_bound_words(r)
    assert words == " (GPU-bound: kernel time 0.39x)"
    assert story.host_bound_words(r.copy().replace({"inconclusive": "faster"})) == ""
    assert story.host_bound_words(pd.Series({**r, "host_bound": None})) == ""
    a = audit.Audit()
    audit_opening.check_host_bound(a, f"0.65x paired{words}; 10.3 ms", r, "here")
    assert a.violations == [] and a.checks == 3   # host-bound said, GPU-bound said, the kernel time
    audit_opening.check_host_bound(a, f"0.65x paired{words}", pd.Series({**r, "verdict": "slower"}), "slower")
    audit_opening.check_host_bound(a, "0.65x paired (GPU-bound: kernel time 0.40x)", r, "off")
    assert [v.split(":")[0] for v in a.violations] == ["slower", "off"]

# --- the largest part at its bounds, the byte source's exceptions, the number match ------

LARGEST = "headline.csv m compile batch 8 inference float32: "


def test_a_largest_part_as_large_as_the_time_saved_passes():
    h = consistent(wall=1.0, speedup=3.0, fractions=(1.0, 0.0, 0.0, 0.0))   # host 2.0 of 2.0 saved
    assert (h.loc[1, "largest_part"], h.loc[1, "largest_part_ms"], h.loc[1, "saved_ms"]) == ("host_saved_ms", 2.0, 2.0)
    assert violations(h) == []


def test_a_largest_part_larger_than_the_time_saved_or_not_its_parts_value_is_caught():
    """+5 ms saved from host +6 and traffic -1: no largest part (they pull both ways);
    naming host 6 ms is caught twice, and so is naming host 2 ms at 1.9 ms."""
    h = consistent(wall=1.0, speedup=6.0, fractions=(1.2, -0.2, 0.0, 0.0))
    assert h.loc[1, "largest_part"] == ""
    assert violations(edited(h, largest_part="host_saved_ms", largest_part_ms=6.0)) == [
        LARGEST + "names host_saved_ms (6 ms) as the largest part; its parts give none (they pull both ways) (nan ms)",
        LARGEST + "largest part host_saved_ms 6 ms against the time saved 5 ms"]
    h = consistent(wall=1.0, speedup=6.0, fractions=(0.4, 0.3, 0.0, 0.0))    # host 2, traffic 1.5, remainder 1.5
    assert violations(edited(h, largest_part_ms=1.9)) == [
        LARGEST + "names host_saved_ms (1.9 ms) as the largest part; its parts give host_saved_ms (2 ms)",
        LARGEST + "largest part host_saved_ms 1.9 ms against the time saved 5 ms"]


def test_a_largest_part_of_zero_is_caught_where_something_or_nothing_was_saved():
    h = consistent(wall=1.0, speedup=6.0, fractions=(0.4, 0.3, 0.0, 0.0))    # kernels 0 of +5 saved
    assert violations(edited(h, largest_part="kernels_saved_ms", largest_part_ms=0.0)) == [
        LARGEST + "names kernels_saved_ms (0 ms) as the largest part; its parts give host_saved_ms (2 ms)",
        LARGEST + "largest part kernels_saved_ms 0 ms of the other sign than the time saved 5 ms"]
    even = consistent(wall=1.0, speedup=1.0)                                  # nothing saved, every part 0
    assert even.loc[1, "saved_ms"] == 0.0 and even.loc[1, "largest_part"] == "" and violations(even) == []
    assert violations(edited(even, largest_part="host_saved_ms", largest_part_ms=0.0)) == [
        LARGEST + "names host_saved_ms (0 ms) as the largest part; its parts give none (they pull both ways) (nan ms)",
        LARGEST + "largest part host_saved_ms 0 ms of the other sign than the time saved 0 ms"]


def test_no_memory_term_or_no_runs_table_leaves_the_byte_source_unchecked():
    runs = pd.DataFrame([{**KEY, "variant": v, "repeat": 0, "dram_bytes_measured": 1e9} for v in ("eager", "compile")])
    a = audit.Audit()
    audit.check_records(a, edited(consistent(), traffic_source="none"), runs)   # no memory term: either is right
    assert a.violations == []
    assert violations(edited(consistent(), traffic_source="measured")) == []    # no tables/runs.csv to read
    a = audit.Audit()
    audit.check_records(a, edited(consistent(), traffic_source="measured"), runs.drop(columns="dram_bytes_measured"))
    assert a.violations == []


def test_the_number_match_at_its_exact_bounds():
    close = audit.audit_match.close
    assert close(0.0, 0.5, 0, 0.5) and not close(0.0, 0.5000001, 0, 0.5)    # the absolute bound, included
    assert close(1.0, 1.8, 0.5, 0) and not close(1.0, 2.1, 0.5, 0)          # rel of the larger (0.9, 1.05)
    assert close(-1.0, -1.8, 0.5, 0) and not close(1.0, -1.0, 0.5, 0)
    assert close(0.0, 1e-9) and not close(0.0, 1.001e-9)                    # the default abs_ 1e-9
    assert audit.REL == 1e-6


def test_a_records_key_is_its_text_with_an_integer_batch_and_a_default_size():
    key = audit.audit_match.record_key
    keys = ["model", "batch", "size"]
    assert key({"model": "m", "batch": 8.0, "size": float("nan")}, keys) == ("m", "8", "default")
    assert key({"model": "m", "batch": "16.0", "size": None}, keys) == ("m", "16", "default")
    assert key({"model": None, "batch": None, "size": "dim512"}, keys) == ("None", "None", "dim512")
    assert key({"model": float("nan"), "batch": float("nan")}, keys) == ("nan", "nan", "default")
    assert audit._key({**KEY, "variant": "compile", "batch": 8.0}) == ("m", "compile", "8", "default", "inference",
                                                                       "float32", "cuda")


def test_the_break_even_and_no_speedup_violations_name_their_record():
    assert violations(edited(consistent(speedup=0.5), break_even_iters=10.0)) == [
        LARGEST + "a break-even count 10 with verdict 'slower'",
        LARGEST + "break-even after 10 iterations, but 12.0 s / -0.5 ms saved per iteration = -24000"]
    assert violations(edited(consistent(), break_even_iters=6.0)) == [
        LARGEST + "break-even after 6 iterations, but 12.0 s / 2.0 ms saved per iteration = 6000"]
    h = edited(consistent(), speedup=math.nan, speedup_lo=math.nan, speedup_hi=math.nan)
    assert violations(h) == [LARGEST + "verdict 'faster' without a speedup",
                             LARGEST + "a break-even count 6000.0 without a speedup"]


def test_a_record_of_an_earlier_table_without_the_time_saved_columns():
    """No saved_ms, parts, largest_part_ms or compile_s: each read as missing, and a
    break-even count is then one nothing supports."""
    h = consistent().drop(columns=[*PARTS, "saved_ms", "largest_part_ms", "compile_s"])
    assert violations(h) == [
        LARGEST + "saved_ms nan but eager's time - the variant's = 2",
        LARGEST + "break-even after 6000 iterations, but nan s / nan ms saved per iteration = nan"]
    assert violations(consistent().drop(columns=["largest_part_ms"])) == [
        LARGEST + "names traffic_ms (nan ms) as the largest part; its parts give traffic_ms (1 ms)",
        LARGEST + "largest part traffic_ms nan ms of the other sign than the time saved 2 ms",
        LARGEST + "largest part traffic_ms nan ms against the time saved 2 ms"]


def test_a_record_without_an_eager_run_of_its_own_is_told_once_of_its_parts():
    h = edited(consistent(), reference=headline.BESIDE_ONLY, largest_part="", largest_part_ms=math.nan)
    assert violations(h) == [LARGEST + "parts of the time saved (2 ms) without an eager run of its own"]
    beside = edited(h, **{p: math.nan for p in PARTS})
    assert violations(beside) == []


def test_the_byte_source_where_eager_was_not_measured_or_a_key_is_missing():
    runs = pd.DataFrame([{**KEY, "variant": v, "repeat": 0, "dram_bytes_measured": 1e9} for v in ("eager", "compile")])
    a = audit.Audit()
    audit.check_records(a, edited(consistent(), traffic_source="modelled"), runs.assign(status=["error", "ok"]))
    assert a.violations == []                                   # eager's run failed: not both sides
    old = edited(consistent(), traffic_source="modelled").assign(device=math.nan)   # tables without a device
    a = audit.Audit()
    audit.check_records(a, old, runs.assign(device=math.nan))
    assert a.violations == ["headline.csv m compile batch 8 inference float32: memory term from modelled bytes, but "
                            "Nsight Compute measured both sides (tables/runs.csv dram_bytes_measured)"]


def test_a_caption_max_of_zeros_is_zero_and_a_min_skips_zeros():
    """A caption's 'at most 0%' where every configuration with a time is GPU-bound (host
    share 0, a configuration not run NaN): the record's max is 0, not nothing; a min still
    leaves out zeros (an eager row's compile time 0)."""
    import math
    from fusionlab.analysis.report.audit_figures import AGGREGATES
    assert AGGREGATES["max"](pd.Series([0.0, math.nan])) == 0.0
    assert AGGREGATES["max"](pd.Series([0.0, 0.25, math.nan])) == 0.25
    assert math.isnan(AGGREGATES["max"](pd.Series([math.nan])))
    assert AGGREGATES["min"](pd.Series([0.0, 3.0, 2.0])) == 2.0
