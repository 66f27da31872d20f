"""The `fusionlab` command: what users do outside the workflow.

    fusionlab run --model mlp --variant compile --batch 128 --out run.json   # one experiment
    fusionlab analyse report.sqlite [more ...]     # per-range metrics of any profile
    fusionlab diff RUN_A RUN_B                     # kernels added / deleted / changed
    fusionlab compare RESULTS_A RESULTS_B --out compare/   # two sweeps
    fusionlab list [--device cuda]                 # models, variants and what each supports
    fusionlab progress RESULTS                     # how far a running sweep is, time left
    fusionlab audit RESULTS                        # every number and verdict against its record
    fusionlab restore RESULTS ARCHIVE...           # packed run records, ready for a sweep to go on

The sweep itself is `snakemake all` (see README). Each subcommand imports only its own
layer: `analyse`, `diff` and `compare` never load torch.
"""
from __future__ import annotations

import sys

USAGE = __doc__.split("\n\n")[1]
COMMANDS = {   # each subcommand and its one line; `fusionlab SUB --help` says more
    "run": "one experiment: build, check against eager, warm up, measure",
    "analyse": "per-range metrics of any nsys report or torch.profiler trace",
    "diff": "kernel-by-kernel diff of two runs",
    "compare": "compare two sweeps",
    "list": "models, variants and what each supports",
    "progress": "how far a sweep is, and about how long is left",
    "audit": "every number and verdict of a results folder against its record",
    "restore": "packed run records unpacked into a results folder",
}


def list_registry(argv) -> int:
    """Print every model (seed or import path, default batch, modes, size axes) and
    variant, with the models each variant supports on the device; with --configfile, the
    models that config names by import path too (each imported and checked; one that cannot
    join is left out of the list and named as the command's error, exit status 2)."""
    from fusionlab.core.args import OneLineParser
    from fusionlab.experiments import catalog
    from fusionlab.plan import config_checks, sweep
    p = OneLineParser(prog="fusionlab list", description=COMMANDS["list"])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--mode", default="inference", choices=("inference", "train"))
    p.add_argument("--configfile", help="a sweep config: its import_models join the list")
    a = p.parse_args(argv)
    failed = []
    if a.configfile:
        cfg = config_checks.load_file(a.configfile)
        try:
            entries = sweep.import_entries(cfg.get("import_models") or {})
        except sweep.ConfigError as e:
            raise sweep.ConfigError(f"{a.configfile}: {e}") from None
        try:
            catalog.extend(entries)
        except catalog.CatalogError:
            for name, entry in sorted(entries.items()):   # one at a time: the others still join the list
                try:
                    catalog.extend({name: entry})
                except catalog.CatalogError as e:
                    failed.append(str(e))
    cat = catalog.load()
    print("models:")
    for name, m in sorted(cat["models"].items()):
        where = f"from {m['origin']}" if m.get("origin") else f"seed {m['seed']}"
        axes = ", ".join(f"{k} {v['min']}..{v['max']} (default {v['default']})" for k, v in m["sizes"].items())
        print(f"  {name:<18} batch {m['default_batch']:<6} {'/'.join(m['modes']):<16} {where}: {m['description']}"
              + (f"\n      sizes: {axes}" if axes else ""))
    print(f"\nvariants (models supported on {a.device}, {a.mode}):")
    for name, v in sorted(cat["variants"].items()):
        ok = [m for m in sorted(cat["models"]) if catalog.unsupported_reason(m, name, a.device, a.mode) is None]
        which = "all" if len(ok) == len(cat["models"]) else (", ".join(ok) or "none")
        print(f"  {name:<36} {which}\n      {v['description']}")
    if failed:   # listed above without them; the first reason as the command's one-line error
        more = f" (and {len(failed) - 1} more model(s) that cannot join)" if len(failed) > 1 else ""
        raise sweep.ConfigError(f"{a.configfile}: {failed[0]}{more}")
    return 0


def audit_results(argv) -> int:
    """`fusionlab audit RESULTS`: each violation and the tally; exit 1 on any, 2 when
    RESULTS is not a folder."""
    from fusionlab.analysis.report.audit import main as audit_main
    from fusionlab.core.args import OneLineParser
    p = OneLineParser(prog="fusionlab audit", description=COMMANDS["audit"])
    p.add_argument("results", help="a results folder (the sweep's, or one restored or copied)")
    return audit_main([p.parse_args(argv).results])


def main(argv=None) -> int:
    """Run one subcommand. Any error it raises is one line on stderr and exit status 2,
    its control characters shown as escapes (core.io.printable; FUSIONLAB_DEBUG=1 shows the
    traceback as well)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return command(argv)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:
        import os
        if os.environ.get("FUSIONLAB_DEBUG"):
            import traceback
            traceback.print_exc()
        from fusionlab.core.io import printable
        what = printable(argv[0]) if argv else "fusionlab"
        text = printable(" ".join(str(e).split()) or type(e).__name__)
        print(f"fusionlab {what}: {type(e).__name__}: {text[:500]}", file=sys.stderr)
        return 2


def command(argv) -> int:
    """Dispatch argv to its subcommand."""
    if not argv or argv[0] in ("-h", "--help", "help"):
        lines = "\n".join(f"  {name:<10} {what}" for name, what in COMMANDS.items())
        print("usage: fusionlab {" + ",".join(COMMANDS) + "} ...\n\n" + lines + "\n\n" + USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    prog = f"fusionlab {cmd}"
    if cmd == "run":
        from fusionlab.runner.cli import main as run_main
        return run_main(rest, prog)
    if cmd in ("analyse", "analyze"):
        from fusionlab.analysis.__main__ import main as analysis_main
        return analysis_main(rest, prog)
    if cmd in ("diff", "compare"):
        from fusionlab.analysis.__main__ import main as analysis_main
        return analysis_main([cmd] + rest, prog)
    if cmd == "list":
        return list_registry(rest)
    if cmd == "audit":
        return audit_results(rest)
    if cmd == "progress":
        from fusionlab.plan.progress import main as progress_main
        return progress_main(rest)
    if cmd == "restore":
        from fusionlab.plan.restore import main as restore_main
        return restore_main(rest)
    from fusionlab.core.io import printable
    print(f"fusionlab: unknown command {printable(repr(cmd))}; one of {', '.join(COMMANDS)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
