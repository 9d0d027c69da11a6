"""The wire protocol between the trusted parent and its two workers.

Three processes take part in a hardened evaluation:

* the **parent** (:mod:`kernelbench.reward_hardening.parent.pipeline`), trusted: it draws the
  hidden seeds, orchestrates, computes timing statistics and the verdict;
* the **judge** (:mod:`kernelbench.reward_hardening.judge.worker`), trusted: it runs only the
  problem's reference program, generates hidden inputs on the device, keeps the
  reference outputs there and compares the candidate's outputs with them;
* the **candidate worker** (:mod:`kernelbench.reward_hardening.candidate.worker`), untrusted: it
  imports the candidate and runs ``forward`` on inputs it is lent.

Messages are length-prefixed JSON frames (:mod:`.framing`), never pickles.
Shared tensors travel as JSON descriptions (:mod:`kernelbench.reward_hardening.ipc.lending`)
plus, on the CPU, file descriptors sent after the frame with ``SCM_RIGHTS``; a frame
announces how many follow in ``_fds``.  Descriptors only ever flow judge -> parent ->
candidate: the parent refuses any from the candidate.

Every reply from the candidate is shape-checked here before a detector reads it: junk
in it must end as a candidate failure, never as an evaluator crash.
"""

from __future__ import annotations

import socket
from multiprocessing import reduction
from typing import Any

from kernelbench.reward_hardening.ipc.framing import FrameError, recv_frame, send_frame

__all__ = ["CANDIDATE_COMMANDS", "JUDGE_COMMANDS", "MAX_FDS", "checked_call_reply", "checked_profile",
           "malformed_timing", "recv_message", "send_message"]

MAX_FDS = 64

# Commands each worker serves.  The candidate's table has no reference-only command:
# it never generates inputs, never sees a reference output and never judges.
JUDGE_COMMANDS = (
    "load",          # import the reference, build Model with the public init seed; sizes (meta device)
    "configure",     # apply the parent's memory plan (allocator cap, lean mode)
    "probe",         # hidden input set from a seed (+ perturbation): inputs, reference outputs, staging buffers
    "judge",         # compare the staged candidate outputs with the probe's reference outputs
    "variants",      # after the probes: reduced-precision reference errors on the first input (RH-38)
    "timed_input",   # a fresh hidden input set for one timed call of the candidate (no outputs)
    "lend",          # export the current staging buffers to be lent to the candidate (CUDA: on demand)
    "device_read",   # CUDA: fill staging from the frozen candidate's outputs through driver IPC handles
    "check_inputs",  # after a timed call: input fingerprints, and (spot check) staged outputs vs reference
    "check_spots",   # after the timing loop: the held spot-checked outputs vs reference
    "ref_prepare",   # a fresh input set for one timed call of the reference itself
    "ref_time",      # time the reference on it (same protocol as the candidate)
    "release",       # drop the current evaluation's shared tensors
    "snapshot",      # state, memory
)
CANDIDATE_COMMANDS = (
    "load",       # import the candidate, build ModelNew from the init inputs it is lent
    "call",       # one correctness call: outputs copied into the judge's staging buffers twice
    "settle",     # after a call whose outputs the parent read: sync, pause, re-check the outputs' facts
    "time",       # one timed call on freshly lent inputs (mapped before the clock starts)
    "copy_last",  # copy the last timed call's outputs into staging buffers (spot check)
    "export_probe",  # CUDA: a known int32 tensor and its allocation's IPC handle (the judge's read self-test)
    "profile",    # one forward under the profiler
    "snapshot",   # state, APIs, threads
    "let_go",     # drop every lent tensor and stay (sent to the reference's twin only, between samples)
)


# --------------------------------------------------------------------------- framing with descriptors
def _sock(conn: Any) -> socket.socket:
    return socket.socket(fileno=conn.fileno(), family=socket.AF_UNIX, type=socket.SOCK_STREAM)


def send_message(conn: Any, header: dict, fds: list[int] | None = None, spill_dir: str | None = None) -> None:
    """Send a frame, then its descriptors (if any) in one ``SCM_RIGHTS`` message."""
    fds = list(fds or [])
    if len(fds) > MAX_FDS:
        raise ValueError(f"at most {MAX_FDS} descriptors per message")
    header = dict(header)
    if fds:
        header["_fds"] = len(fds)
    send_frame(conn, header, None, spill_dir)
    if fds:
        s = _sock(conn)
        try:
            reduction.sendfds(s, fds)
        finally:
            s.detach()


def recv_message(conn: Any, maxlength: int | None = None, spill_dir: str | None = None,
                 allow_fds: bool = True) -> tuple[dict, list[int]]:
    """Receive a frame and the descriptors it announces."""
    header, _ = recv_frame(conn, maxlength, spill_dir)
    n = header.pop("_fds", 0)
    if not n:
        return header, []
    if not allow_fds or not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= MAX_FDS:
        raise FrameError("unexpected file descriptors in a frame")
    s = _sock(conn)
    try:
        fds = reduction.recvfds(s, n)
    except (RuntimeError, OSError, EOFError) as exc:
        raise FrameError(f"descriptors missing: {exc}") from None
    finally:
        s.detach()
    return header, list(fds)


# --------------------------------------------------------------------------- reply shapes (candidate)
def _num(x: Any, none_ok: bool = False) -> bool:
    """A JSON number (``bool`` excluded), or ``None`` where that is allowed."""
    return (x is None and none_ok) or (isinstance(x, (int, float)) and not isinstance(x, bool))


def _int(x: Any, none_ok: bool = False) -> bool:
    """A JSON integer (``bool`` excluded), or ``None`` where that is allowed."""
    return (x is None and none_ok) or (isinstance(x, int) and not isinstance(x, bool))


def malformed_timing(reply: dict) -> str | None:
    """Why a timing reply does not have the shape the harness sends, or ``None``.

    The reply comes from the candidate's process: junk in it must end as a
    candidate-side timing error (no trusted time), not as an evaluator crash.  Values
    of the right type are judged by the timing detectors (RH-26 checks the order).
    """
    if not all(_int(reply.get(k)) for k in ("t0", "t_ret", "t1")):
        return "t0/t_ret/t1 must be integer nanosecond clock readings"
    if not all(_num(reply.get(k), True) for k in ("event_ms", "window_ms")):
        return "event_ms/window_ms must be numbers"
    if not _int(reply.get("t_evt"), True):
        return "t_evt must be an integer clock reading"
    if not _int(reply.get("threads_delta", 0)):
        return "threads_delta must be an integer"
    l2 = reply.get("l2")
    if l2 is not None and not (isinstance(l2, dict) and all(_num(v, True) for v in l2.values())):
        return "l2 must be a mapping of numbers"
    return None


def checked_call_reply(reply: dict) -> dict:
    """The fields of a correctness-call reply the detectors read, with safe types."""
    out: dict[str, Any] = {}
    ev = reply.get("evidence")
    out["evidence"] = ev if isinstance(ev, dict) else {}
    tensors = out["evidence"].get("tensors")
    if not isinstance(tensors, list) or not all(isinstance(t, dict) for t in tensors):
        out["evidence"] = {"tensors": [], "malformed": True}
    for key in ("concurrency", "apis", "state"):
        v = reply.get(key)
        out[key] = v if isinstance(v, dict) else {}
    l2 = reply.get("l2")
    out["l2"] = l2 if isinstance(l2, dict) else None
    out["call_ms"] = float(reply["call_ms"]) if _num(reply.get("call_ms")) else 0.0
    return out


def checked_profile(reply: dict) -> tuple[dict | None, str | None]:
    """The profiler reply, if every field has the shape the harness sends; else an error.

    The reply comes from the candidate's process, which can replace the harness; a
    malformed reply leaves the profiler capability unsupported instead of crashing a
    detector or the record.
    """
    ops, kernels = reply.get("ops"), reply.get("kernels")
    ok = (_num(reply.get("wall_ms")) and isinstance(ops, list) and isinstance(kernels, list)
          and all(isinstance(o, dict) and isinstance(o.get("name"), str) and _num(o.get("self_cpu_us"))
                  and _num(o.get("device_us"), True) for o in ops)
          and all(isinstance(k, dict) and isinstance(k.get("name"), str) and _num(k.get("device_us"))
                  and _num(k.get("start_us"), True) and _num(k.get("stream"), True) for k in kernels)
          and _num(reply.get("cpu_ms"), True)
          and _num(reply.get("current_stream"), True) and _num(reply.get("marker_end_us"), True)
          and isinstance(reply.get("marker_seen", False), bool)
          and isinstance(reply.get("profile_errors") or [], list))
    if not ok:
        return None, "malformed profiler reply"
    return {k: reply.get(k) for k in ("wall_ms", "cpu_ms", "ops", "kernels", "marker_seen", "current_stream",
                                      "marker_end_us", "profile_errors")}, None
