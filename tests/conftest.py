import gzip
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, ROOT)


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
