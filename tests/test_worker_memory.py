"""The parent's host-memory watch on a worker (``WorkerHandle._wait``)."""

import time

import pytest

from kernelbench.procs import WorkerHandle, WorkerMemoryExceeded, WorkerTimeout, private_rss_bytes, scrubbed_env

HOARD = 256 << 20

SCRIPT = f"""
import time
hoard = bytearray(b"x") * {HOARD}   # every page written
time.sleep(120)
"""


def _start(tmp_path) -> WorkerHandle:
    script = tmp_path / "hoard.py"
    script.write_text(SCRIPT)
    spec = {"call": "runpy:run_path", "kwargs": {"path_name": str(script)}, "workspace": str(tmp_path),
            "env": scrubbed_env(workspace=str(tmp_path))}
    handle = WorkerHandle("kernelbench.procs:_oneshot_entry", spec).start()
    deadline = time.monotonic() + 60
    while (private_rss_bytes(handle.pid) or 0) < HOARD and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (private_rss_bytes(handle.pid) or 0) >= HOARD
    return handle


def test_a_worker_over_its_limit_at_the_deadline_is_a_memory_kill_not_a_timeout(tmp_path):
    """A slow hoarder can reach its limit just as the request times out: the memory verdict wins."""
    handle = _start(tmp_path)
    handle.max_rss_bytes = 64 << 20
    try:
        with pytest.raises(WorkerMemoryExceeded):
            handle.receive(0.0)
        assert not handle.process.is_alive()
        assert handle.peak_rss_bytes >= HOARD
    finally:
        handle.kill()


def test_a_worker_under_its_limit_times_out(tmp_path):
    handle = _start(tmp_path)
    handle.max_rss_bytes = 4 << 30
    try:
        with pytest.raises(WorkerTimeout):
            handle.receive(0.2)
    finally:
        handle.kill()
