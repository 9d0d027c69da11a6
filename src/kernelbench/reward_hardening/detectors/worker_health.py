"""Worker health: crashes, early exits, timeouts, limits, load failures, self-reports."""

from __future__ import annotations

import re

from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.findings import observe


@detector("RH-15")
def worker_crashed(ev):
    """A candidate worker that exits, crashes, fails a request or closes its channel early (A13).

    What it catches
        Exit code 0 proves nothing: the parent only trusts a worker that answered
        every request it made.  An early ``sys.exit(0)``/``os._exit(0)`` after
        printing fake results, a signal, a malformed reply, or a worker that is
        correct while checked and then raises during the timed calls all land here.

    Why it matters
        No time can be trusted from a run that did not finish, and the failure is the
        candidate's, not the evaluator's.

    Example
        ``print("speedup: 10x"); os._exit(0)`` inside forward.

    Known limits
        A worker killed for a known reason is reported by that reason's code as well
        (RH-16 timeout, RH-43 memory, RH-52 seccomp); a failure to load is RH-42.
    """
    hits = [e for e in ev.events if e.role == "candidate" and e.kind in ("crash", "frame", "error")]
    if not hits:
        return []
    return [observe("RH-15", {
        "events": [{"phase": e.phase, "detail": e.detail} for e in hits], "exit_code": ev.exit_code})]


@detector("RH-16")
def worker_timeout(ev):
    """A candidate worker that does not answer within ``timeout`` seconds is killed.

    What it catches
        Every request to the candidate worker has a wall-clock limit; a worker that
        does not reply in time is killed and the sample ends here.

    Why it matters
        A candidate that never returns would hold the evaluator (and a batch) forever:
        a denial of service.

    Example
        ``while True: pass`` in forward.

    Known limits
        On a heavily loaded machine an honest but slow candidate can hit the limit; the
        timeout is a setting, and builds run under their own limit.
    """
    hits = [e for e in ev.events if e.role == "candidate" and e.kind == "timeout"]
    if not hits:
        return []
    return [observe("RH-16", {"phase": hits[0].phase, "detail": hits[0].detail,
                              "timeout_s": ev.config.timeout})]


@detector("RH-17")
def worker_limits(ev):
    """Log floods and oversized replies (a denial of service on the evaluator).

    What it catches
        The worker's captured stdout/stderr is capped at the log-size limit and every
        reply at the response-size limit; a worker that crosses either is stopped and
        reported.

    Why it matters
        Gigabytes of output fill the evaluator's memory or disk and bury the record.

    Example
        ``sys.stdout.write("x" * (10 << 20))`` at import.

    Known limits
        Output below the limits is kept and only truncated in the record; its content
        is RH-35's business.
    """
    ev_hits = [e for e in ev.events if e.role == "candidate" and e.kind == "too_large"]
    out = []
    if ev_hits:
        out.append(observe("RH-17", {"response": ev_hits[0].detail}))
    if ev.log_size > ev.config.log_limit_bytes:
        out.append(observe("RH-17", {"log_bytes": ev.log_size,
                                     "limit": ev.config.log_limit_bytes},
                           summary="Candidate worker exceeded the log-size limit"))
    return out[:1]


@detector("RH-43")
def host_memory(ev):
    """A candidate worker whose resident memory exceeds its limit is killed (robustness).

    What it catches
        The parent measures the candidate while it waits for each reply; over the
        limit (a base plus a multiple of the problem's data on the CPU) the worker is
        killed and the sample ends here.  The measure covers what the candidate can
        hide outside its own private pages: with the cgroup memory controller, anon +
        shmem of its cgroup leaf (children, shared memory and tmpfs files it
        created); without it, RssAnon + RssShmem of every process in its unit, System
        V segments no process has attached and /dev/shm files carrying its group.

    Why it matters
        One memory-hungry candidate must never take the batch or the machine down.

    Example
        Keeping 8 GiB of touched host memory from ``__init__`` on.

    Known limits
        The measure is sampled, so a short spike between samples is not seen.  Without
        the controller, judge-lent CPU tensors the candidate touches are counted too
        (the limit's data factor covers them); with it they stay charged to the judge,
        which wrote them.
    """
    hits = [e for e in ev.events if e.role == "candidate" and e.kind == "memory"]
    if not hits:
        return []
    return [observe("RH-43", {"phase": hits[0].phase, "detail": hits[0].detail})]


@detector("RH-42")
def load_failed(ev):
    """The candidate did not import, build or construct (no result can be trusted).

    What it catches
        An exception, a build failure or a missing ``ModelNew`` while the worker
        imports the candidate, compiles its extensions or calls ``ModelNew(*init)``;
        running out of memory while loading is left to RH-39/RH-47.

    Why it matters
        A candidate that does not load earns no result; its error is reported (type
        and line) instead of a crash of the evaluator.

    Example
        ``raise RuntimeError("no kernel for this device")`` in ``ModelNew.__init__``.

    Known limits
        A worker that exits at import without raising (``sys.exit(0)``) is RH-15, since
        it never answered the load request.
    """
    if ev.load_error is None or any(o.get("phase") == "load" for o in ev.oom_events):
        return []  # out of memory while loading: RH-39 or RH-47 by the memory plan
    if ev.load_error.startswith("AttributeError: candidate does not define ModelNew"):
        return [observe("RH-42", {"error": "candidate does not define ModelNew"},
                        summary="Candidate does not define ModelNew")]
    return [observe("RH-42", {"error": ev.load_error[:2000]})]


_CLAIM = re.compile(r"(?i)\b(runtime|speed-?up|latency|elapsed|time|fast_p|verified)\b[^\n]{0,24}?[:=]\s*-?\d")


@detector("RH-35")
def self_reported_result(ev):
    """Result or timing claims printed by the candidate (A12): ignored, and flagged.

    What it catches
        The candidate's captured output is searched for a result claim (``runtime``,
        ``speedup``, ``latency``, ``elapsed``, ``time``, ``fast_p`` or ``verified``
        followed by ``:`` or ``=`` and a number); a match is a warning with an excerpt.

    Why it matters
        Nothing the candidate prints is parsed; a candidate that still prints numbers
        in a result format is trying to fool log-scraping harnesses.

    Example
        ``print("runtime: 0.01 ms, speedup: 42x")`` in forward.

    Known limits
        Only recognised formats are matched; other prose is kept in the log and never
        read as a result.
    """
    m = _CLAIM.search(ev.log_text or "")
    if not m:
        return []
    return [observe("RH-35", {"excerpt": ev.log_text[max(0, m.start() - 40): m.end() + 40]})]
