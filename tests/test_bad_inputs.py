"""Bad paths and regeneration: one line and exit status 2 for any path `fusionlab analyse`
or `diff` cannot read; regenerate lists the runs in the sweep's own order; the Snakefile's
localrules name only rules it defines in that mode."""
import os
import re

import yaml
from conftest import ROOT

from fusionlab.cli import main
from fusionlab.plan import sweep


def one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_analyse_a_directory_named_like_an_export(tmp_path, capsys):
    d = tmp_path / "dir.sqlite"
    d.mkdir()
    assert main(["analyse", str(d)]) == 2
    assert one_error(capsys) == f"error: {d}: a directory, not an nsys SQLite export"


def test_diff_of_missing_paths_says_no_such_file(capsys):
    assert main(["analyse", "/nonexistent/a"]) == 2
    analysed = one_error(capsys)
    assert main(["diff", "/nonexistent/a", "/nonexistent/b"]) == 2
    assert one_error(capsys) == analysed == "error: /nonexistent/a: no such file"


def test_existing_runs_in_config_order(tmp_path):
    """regenerate's runs come in runs()' order (the sweep's; sorted by their keys,
    matmul_heavy would come before the configured first model, pointwise_heavy)."""
    with open(os.path.join(ROOT, "config", "smoke.yaml")) as f:
        cfg = sweep.validate({**yaml.safe_load(f), "results": str(tmp_path)})
    planned = sweep.runs(cfg, "torch")
    for r in planned:
        d = sweep.run_dir(str(tmp_path), **r)
        os.makedirs(d)
        for name in ("run.json", "trace.json"):
            open(os.path.join(d, name), "w").write("{}")
    found = sweep.existing_runs(cfg)
    assert [{k: r[k] for k in planned[0]} for r in found] == planned


def test_localrules_name_rules_of_their_mode():
    """The localrules at the top of the Snakefile are rules defined in both modes (the files
    included always); those under `if not REGENERATE:` are rules of the files included there."""
    text = open(os.path.join(ROOT, "Snakefile")).read()
    top, _, cond = text.partition("\nif not REGENERATE:\n")
    cond = cond.split("\n\n\n")[0]

    def rules_of(block):
        files = re.findall(r'include: "([^"]+)"', block)
        src = block + "".join(open(os.path.join(ROOT, f)).read() for f in files)
        return set(re.findall(r"^\s*rule (\w+):", src, re.M))

    def localrules(block):
        return {n for m in re.findall(r"localrules:\n((?:\s+\w+,?\n)+)", block) for n in re.findall(r"\w+", m)}

    after = text.split("\nif not REGENERATE:\n")[1].split("\n\n\n", 1)[1]
    always = rules_of(top + after)
    assert localrules(top) and localrules(top) <= always
    assert localrules(cond) and localrules(cond) <= rules_of(cond)
