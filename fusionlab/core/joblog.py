"""A workflow job's log: its stderr, and the traceback of anything it raises."""
from __future__ import annotations

import contextlib
import traceback


@contextlib.contextmanager
def job_log(path: str):
    """Open the job's log at path and send stderr into it for the block; an exception
    raised in the block has its traceback written there before it propagates, so every
    failure is in the job's own log."""
    with open(path, "w") as log, contextlib.redirect_stderr(log):
        try:
            yield log
        except BaseException:
            traceback.print_exc(file=log)
            log.flush()
            raise
