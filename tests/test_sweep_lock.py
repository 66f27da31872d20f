"""One sweep per results folder (plan/sweep_lock.py, taken in the Snakefile's
onstart in place of Snakemake's own lock): a live holder stops a second sweep, a killed
one leaves nothing stale behind."""
import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from fusionlab.plan import sweep_lock

HOLD = "import sys, time; from fusionlab.plan import sweep_lock; sweep_lock.acquire(sys.argv[1]); " \
       "print('held', flush=True); time.sleep(600)"


@pytest.fixture
def holder(tmp_path):
    procs = []

    def start(res):
        p = subprocess.Popen([sys.executable, "-c", HOLD, str(res)], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "held"
        procs.append(p)
        return p
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_live_sweep_stops_a_second_one(tmp_path, holder):
    res = tmp_path / "results"
    p = holder(res)
    with pytest.raises(sweep_lock.Busy, match=f"another sweep is running on {res} \\(pid {p.pid} on "):
        sweep_lock.acquire(str(res))
    assert sweep_lock.holder(str(res))["pid"] == p.pid
    # another results folder is free
    assert sweep_lock.acquire(str(tmp_path / "other")).endswith(".sweep.lock")
    sweep_lock.release(str(tmp_path / "other"))


def test_a_killed_sweep_leaves_no_stale_lock(tmp_path, holder):
    res = tmp_path / "results"
    p = holder(res)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert sweep_lock.holder(str(res)) is None       # its record is still there, its flock is not
    path = sweep_lock.acquire(str(res))
    assert sweep_lock.acquire(str(res)) == path      # taking it again in the same process: a no-op
    rec = sweep_lock.holder(str(res))
    assert rec is None or rec["pid"] == os.getpid()  # (our own flock does not block our own check)
    sweep_lock.release(str(res))
    assert open(path).read() == "" and sweep_lock.holder(str(res)) is None


def test_without_flock_the_record_is_the_lock(tmp_path, monkeypatch):
    """A file system without flock: a dead pid on this host is stale, a live one holds."""
    import fcntl
    import json
    import socket

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(fcntl, "flock", no_flock)
    res = tmp_path / "results"
    res.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    rec = {"pid": dead.pid, "host": socket.gethostname(), "start_unix": time.time(), "argv": "snakemake all"}
    (res / ".sweep.lock").write_text(json.dumps(rec))
    sweep_lock.acquire(str(res))                     # stale: taken over
    assert json.loads((res / ".sweep.lock").read_text())["pid"] == os.getpid()
    sweep_lock.release(str(res))
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        (res / ".sweep.lock").write_text(json.dumps({**rec, "pid": live.pid}))
        with pytest.raises(sweep_lock.Busy, match=f"pid {live.pid} "):
            sweep_lock.acquire(str(res))
    finally:
        live.kill()
        live.wait()
