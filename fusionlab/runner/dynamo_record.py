"""What Dynamo and Inductor did in one run, from their own counters: run.json's `dynamo`.

Read at marks of the run (after the check's first calls, after the warm-up, after the
timing windows), never on the timed calls: each mark copies torch._dynamo.utils.counters,
the compile time so far (cumulative_time_spent_ns' entire_frame_compile), the guard
failures (torch._dynamo.utils.guard_failures: per code, the guard that failed at each
recompile), the compiled codes' cache entries (convert_frame.input_codes and each code's
cache entry list) and the CUDA graph trees' recordings (each tree manager's graph counter,
warm-ups and re-recordings). After the windows, guard_cost runs one more iteration with a
profile hook that keeps the frames Dynamo runs compiled code in, then times each frame's
cache lookup (its guard managers' check, in cache order, as Dynamo runs them) on that
frame's own locals: the Dynamo per-call cost of an iteration, measured in the untraced
process, outside its windows.

What torch does not count is said in `missing` (CUDA graph replays: no counter in
torch 2.11 or 2.13; a torch without one of the sources above)."""
from __future__ import annotations

import logging
import re
import statistics
import sys
import time

# a recompile limit's reason in counters["unimplemented"] / ["graph_break"] (torch 2.11, 2.13:
# "recompile_limit"; older: "cache_size_limit")
LIMIT_WORDS = ("recompile limit", "recompile_limit", "cache_size_limit", "cache size limit")
RESUME = re.compile(r"torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")
GUARD_REPS = 200      # timed checks per frame (a check is ~1-20 us), in BATCHES batches
BATCHES = 10
GRAPH_ITERS = 20    # iterations whose compiled graph calls are timed
TOP = 10              # reasons kept per list


def loaded() -> bool:
    """Whether Dynamo is imported in this process (a compiled variant built)."""
    return "torch._dynamo" in sys.modules


def _first_line(text: str) -> str:
    return str(text).strip().splitlines()[0][:200] if str(text).strip() else ""


def _codes() -> list:
    """The code objects Dynamo has compiled frames of (convert_frame.input_codes)."""
    try:
        from torch._dynamo import convert_frame
        return [c for c in (r() for r in convert_frame.input_codes.seen) if c is not None]
    except Exception:
        return []


def _cache_entries(code) -> list:
    try:
        from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list
        return list(_debug_get_cache_entry_list(code))
    except Exception:
        return []


def _counter_value(count) -> int | None:
    """The next value of an itertools.count, read from its repr (reading it would advance it)."""
    m = re.match(r"count\((-?\d+)", repr(count))
    return int(m.group(1)) if m else None


def cudagraph_trees() -> dict | None:
    """Recordings, warm-ups and re-recordings of every CUDA graph tree manager in this
    thread (None where no tree manager was made: no reduce-overhead compile on the GPU)."""
    try:
        from torch._inductor import cudagraph_trees as trees
        containers = getattr(trees.local, "tree_manager_containers", {}) or {}
    except Exception:
        return None
    out = {"recordings": 0, "warmups": 0, "rerecords": 0, "managers": 0}
    for container in containers.values():
        mgr = getattr(container, "tree_manager", None)
        if mgr is None:
            continue
        out["managers"] += 1
        out["recordings"] += _counter_value(mgr.graph_counter) or 0
        warm = _counter_value(mgr.warmup_node_counter)
        out["warmups"] += -(warm + 1) if warm is not None else 0
        out["rerecords"] += sum(sum(d.values()) for d in getattr(mgr, "num_rerecord", {}).values())
    return out if out["managers"] else None


def snapshot() -> dict | None:
    """Dynamo's and Inductor's state now (module doc); None where Dynamo is not loaded."""
    if not loaded():
        return None
    from torch._dynamo import utils
    counters = {group: {str(k): int(v) for k, v in c.items()} for group, c in utils.counters.items()}
    spent = getattr(utils, "cumulative_time_spent_ns", {}) or {}
    compile_s = spent.get("entire_frame_compile")
    if compile_s is None:
        compile_s = sum((getattr(utils, "compilation_time_metrics", {}) or {}).get("_compile.compile_inner", []))
    else:
        compile_s = compile_s / 1e9
    codes = _codes()
    failures = getattr(utils, "guard_failures", {}) or {}
    return {"counters": counters, "compile_s": float(compile_s),
            "cache_entries": {_where(c): len(_cache_entries(c)) for c in codes if _cache_entries(c)},
            "guard_failures": {_where(c): [_first_line(r) for r in failures[c]] for c in list(failures)
                               if hasattr(c, "co_name")},
            "cudagraph_trees": cudagraph_trees()}


def _where(code) -> str:
    return f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"


def _limit_hits(counters: dict) -> int:
    return sum(n for group in ("unimplemented", "graph_break") for k, n in counters.get(group, {}).items()
               if any(w in k.lower() for w in LIMIT_WORDS))


def summary(snap: dict | None) -> dict | None:
    """The named counts of one snapshot: frames, graphs, graph breaks (reasons, the user
    lines they resume at), recompiles (the guard that failed last per code), recompile
    limit hits (frames then run eager), CUDA graph skips and recordings, compile seconds."""
    if not snap:
        return None
    c = snap["counters"]
    breaks = {k: n for k, n in c.get("graph_break", {}).items() if not any(w in k.lower() for w in LIMIT_WORDS)}
    sites = []
    for name, n in sorted(c.get("resumes", {}).items()):
        m = RESUME.match(name)
        sites.append({"function": m.group("fn") if m else name, "line": int(m.group("line")) if m else None,
                      "count": n})
    files = {k.split(" (")[0]: k for k in snap["cache_entries"]}
    for s in sites:
        where = files.get(f"torch_dynamo_resume_in_{s['function']}_at_{s['line']}", "")
        s["file"] = where.rsplit("(", 1)[-1].rsplit(":", 1)[0] if where else None
    ind = c.get("inductor", {})
    return {"frames": c.get("frames", {}).get("total", 0), "frames_ok": c.get("frames", {}).get("ok", 0),
            "unique_graphs": c.get("stats", {}).get("unique_graphs", 0),
            "calls_captured": c.get("stats", {}).get("calls_captured", 0),
            "graph_breaks": sum(breaks.values()),
            "graph_break_reasons": [{"reason": _first_line(k), "count": n}
                                    for k, n in sorted(breaks.items(), key=lambda kv: -kv[1])[:TOP]],
            "graph_break_sites": sites[:TOP],
            "recompiles": sum(max(n - 1, 0) for n in snap["cache_entries"].values()),
            "recompile_guards": {code: reasons[-1] for code, reasons in snap["guard_failures"].items() if reasons},
            "recompile_limit_hits": _limit_hits(c),
            "cudagraph_skips": ind.get("cudagraph_skips", 0),
            "cudagraph_trees": snap["cudagraph_trees"],
            "compile_s": snap["compile_s"]}


def delta(before: dict | None, after: dict | None) -> dict | None:
    """What changed between two snapshots: frames compiled, recompiles, limit hits, graph
    breaks, CUDA graph skips, recordings and re-recordings, compile seconds."""
    if not after:
        return None
    a, b = summary(after), summary(before) or {}
    out = {k: a[k] - b.get(k, 0) for k in ("frames", "unique_graphs", "graph_breaks", "recompiles",
                                           "recompile_limit_hits", "cudagraph_skips", "compile_s")}
    ta, tb = a["cudagraph_trees"] or {}, b.get("cudagraph_trees") or {}
    for k in ("recordings", "rerecords", "warmups"):
        out[f"cudagraph_{k}"] = ta.get(k, 0) - tb.get(k, 0)
    return out


def guard_cost(run_iter, sync, reps: int = GUARD_REPS) -> dict | None:
    """Dynamo's per-call cost of one iteration (module doc): frames entered (compiled code
    run), and per frame its cache entries, the entry that ran and the microseconds of the
    cache lookup that found it (its guard managers' check on the frame's locals, the
    entries before it failing first); missed frames: a code with cache entries run as
    itself (no entry passed: eager after the recompile limit), the lookup of all its
    entries failing. None where Dynamo is not loaded or has compiled nothing."""
    if not loaded():
        return None
    entries = {}
    for code in _codes():
        cache = _cache_entries(code)
        if cache:    # the code itself run: no entry passed (a frame run eager after the recompile limit)
            entries[code] = (code, cache, None)
        for i, e in enumerate(cache):
            entries[e.code] = (code, cache, i)
    if not entries:
        return None
    seen = []

    graphs = {}     # each compiled frame's compiled graphs, by name in its globals

    def hook(frame, event, arg):
        if event == "call" and frame.f_code in entries:
            seen.append((frame.f_code, dict(frame.f_locals)))
            for name in frame.f_code.co_names:
                if name.startswith("__compiled_fn") and callable(frame.f_globals.get(name)):
                    graphs[(id(frame.f_globals), name)] = (frame.f_globals, name)
    sync()
    before = sys.getprofile()
    sys.setprofile(hook)
    try:
        run_iter()
    finally:
        sys.setprofile(before)
    sync()
    frames = []
    for code, local in seen:
        orig, cache, i = entries[code]
        managers = [getattr(e, "guard_manager", None) for e in (cache if i is None else cache[:i + 1])]
        if any(m is None or not hasattr(m, "check") for m in managers):
            return {"missing": "cache entries without a guard manager's check (torch before 2.4)"}
        batches = []
        for _ in range(BATCHES):       # the median batch: a check the shared host interrupted is not the cost
            t0 = time.perf_counter()
            for _ in range(reps // BATCHES):
                for m in managers:
                    m.check(local)
            batches.append((time.perf_counter() - t0) / (reps // BATCHES) * 1e6)
        frames.append({"code": _where(orig), "entry": i, "entries": len(cache),
                       "lookup_us": statistics.median(batches)})
    hit = [f for f in frames if f["entry"] is not None]
    calls, graph_us, iter_us = graph_host_time(run_iter, sync, list(graphs.values()))
    return {"frames_per_iter": len(hit), "lookup_us_per_iter": sum(f["lookup_us"] for f in hit),
            "missed_frames_per_iter": len(frames) - len(hit),
            "missed_lookup_us_per_iter": sum(f["lookup_us"] for f in frames if f["entry"] is None),
            "graph_calls_per_iter": calls, "graph_host_us_per_iter": graph_us,
            "iteration_host_us_per_iter": iter_us, "frames": frames[:TOP]}


def graph_host_time(run_iter, sync, graphs: list,
                    iters: int = GRAPH_ITERS) -> tuple[int, float | None, float | None]:
    """Calls of the compiled graphs per iteration, the host microseconds spent in them
    (the compiled graph's wrapper and its launches, or a CUDA graph's replay) and in the
    whole iteration (its call returned, before any sync: the graphs, Dynamo's frames and
    the code around them, a training loop's backward, loss and optimizer step included),
    each the median over `iters` iterations, each started on an idle GPU so no launch waits
    for a full queue: each graph (a global of its frame) wrapped in a timer for these
    iterations only."""
    if not graphs:
        return 0, None, None
    spent, calls = [0.0], [0]
    saved = [(g, name, g[name]) for g, name in graphs]

    def timed(fn):
        def call(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - t0
                calls[0] += 1
        return call
    try:    # a frame Dynamo must not compile: the compiled code calls it with Dynamo's hook set
        try:
            from torch._dynamo.eval_frame import skip_code       # torch 2.6 and later
        except ImportError:
            from torch._C._dynamo.eval_frame import skip_code    # before
        skip_code(timed(None).__code__)
    except Exception:
        return 0, None, None
    per_iter, whole = [], []
    try:
        for g, name, fn in saved:
            g[name] = timed(fn)
        for _ in range(iters):
            sync()
            spent[0] = 0.0
            t0 = time.perf_counter()
            run_iter()
            whole.append((time.perf_counter() - t0) * 1e6)
            per_iter.append(spent[0] * 1e6)
        sync()
    finally:
        for g, name, fn in saved:
            g[name] = fn
    return round(calls[0] / iters), statistics.median(per_iter), statistics.median(whole)


# Inductor's loggers of "skipping cudagraphs due to ..." (torch 2.11, 2.13)
CUDAGRAPH_LOGGERS = ("torch._inductor.cudagraph_utils.__cudagraphs", "torch._inductor.scheduler.__cudagraphs")


class SkipReasons(logging.Handler):
    """Keeps Inductor's CUDA graph skip messages (at most TOP distinct)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.reasons: list[str] = []

    def emit(self, record):
        msg = _first_line(record.getMessage())
        if "cudagraph" in msg and msg not in self.reasons and len(self.reasons) < TOP:
            self.reasons.append(msg)


class Watch:
    """Snapshots at named marks of a run and the record made of them (module doc); from
    its making to its record, Inductor's CUDA graph skip messages are kept."""

    def __init__(self):
        self.marks: dict[str, dict | None] = {}
        self.skips = SkipReasons()
        for name in CUDAGRAPH_LOGGERS:
            log = logging.getLogger(name)
            for h in [h for h in log.handlers if isinstance(h, SkipReasons)]:   # an earlier run's, never recorded
                log.removeHandler(h)
            log.addHandler(self.skips)

    def mark(self, name: str) -> None:
        try:
            self.marks[name] = snapshot()
        except Exception as e:   # a torch whose internals moved: said, never a failed run
            self.marks[name] = None
            self.error = f"{type(e).__name__}: {_first_line(e)}"

    def record(self, run_iter=None, sync=lambda: None, window_iters: int = 0) -> dict | None:
        """run.json's `dynamo`: the counts after the first calls (`compile`), what the
        warm-up and the windows each added, the windows' compile seconds per iteration,
        the guard cost of one more iteration, and what could not be read (a torch whose
        internals moved: said in `missing`, never a failed run)."""
        try:
            return self._record(run_iter, sync, window_iters)
        except Exception as e:
            return {"missing": [f"the dynamo record: {type(e).__name__}: {_first_line(e)}"]}

    def _record(self, run_iter, sync, window_iters: int) -> dict | None:
        for name in CUDAGRAPH_LOGGERS:
            logging.getLogger(name).removeHandler(self.skips)
        last = self.marks.get("timing")
        if not last:
            return {"missing": [self.error]} if getattr(self, "error", None) else None
        windows = delta(self.marks.get("warmup"), last)
        out = {"compile": summary(self.marks.get("check")), "total": summary(last),
               "warmup": delta(self.marks.get("check"), self.marks.get("warmup")), "windows": windows,
               "window_iters": window_iters, "cudagraph_skip_reasons": self.skips.reasons,
               "windows_compile_us_per_iter": windows["compile_s"] * 1e6 / window_iters if window_iters else None}
        missing = ["cudagraph replays (no torch counter)"]
        try:
            out["guards"] = guard_cost(run_iter, sync) if run_iter else None
        except Exception as e:
            out["guards"] = None
            missing.append(f"guard cost: {type(e).__name__}: {_first_line(e)}")
        if out["guards"] and "missing" in out["guards"]:
            missing.append(out["guards"].pop("missing"))
            out["guards"] = None
        out["missing"] = missing
        return out
