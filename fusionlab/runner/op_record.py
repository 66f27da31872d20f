"""The op record of an eager run: one more iteration after the measured range, inside the
profiler's capture and outside every range the metrics read, in which every aten op is
recorded with the nn.Module it ran in and the source line of the user's code that called
it, inside an NVTX range (and a torch.profiler record_function) of its own, so that the
analysis (analysis.run.attribution) joins the kernels each op launched to the op.

- The iteration runs in range core.ranges.ATTRIBUTE (domain fusionlab); each op in a range
  named by its aten op (`aten::addmm`) in domain core.ranges.OP_DOMAIN: the op ranges'
  instances in start order are the record's ops in order (ops do not nest: a
  TorchDispatchMode is off while it handles an op; the forward thread waits while autograd's
  thread runs the backward).
- op_record.json beside run.json: {"root": the model's class, "ops": [{op, phase (forward /
  backward), module (dotted path below the model: encoder.layer.3.attention.self; "" for the
  model itself; null outside the model: the loss, the optimizer), source (file:line of the innermost frame outside torch and the runner),
  seq (autograd's sequence number: a forward op's node, the backward node being run),
  node (the backward's autograd node: AddmmBackward0)}]}.
- The module path is torch.utils.module_tracker.ModuleTracker's (module forward hooks, and
  in the backward multi-grad hooks on each module's inputs and outputs); a backward op
  takes the module and source line of the forward op of its sequence number, else the
  tracker's module, else none (`source` "" where no user frame is on the stack: every
  backward op whose forward op is not found).
Only an eager variant is recorded (applies()): a hook or a dispatch mode would change what
torch.compile traces, and a CUDA graph's replay has no ops. The untraced timing and the
measured range run as before; nothing here runs outside the traced process."""
from __future__ import annotations

import os
import sys

from fusionlab.core import ranges
from fusionlab.core.io import write_json_atomic

FILE = "op_record.json"
# frames in these folders are not the user's source line
_SKIP = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)
AUTOCAST_ROOT, AUTOCAST_CHILD = "AutocastModule", "inner"   # runner.experiment.Autocast's wrapper


def applies(spec, device: str) -> bool:
    """The run records its ops: an eager variant under a profiler (module doc)."""
    return spec.variant == "eager" and spec.profiler in ("nsys", "torch") and os.environ.get(
        "FUSIONLAB_OP_RECORD") != "0"


def path(spec) -> str:
    """op_record.json beside the run's run.json."""
    return os.path.join(os.path.dirname(os.path.abspath(spec.out)), FILE)


def module_path(fqn: str) -> tuple[str, str]:
    """(root class, path below it) of a ModuleTracker name: 'BertModel.encoder.layer.0' ->
    ('BertModel', 'encoder.layer.0'); the runner's autocast wrapper's `inner` is dropped."""
    root, _, rest = fqn.partition(".")
    if root == AUTOCAST_ROOT and (rest == AUTOCAST_CHILD or rest.startswith(AUTOCAST_CHILD + ".")):
        rest = rest[len(AUTOCAST_CHILD) + 1:]
    return root, rest


def user_line(skip: tuple[str, ...]) -> str:
    """file:line of the innermost Python frame outside the folders `skip`; "" if none."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(skip) and not name.startswith("<"):
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return ""


class OpRecorder:
    """While open, every aten op (TorchDispatchMode) is recorded (module doc) and runs in an
    NVTX range of domain OP_DOMAIN named by its op (and a record_function of the same name
    where `record_function`)."""

    def __init__(self, torch, record_function: bool):
        import nvtx
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.module_tracker import ModuleTracker
        self.ops: list[dict] = []
        self.roots: set[str] = set()
        self.tracker = ModuleTracker()
        skip = (os.path.dirname(torch.__file__) + os.sep, *_SKIP, os.path.dirname(nvtx.__file__) + os.sep)
        outer = self
        autograd = torch._C._autograd
        current_node = torch._C._current_autograd_node
        push, pop, domain = nvtx.push_range, nvtx.pop_range, ranges.OP_DOMAIN

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = "aten::" + func.__name__.split(".")[0]
                node = current_node()
                rec = {"op": name, "phase": "backward" if node is not None else "forward",
                       "module": outer.module(), "source": "" if node is not None else user_line(skip),
                       "seq": (node._sequence_nr() if node is not None else autograd._get_sequence_nr() - 1),
                       "node": node.name() if node is not None else None}
                outer.ops.append(rec)
                push(name, domain=domain)
                try:
                    if record_function:
                        with torch.profiler.record_function(ranges.op_label(name)):
                            return func(*args, **(kwargs or {}))
                    return func(*args, **(kwargs or {}))
                finally:
                    pop(domain=domain)

        self.mode = Mode()

    def module(self) -> str | None:
        """The innermost module the tracker has open (its full name; None for none)."""
        names = [n for n in self.tracker.parents if n != "Global"]
        return max(names, key=lambda n: n.count("."), default=None)

    def __enter__(self):
        self.tracker.__enter__()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        self.tracker.__exit__(*exc)
        return False

    def record(self) -> dict:
        """The op record (module doc): module paths below the model; a backward op's module
        and source from the forward op of its sequence number."""
        root = ""
        forward: dict[int, dict] = {}
        for r in self.ops:
            if r["module"] is not None:
                root, r["module"] = module_path(r["module"])
            if r["phase"] == "forward" and r["seq"] is not None:
                forward.setdefault(r["seq"], r)
        for r in self.ops:
            f = forward.get(r["seq"]) if r["phase"] == "backward" else None
            if f is not None:
                r["module"], r["source"] = f["module"], f["source"]
        return {"root": root, "ops": self.ops}


def attribution_iteration(torch, spec, rng, run_iter, sync) -> int:
    """One iteration of run_iter (timing.iteration's, in the mode's grad mode) in range
    ATTRIBUTE (rng: runner.experiment.Ranges) with every op recorded; op_record.json
    written. Returns the number of ops recorded."""
    from fusionlab.runner import timing
    with rng(ranges.ATTRIBUTE), timing.grad_mode(torch, spec.mode):
        with OpRecorder(torch, spec.profiler == "torch") as rec:
            run_iter()
        sync()
    write_json_atomic(path(spec), rec.record())
    return len(rec.ops)
