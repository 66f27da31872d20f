"""The audit of a figure's headline marks, its caption and the bandwidth summary.md names
(report.audit.check_figure, check_caption, check_bandwidth) at their edges: each mark's
value at the tolerance (REL of the larger, plus 1e-9), a speedup label at 0.0051 of the
record's speedup rounded to 2 places, the host-skewed and inconclusive words of a label,
a word a source label holds, marks without a batch left out, the configurations drawn
(the variant left out of each), a caption's count and highest estimate filtered by
variant, batch, model, setting and the configurations drawn, and the bandwidth words;
each violation word for word and each count of checks exact."""
import math

import pandas as pd

from fusionlab.analysis.report import audit

SET = {"model": "m", "size": "default", "mode": "inference", "dtype": "float32", "device": "cuda"}
FAST = {**SET, "variant": "compile", "batch": 8, "speedup": 1.234, "speedup_lo": 1.2, "speedup_hi": 1.3,
        "verdict": "faster", "status": "ok", "wall_ms": 2.0, "host_skewed": False, "traffic_source": "measured"}
WHERE = "figures/headline/m.data.csv"
NAME = "m compile batch 8 inference float32"


def records(*rows) -> dict:
    return {audit._key(r): r for r in rows}


def run(marks: list[dict], recs: dict) -> tuple[audit.Audit, set]:
    a = audit.Audit()
    drawn = audit.check_figure(a, pd.DataFrame(marks), recs, WHERE)
    return a, drawn


def mark(**fields) -> dict:
    return {k: v for k, v in FAST.items() if k in (*SET, "variant", "batch")} | {"mark": "bar"} | fields


def test_a_value_at_the_tolerance_agrees_and_past_it_not():
    recs = records(FAST)
    a, drawn = run([mark(quantity="wall_ms", value=2.0 * (1 + 0.9e-6))], recs)
    assert (a.checks, a.violations) == (1, [])
    assert drawn == {("m", "8", "default", "inference", "float32", "cuda")}
    a, _ = run([mark(quantity="wall_ms", value=2.0 * (1 + 1.1e-6))], recs)
    assert a.violations == [f"{WHERE} bar {NAME}: draws wall_ms = 2, the record has 2"]
    a, _ = run([mark(quantity="wall_ms", value=2.5)], recs)
    assert a.violations == [f"{WHERE} bar {NAME}: draws wall_ms = 2.5, the record has 2"]
    a, _ = run([mark(quantity="wall_ms", value=1.5)], recs)   # smaller: the larger is the record's
    assert a.violations == [f"{WHERE} bar {NAME}: draws wall_ms = 1.5, the record has 2"]


def test_a_mark_with_no_value_a_verdict_or_a_quantity_no_record_holds_is_not_compared():
    recs = records(FAST)
    a, _ = run([mark(quantity="wall_ms", value=math.nan), mark(quantity="verdict", value=3.0),
                mark(quantity="not_a_column", value=3.0), mark(quantity=math.nan, value=3.0)], recs)
    assert (a.checks, a.violations) == (0, [])


def test_marks_without_a_batch_are_left_out_and_a_configuration_without_a_record_is_one_violation():
    recs = records(FAST)
    a, drawn = run([mark(batch=math.nan, quantity="wall_ms", value=9.0),
                    {"mark": "legend", "model": "m", "quantity": "wall_ms", "value": 9.0}], recs)
    assert (a.checks, a.violations, drawn) == (0, [], set())
    a, drawn = run([mark(batch=None, quantity="wall_ms", value=9.0), mark(batch=16, quantity="wall_ms", value=2.0),
                    mark(quantity="wall_ms", value=2.0)], recs)   # batch None in an object column
    assert a.checks == 2
    assert a.violations == [f"{WHERE} bar m compile batch 16 inference float32: no record of this configuration in "
                            f"headline.csv"]
    assert drawn == {("m", "16", "default", "inference", "float32", "cuda"),
                     ("m", "8", "default", "inference", "float32", "cuda")}


def test_the_configurations_drawn_leave_out_the_variant_and_name_a_size():
    eager = {**FAST, "variant": "eager", "speedup": 1.0}
    big = {**FAST, "size": "hidden1024", "batch": 8.0}
    a, drawn = run([mark(quantity="wall_ms", value=2.0), mark(variant="eager", quantity="wall_ms", value=2.0),
                    mark(size="hidden1024", quantity="wall_ms", value=2.0, mark="point")], records(FAST, eager, big))
    assert (a.checks, a.violations) == (3, [])
    assert drawn == {("m", "8", "default", "inference", "float32", "cuda"),
                     ("m", "8", "hidden1024", "inference", "float32", "cuda")}
    a, _ = run([mark(size="hidden1024", quantity="wall_ms", value=3.0, mark="point")], records(big))
    assert a.violations == [f"{WHERE} point m compile batch 8 hidden1024 inference float32: draws wall_ms = 3, "
                            f"the record has 2"]


def test_a_speedup_label_agrees_within_0_0051_of_the_rounded_speedup():
    recs = records(FAST)   # 1.234 rounds to 1.23
    for said, ok in (("1.23x", True), ("1.235x", True), ("1.2251x", True), ("1.236x", False), ("1.2248x", False),
                     ("1.24x", False), ("1.234", False), ("speedup", False)):
        a, _ = run([mark(quantity="speedup", value=math.nan, text=said)], recs)
        assert a.checks == 2
        assert a.violations == ([] if ok else [f"{WHERE} bar {NAME}: label {said!r}, the record's speedup 1.234"])
    a, _ = run([mark(quantity="speedup", value=math.nan, text="speedup 1.23x paired")], recs)
    assert (a.checks, a.violations) == (2, [])
    neg = {**FAST, "speedup": -0.5}   # the sign read with the number
    a, _ = run([mark(quantity="speedup", value=math.nan, text="-0.50x")], records(neg))
    assert (a.checks, a.violations) == (2, [])
    a, _ = run([mark(quantity="speedup", value=math.nan, text="0.50x")], records(neg))
    assert a.violations == [f"{WHERE} bar {NAME}: label '0.50x', the record's speedup -0.5"]


def test_a_speedup_label_says_host_skewed_exactly_where_the_record_is():
    for skew, said, ok in ((True, "1.23x, host-skewed", True), ("True", "1.23x, host-skewed", True),
                           (False, "1.23x, host-skewed", False), (True, "1.23x", False),
                           (False, "1.23x", True), ("False", "1.23x", True)):
        a, _ = run([mark(quantity="speedup", value=math.nan, text=said)], records({**FAST, "host_skewed": skew}))
        assert a.checks == 2
        assert a.violations == ([] if ok else [f"{WHERE} bar {NAME}: label {said!r}, the record's host_skewed {skew}"])


def test_a_label_with_its_interval_says_inconclusive_exactly_where_the_record_is():
    inc = {**FAST, "verdict": "inconclusive"}
    for r, said, ok in ((FAST, "1.23x [1.20, 1.30]", True), (inc, "1.23x [1.20, 1.30] inconclusive", True),
                        (FAST, "1.23x [1.20, 1.30] inconclusive", False), (inc, "1.23x [1.20, 1.30]", False)):
        a, _ = run([mark(quantity="speedup", value=math.nan, text=said)], records(r))
        assert a.checks == 3
        assert a.violations == ([] if ok else
                                [f"{WHERE} bar {NAME}: label {said!r}, the record's verdict {r['verdict']!r}"])
    a, _ = run([mark(quantity="speedup", value=math.nan, text="1.23x inconclusive")], records(FAST))
    assert (a.checks, a.violations) == (2, [])   # no interval: the word is not read


def test_a_speedup_mark_with_a_value_is_compared_and_its_label_read():
    a, _ = run([mark(quantity="speedup", value=1.5, text="1.50x")], records(FAST))
    assert a.violations == [f"{WHERE} bar {NAME}: draws speedup = 1.5, the record has 1.234",
                            f"{WHERE} bar {NAME}: label '1.50x', the record's speedup 1.234"]
    assert a.checks == 3


def test_a_status_label_against_the_records_status():
    a, _ = run([mark(quantity="status", value=math.nan, text="ok")], records(FAST))
    assert (a.checks, a.violations) == (1, [])
    a, _ = run([mark(quantity="status", value=math.nan, text="timeout")], records(FAST))
    assert a.violations == [f"{WHERE} bar {NAME}: drawn as 'timeout', the record's status is 'ok'"]
    nostatus = {k: v for k, v in FAST.items() if k != "status"}
    a, _ = run([mark(quantity="status", value=math.nan, text="None")], records(nostatus))
    assert (a.checks, a.violations) == (1, [])
    a, _ = run([mark(quantity="status", value=math.nan, text="ok")], records(nostatus))
    assert a.violations == [f"{WHERE} bar {NAME}: drawn as 'ok', the record's status is None"]
    a, _ = run([mark(quantity="status", value=math.nan, text=math.nan)], records(FAST))
    assert a.checks == 0


def test_a_verdict_label_against_the_records_verdict():
    a, _ = run([mark(quantity="verdict", value=math.nan, text="faster")], records(FAST))
    assert (a.checks, a.violations) == (1, [])
    a, _ = run([mark(quantity="verdict", value=math.nan, text="slower")], records(FAST))
    assert a.violations == [f"{WHERE} bar {NAME}: drawn as 'slower', the record's verdict is 'faster'"]
    a, _ = run([mark(quantity="verdict", value=math.nan, text=math.nan)], records(FAST))
    assert a.checks == 0
    # a record without a verdict (no speedup): a verdict drawn is a violation, not a word left unread
    a, _ = run([mark(quantity="verdict", value=math.nan, text="faster")], records({**FAST, "verdict": math.nan}))
    assert a.violations == [f"{WHERE} bar {NAME}: drawn as 'faster', the record's verdict is nan"]


def test_a_word_label_against_the_records_word_of_its_quantity():
    a, _ = run([mark(quantity="traffic_source", value=math.nan, text="measured")], records(FAST))
    assert (a.checks, a.violations) == (1, [])
    a, _ = run([mark(quantity="traffic_source", value=math.nan, text="modelled")], records(FAST))
    assert a.violations == [f"{WHERE} bar {NAME}: drawn as 'modelled', the record's traffic_source is 'measured'"]
    # a quantity whose record holds a number, or none, is no word: not compared
    a, _ = run([mark(quantity="wall_ms", value=math.nan, text="2.00 ms"),
                mark(quantity="missing", value=math.nan, text="x")], records(FAST))
    assert a.checks == 0


# --- the caption -------------------------------------------------------------------

def table(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


H = table({**FAST, "variant": "eager", "speedup": 1.0}, FAST,
          {**FAST, "batch": 16, "speedup": 1.5},
          {**FAST, "model": "n", "speedup": 2.0},
          {**FAST, "dtype": "bfloat16", "speedup": 3.0},
          {**FAST, "size": "hidden1024", "speedup": 4.0},
          {**FAST, "variant": "compile_max_autotune", "speedup": 5.0},
          {**FAST, "batch": 32, "speedup": math.nan})
D8 = ("m", "8", "default", "inference", "float32", "cuda")


def caption(text: str, drawn=frozenset(), model="m") -> audit.Audit:
    a = audit.Audit()
    audit.check_caption(a, text, set(drawn), H, model, "figures/headline/m.rst")
    return a


def test_a_caption_counts_the_configurations_drawn():
    drawn = {D8, ("m", "16", "default", "inference", "float32", "cuda")}
    a = caption("Speedup of each variant (2 configurations drawn).", drawn)
    assert (a.checks, a.violations) == (1, [])
    a = caption("Speedup of each variant (3 configurations drawn).", drawn)
    assert a.violations == ["figures/headline/m.rst: the caption counts 3 configurations, the figure draws 2"]
    a = caption("Speedup (12 configurations drawn).", drawn)   # every digit of the count read
    assert a.violations == ["figures/headline/m.rst: the caption counts 12 configurations, the figure draws 2"]
    assert caption("Speedup (3 configurations drawn).").checks == 0    # nothing drawn: not compared
    assert caption("Speedup (3 configurations).", drawn).checks == 0


def test_a_captions_highest_estimate_is_of_its_variant_batch_and_model():
    ok = caption("the highest estimate is compile at batch 8: 1.23x paired")
    assert (ok.checks, ok.violations) == (1, [])
    # 1.234 rounds to 1.23: 0.0051 either side of it agrees
    assert caption("the highest estimate is compile at batch 8: 1.235x").violations == []
    assert caption("the highest estimate is compile at batch 8: 1.236x").violations == [
        "figures/headline/m.rst: quotes compile at batch 8 at 1.236x; the records have 1.23x, 3.00x, 4.00x"]
    assert caption("the highest estimate is compile at batch 16: 1.50x").violations == []
    assert caption("the highest estimate is compile_max_autotune at batch 8: 5.00x").violations == []
    assert caption("the highest estimate is compile at batch 8: 5.00x").violations == [
        "figures/headline/m.rst: quotes compile at batch 8 at 5.00x; the records have 1.23x, 3.00x, 4.00x"]
    assert caption("the highest estimate is compile at batch 8: 2.00x").violations == [   # model n's
        "figures/headline/m.rst: quotes compile at batch 8 at 2.00x; the records have 1.23x, 3.00x, 4.00x"]
    assert caption("the highest estimate is compile at batch 8: 2.00x", model="n").violations == []
    assert caption("the highest estimate is compile at batch 8: 2.00x", model=None).violations == []
    assert caption("the highest estimate is compile at batch 32: 1.00x").violations == [
        "figures/headline/m.rst: quotes compile at batch 32 at 1.00x; the records have none"]
    assert caption("the highest estimate is compile at batch 64: 1.00x").violations == [
        "figures/headline/m.rst: quotes compile at batch 64 at 1.00x; the records have none"]
    assert caption("the highest estimate is compile at batch 1: 1.23x").violations == [   # batch 1 is not 16
        "figures/headline/m.rst: quotes compile at batch 1 at 1.23x; the records have none"]
    assert caption("no estimate quoted").checks == 0


def test_a_captions_highest_estimate_names_its_setting_where_several_are_drawn():
    assert caption("the highest estimate is compile at batch 8, inference bfloat16: 3.00x").violations == []
    assert caption("the highest estimate is compile at batch 8, inference float32: 3.00x").violations == [
        "figures/headline/m.rst: quotes compile at batch 8 at 3.00x; the records have 1.23x, 4.00x"]
    assert caption("the highest estimate is compile at batch 8, training float32: 1.23x").violations == [
        "figures/headline/m.rst: quotes compile at batch 8 at 1.23x; the records have none"]


def test_a_captions_highest_estimate_is_of_a_configuration_drawn():
    drawn = {D8}
    assert caption("the highest estimate is compile at batch 8: 1.23x", drawn).violations == []
    a = caption("the highest estimate is compile at batch 8: 4.00x", drawn)   # hidden1024 is not drawn
    assert a.violations == ["figures/headline/m.rst: quotes compile at batch 8 at 4.00x; the records have 1.23x"]
    big = {("m", "8", "hidden1024", "inference", "float32", "cuda")}
    assert caption("the highest estimate is compile at batch 8: 4.00x", big).violations == []
    a = caption("the highest estimate is compile at batch 8: 4.00x (2 configurations drawn)", drawn | big)
    assert (a.checks, a.violations) == (2, [])


# --- the bandwidth -------------------------------------------------------------------

ACHIEVED = ("eager's achieved bandwidth (eager's bytes over its kernel time; no device/peaks.json with a measured "
            "copy bandwidth in this results folder)")
SAVED = "## Where the speedup comes from\n"
LEDGER = "Kernel pairs the compiler left apart: "
NOT_COSTED = ("the buffer between them not costed in time (no device/peaks.json with a measured copy bandwidth in "
              "this results folder; the pairs rank by bytes)")
COSTED = "the buffer between them written and read back at the measured copy bandwidth"


def bandwidth(md: str, h: pd.DataFrame, missed=None) -> audit.Audit:
    a = audit.Audit()
    audit.check_bandwidth(a, md, h, missed)
    return a


def test_the_memory_traffic_bandwidth_summary_md_names_is_the_records():
    measured = pd.DataFrame({"traffic_bandwidth": ["measured copy bandwidth", "none", math.nan]})
    achieved = pd.DataFrame({"traffic_bandwidth": ["measured copy bandwidth", "eager's achieved bandwidth"]})
    ok = bandwidth(SAVED + "saved (bytes removed / the measured copy bandwidth: 1 ms)", measured)
    assert (ok.checks, ok.violations) == (1, [])
    a = bandwidth(SAVED + f"saved (bytes removed / {ACHIEVED}: 1 ms)", measured)
    assert a.violations == ["summary.md: Where the speedup comes from: the records' memory traffic used "
                            "['measured copy bandwidth', 'none'], but the text does not say "
                            "'(bytes removed / the measured copy bandwidth:'"]
    assert bandwidth(SAVED + f"saved (bytes removed / {ACHIEVED}: 1 ms)", achieved).violations == []
    a = bandwidth(SAVED + "saved (bytes removed / the measured copy bandwidth: 1 ms)", achieved)
    assert a.violations == ["summary.md: Where the speedup comes from: the records' memory traffic used "
                            "[\"eager's achieved bandwidth\", 'measured copy bandwidth'], but the text does not say "
                            f"{'(bytes removed / ' + ACHIEVED + ':'!r}"]
    # no section, or records without the column: nothing compared
    assert bandwidth("saved (bytes removed / nothing: 1 ms)", measured).checks == 0
    assert bandwidth(SAVED + "saved (bytes removed / nothing: 1 ms)", pd.DataFrame({"speedup": [1.0]})).checks == 0


def test_the_missed_fusions_cost_summary_md_names_is_that_of_the_pairs_left_apart():
    h = pd.DataFrame({"speedup": [1.0]})
    missed = pd.DataFrame({"kind": ["left apart", "fused", "left apart"],
                           "bandwidth_source": ["none", "measured copy bandwidth", "none"]})
    ok = bandwidth(LEDGER + NOT_COSTED, h, missed)
    assert (ok.checks, ok.violations) == (1, [])
    a = bandwidth(LEDGER + COSTED, h, missed)   # the fused pair's measured bandwidth is not read
    assert a.violations == [f"summary.md: the fusion ledger: the missed fusions' bandwidth is ['none'], but the "
                            f"text does not say {NOT_COSTED!r}"]
    costed = missed.assign(bandwidth_source=["none", "none", "measured copy bandwidth"])
    assert bandwidth(LEDGER + COSTED, h, costed).violations == []
    a = bandwidth(LEDGER + NOT_COSTED, h, costed)
    assert a.violations == [f"summary.md: the fusion ledger: the missed fusions' bandwidth is "
                            f"['measured copy bandwidth', 'none'], but the text does not say {COSTED!r}"]
    assert bandwidth(NOT_COSTED, h, costed).checks == 0                     # no ledger section
    assert bandwidth(LEDGER + NOT_COSTED, h, None).checks == 0
    assert bandwidth(LEDGER + NOT_COSTED, h, costed.drop(columns="bandwidth_source")).checks == 0
    both = bandwidth(SAVED + "(bytes removed / the measured copy bandwidth:\n" + LEDGER + COSTED,
                     pd.DataFrame({"traffic_bandwidth": ["measured copy bandwidth"]}), costed)
    assert (both.checks, both.violations) == (2, [])
