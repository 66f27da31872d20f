import contextlib
import gc
import gzip
import os
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")


@pytest.fixture
def report(tmp_path):
    """Path of a fixture's report.sqlite (decompressed from report.sqlite.gz)."""
    def get(name: str) -> str:
        src = os.path.join(DATA, name)
        out = tmp_path / (name.replace("/", "_") + ".sqlite")
        if os.path.exists(os.path.join(src, "report.sqlite.gz")):
            with gzip.open(os.path.join(src, "report.sqlite.gz")) as f, open(out, "wb") as g:
                shutil.copyfileobj(f, g)
        else:
            shutil.copy(os.path.join(src, "report.sqlite"), out)
        return str(out)
    return get


def pytest_collection_modifyitems(config, items):
    """Two tiers. The fast tier (pyproject.toml: `-m "not slow"`, the README's test
    command) is every test but those marked slow; the slow tier (`-m slow`, run by .ci/run
    after it) is those: Snakemake runs, the SLURM test, time limits, a process that compiles
    with debug output, and every test that uses the smoke sweep
    (a test using the `smoke` fixture is marked slow here).
    Within a session the slow tests go first, so that xdist's workers start on them (the
    first smoke test runs the sweep) while another takes the short ones; the tests that
    only read the smoke sweep (marked smoke_reader) go last, when it is ready, spread over
    the workers. The order is otherwise kept."""
    for item in items:
        if "smoke" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)

    def rank(item):
        if item.get_closest_marker("smoke_reader"):
            return 2
        return 0 if item.get_closest_marker("slow") else 1
    items.sort(key=rank)


def pytest_collection_finish(session):
    """Freeze the heap the imports made (gc.freeze): the runner calls gc.collect() before
    its timing loops, and in a test worker holding torch, Inductor, pandas and matplotlib
    each collect scanned about 500,000 objects, 0.3 s (a hundred in-process runs: a minute
    of a 2-core machine). Frozen are the objects alive once the test modules and Inductor
    are imported, kept for the session anyway; what the tests make is collected as before."""
    with contextlib.suppress(ImportError):     # the first compile test imports them anyway
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config):
    """Unfreeze the heap before the interpreter exits: Triton's bindings (nanobind) report
    every object of theirs still frozen then as a leak, dozens of lines per process."""
    gc.unfreeze()


def lowered():
    """Inductor lowers the graph (no FX graph or AOTAutograd cache hit: a hit has no fusion
    log); the generated C++ is still compiled through the code cache (force_disable_caches
    would compile it and probe the CPU's vector ISA again, seconds on a 2-core machine)."""
    from torch._functorch import config as functorch_config
    from torch._inductor import config
    stack = contextlib.ExitStack()
    stack.enter_context(config.patch(fx_graph_cache=False))
    stack.enter_context(functorch_config.patch(enable_autograd_cache=False))
    return stack
