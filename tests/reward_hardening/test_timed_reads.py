"""Which timed calls' outputs the trusted read copies.

Every call whose check could be held for after the loop is read (a held spot must look
like any other call); above ``spot_hold_bytes`` a check is always made at once and shows
anyway, so only the checked calls are read there.
"""

import pytest

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.timed import TimedCalls

GiB = 1 << 30


def _calls(read_path: str = "trusted"):
    calls = TimedCalls.__new__(TimedCalls)
    calls.cfg = HardeningConfig(spot_hold_bytes=GiB)
    calls.ev = type("Ev", (), {"read_path": read_path})()
    calls.reads = []

    def trusted_read(phase, facts, staging, fds):
        calls.reads.append(phase)
        return True, None, None

    calls._trusted_read = trusted_read
    return calls


@pytest.mark.parametrize("nbytes,check,read", [
    (GiB, False, True),  # a check of this size may be held: every call is read
    (GiB, True, True),
    (GiB + 1, True, True),  # checked and compared at once: read
    (GiB + 1, False, False),  # unchecked, and a check would have shown anyway: not read
])
def test_the_trusted_read_skips_only_unchecked_calls_whose_check_is_never_held(nbytes, check, read):
    calls = _calls()
    staging = [{"id": 1, "nbytes": nbytes // 2}, {"id": 2, "nbytes": nbytes - nbytes // 2}]
    copied, layouts, fds = calls._read_output("timing:3", {"outputs": []}, {"staging": staging}, [], check)
    assert calls.reads == (["timing:3"] if read else [])
    assert copied == ({"written": True, "why": None} if read else None)
    assert fds == []
