"""RH-01 concurrency: threads, processes, executors, forks and event loops.

What it catches
    Python: any use of ``threading``, ``_thread``, ``multiprocessing``
    (``torch.multiprocessing`` too), ``concurrent.futures``, ``asyncio``, ``os.fork`` /
    ``os.forkpty`` / ``os.posix_spawn*`` / ``os.register_at_fork``, ``signal`` handlers
    and timers, ``torch.jit.fork`` and third-party task runners (joblib, ray, dask,
    gevent, trio, anyio), plus ``run_in_executor`` calls; imports count as hits.
    Embedded C/C++/CUDA: ``std::thread`` / ``std::jthread`` / ``std::async``,
    ``at::launch``, ``pthread_create``, ``fork``, ``vfork``, ``clone``,
    ``posix_spawn`` and the headers ``<thread>``, ``<pthread.h>``, ``<future>``,
    ``<spawn.h>``.

Why it matters
    Work started in the background returns control before the output is written
    (A02/A03): the timed interval brackets almost nothing and a later device-wide
    sync makes the output look correct.  Native threads are invisible to Python's
    ``threading.active_count``.

Example
    ``threading.Thread(target=fill, args=(out,)).start(); return out`` — and the aliased
    form ``import threading as th; th.Thread(...)``, or ``std::thread t(work); t.detach();``
    in the CUDA string.

Known limits
    OpenMP pragmas and ``at::parallel_for`` (which join before returning) are not
    flagged.  A thread pool created by a library the candidate legitimately calls is
    invisible; the runtime detector RH-25 counts OS threads and child processes.
"""

from __future__ import annotations

from ._context import Context, Hit, Rule, hit

PY_PREFIXES = (
    "threading", "_thread", "multiprocessing", "torch.multiprocessing", "concurrent.futures", "asyncio",
    "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp", "os.register_at_fork",
    "signal.signal", "signal.setitimer", "signal.alarm", "torch.jit.fork", "torch.jit._fork",
    "joblib", "ray", "dask", "multiprocess", "billiard", "gevent", "eventlet", "trio", "anyio",
)
PY_METHODS = {"run_in_executor", "start_new_thread"}
CXX_CALLS = {"pthread_create", "fork", "vfork", "clone", "clone3", "posix_spawn", "posix_spawnp", "thrd_create",
             "CreateThread", "_beginthreadex"}
CXX_QUALIFIED = {"std::thread", "std::jthread", "std::async", "at::launch", "c10::ThreadPool", "at::ThreadPool",
                 "std::packaged_task"}
CXX_HEADERS = {"thread", "pthread.h", "future", "spawn.h"}


def check(ctx: Context) -> list[Hit]:
    hits = ctx.ref_hits(PY_PREFIXES)
    hits += [hit(c.line, f"{c.method}()") for c in ctx.calls if c.method in PY_METHODS]
    hits += ctx.cxx_hits(CXX_CALLS, call_only=True, qualified=CXX_QUALIFIED)
    # `using namespace std; thread t(f);`
    hits += [hit(ci.line, f"C++: {ci.text}") for ci in ctx.cxx_idents
             if ci.text in ("thread", "jthread") and ci.prev not in (".", "->", "::")
             and (ci.next == "(" or ci.next.isidentifier()) and not ci.directive]
    hits += [hit(line, f"C++: #include <{h}>") for line, h in ctx.cxx_headers if h in CXX_HEADERS]
    return hits


RULE = Rule("RH-01", "concurrency", check, __doc__ or "")
