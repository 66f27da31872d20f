"""The commands' argument parser: an error is one line naming the command (no usage block),
exit status 2; --help prints the whole usage as argparse does."""
from __future__ import annotations

import argparse

from fusionlab.core.io import printable


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage block) and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {printable(' '.join(message.split()))}\n")
