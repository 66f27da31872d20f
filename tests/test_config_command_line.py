"""Config values given on Snakemake's command line (--config KEY=VALUE) are read as they
would be in a config file: Snakemake makes `gpus=2` an int and reads a mapping or a list
with YAML's base loader (every scalar a string), so validation types each value the
command line gives where the schema refuses it as given (config_schema.typed)."""
import pytest
from snakemake.cli import parse_config   # Snakemake's own parser of --config

from fusionlab.plan import sweep

FILE = {"models": ["deep_gelu_mlp"], "variants": ["eager"], "batch_sizes": [8]}


def validate(*entries, file=FILE):
    """The config Snakemake would hand the Snakefile (the file's, the command line's merged
    in as snakemake.utils.update_config merges them), validated."""
    given = parse_config(list(entries))
    merged = {k: ({**file[k], **v} if isinstance(file.get(k), dict) and isinstance(v, dict) else v)
              for k, v in given.items()}
    return sweep.validate({**file, **merged}, command_line=given)


def test_an_integer_gpu_index():
    assert parse_config(["gpus=2"]) == {"gpus": 2}
    assert validate("gpus=2")["gpus"] == "2" and validate("gpus=0,1")["gpus"] == "0,1"


def test_a_mapping_with_a_boolean():
    assert parse_config(["ncu={enabled: false}"]) == {"ncu": {"enabled": "false"}}
    cfg = validate("ncu={enabled: false}")
    assert cfg["ncu"]["enabled"] is False and cfg["ncu"]["passes"] == ["steady"]
    assert validate("ncu={enabled: auto}")["ncu"]["enabled"] == "auto"


def test_a_mapping_merged_into_the_files_keeps_the_files_other_values():
    cfg = validate("ncu={enabled: true}", file={**FILE, "ncu": {"passes": ["cold"], "iters": 2}})
    assert cfg["ncu"]["enabled"] is True and cfg["ncu"]["passes"] == ["cold"] and cfg["ncu"]["iters"] == 2


def test_sizes_and_lists():
    cfg = validate("sizes={deep_gelu_mlp: {num_layers: [2, 4]}}", "batch_sizes=[1, 8]", "mode=[inference, train]",
                   "repeats=2", "timeout_s=1.5")
    assert cfg["sizes"] == {"deep_gelu_mlp": {"num_layers": [2, 4]}} and cfg["batch_sizes"] == [1, 8]
    assert cfg["mode"] == ["inference", "train"] and cfg["repeats"] == 2 and cfg["timeout_s"] == 1.5


def test_a_bad_value_is_refused_as_in_a_file():
    with pytest.raises(sweep.ConfigError, match=r"^config key batch_sizes\[1\]: 'x' is not of type integer$"):
        validate("batch_sizes=[1, x]")
    with pytest.raises(sweep.ConfigError, match=r"^config key ncu.enabled: 'maybe' is not allowed"):
        validate("ncu={enabled: maybe}")
    assert validate("ncu={enabled: off}")["ncu"]["enabled"] is False   # YAML's, as in a file
    with pytest.raises(sweep.ConfigError, match=r"^config key gpus: '2x'"):
        validate("gpus=2x")


def test_a_files_values_are_not_retyped():
    """A quoted number in a file is a string, refused; only the command line's values are typed."""
    with pytest.raises(sweep.ConfigError, match=r"batch_sizes\[0\]: '8' is not of type integer"):
        sweep.validate({**FILE, "batch_sizes": ["8"]}, command_line={"repeats": 1})
