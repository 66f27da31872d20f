"""analysis.run.metrics's entry points (views, range_metrics, kernel_table) at their edges,
with analysis.run.stream.views replaced by a recorder: what each passes on (the trace, the
targets as a list, the attributions, the kernel tables asked for) and which part of the
answer it returns, each under its defaults (every range of the trace; both attributions;
the measure range of the fusionlab domain; `process`) and with each argument given."""
import pytest

from fusionlab.analysis.run import metrics, stream


class Trace:
    """A trace whose ranges are a range table: fields.range_keys reads its keys()."""

    class range_table:
        @staticmethod
        def keys():
            return [("a", "d"), ("b", None)]


@pytest.fixture
def calls(monkeypatch):
    """stream.views as a recorder: each call's (trace, targets, attributions, tables); it
    answers each target and table with a tuple naming it and the call's number."""
    seen = []

    def views(trace, targets, attributions, tables=()):
        seen.append((trace, targets, attributions, tables))
        n = len(seen)
        return ({metrics.key(name, domain): {a: ("metrics", name, domain, a, n) for a in attributions}
                 for name, domain in targets},
                {t: ("table", *t, n) for t in tables})

    monkeypatch.setattr(stream, "views", views)
    return seen


def test_views_defaults_read_every_range_under_both_attributions(calls):
    t = Trace()
    got = metrics.views(t)
    assert calls == [(t, [("a", "d"), ("b", None)], ("process", "same_thread"), ())]
    assert got == ({"d:a": {"process": ("metrics", "a", "d", "process", 1),
                            "same_thread": ("metrics", "a", "d", "same_thread", 1)},
                    "b": {"process": ("metrics", "b", None, "process", 1),
                          "same_thread": ("metrics", "b", None, "same_thread", 1)}}, {})


def test_views_passes_given_targets_as_a_list_and_no_range_for_an_empty_one(calls):
    t = Trace()
    metrics.views(t, (x for x in [("m", "fusionlab")]), ("same_thread",), [("m", "fusionlab", "process")])
    metrics.views(t, [], (), ())
    assert calls == [(t, [("m", "fusionlab")], ("same_thread",), [("m", "fusionlab", "process")]),
                     (t, [], (), ())]


def test_range_metrics_defaults_measure_of_fusionlab_by_process(calls):
    t = Trace()
    assert metrics.range_metrics(t, "iteration") == ("metrics", "iteration", "fusionlab", "process", 1)
    assert calls == [(t, [("iteration", "fusionlab")], ("process",), ())]


def test_range_metrics_given_domain_and_attribution(calls):
    t = Trace()
    assert metrics.range_metrics(t, "r", None, "same_thread") == ("metrics", "r", None, "same_thread", 1)
    assert metrics.range_metrics(t, "r", domain="x", attribution="same_thread") == \
        ("metrics", "r", "x", "same_thread", 2)
    assert calls == [(t, [("r", None)], ("same_thread",), ()), (t, [("r", "x")], ("same_thread",), ())]


def test_kernel_table_defaults_measure_of_fusionlab_by_process(calls):
    t = Trace()
    assert metrics.kernel_table(t) == ("table", "measure", "fusionlab", "process", 1)
    assert calls == [(t, [], (), [("measure", "fusionlab", "process")])]


def test_kernel_table_given_range_domain_and_attribution(calls):
    t = Trace()
    assert metrics.kernel_table(t, "iteration", None, "same_thread") == \
        ("table", "iteration", None, "same_thread", 1)
    assert metrics.kernel_table(t, name="w", domain="d", attribution="same_thread") == \
        ("table", "w", "d", "same_thread", 2)
    assert calls == [(t, [], (), [("iteration", None, "same_thread")]),
                     (t, [], (), [("w", "d", "same_thread")])]
