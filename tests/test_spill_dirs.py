"""Spill directories (large frames between processes) do not outlive a killed evaluator."""

from __future__ import annotations

import os
import subprocess
import sys

from kernelbench.reward_hardening.ipc import framing


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_spill_dir_names_its_maker():
    path = framing.make_spill_dir()
    try:
        name = os.path.basename(path)
        assert name.startswith(f"kernelguard_spill_{framing._pid_namespace()}_{os.getpid()}_")
    finally:
        os.rmdir(path)


def test_orphaned_spill_dirs_are_removed_and_live_ones_kept(tmp_path):
    ns = framing._pid_namespace()
    dead = tmp_path / f"kernelguard_spill_{ns}_{_dead_pid()}_abc"
    alive = tmp_path / f"kernelguard_spill_{ns}_{os.getppid()}_abc"
    mine = tmp_path / f"kernelguard_spill_{ns}_{os.getpid()}_abc"
    other_ns = tmp_path / f"kernelguard_spill_1{ns}_{_dead_pid()}_abc"
    legacy = tmp_path / "kernelguard_spill_x1y2z3"
    unrelated = tmp_path / f"other_{ns}_{_dead_pid()}"
    for d in (dead, alive, mine, other_ns, legacy, unrelated):
        d.mkdir()
    (dead / "frame-1-00.bin").write_bytes(b"x" * 10)
    assert framing._remove_orphaned_spill_dirs(str(tmp_path)) == 1
    assert not dead.exists()
    assert all(d.exists() for d in (alive, mine, other_ns, legacy, unrelated))
