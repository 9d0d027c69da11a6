"""RH-02 process_network: subprocesses, shell commands, package installs, network.

What it catches
    Python: ``subprocess``, ``os.system`` / ``os.popen`` / ``os.exec*`` / ``os.spawn*``,
    ``pty``, ``socket`` / ``socketserver`` / ``ssl``, ``http``, ``urllib`` / ``urllib3``,
    ``requests``, ``httpx``, ``aiohttp``, ``ftplib`` / ``smtplib`` / ``telnetlib`` /
    ``xmlrpc`` and other network clients, ``webbrowser``, ``pip`` / ``ensurepip``,
    ``torch.hub`` and ``huggingface_hub`` downloads (imports count).  Embedded C/C++:
    ``system``, ``popen``, ``exec*``, ``socket``, ``connect``, ``getaddrinfo``,
    ``curl_easy_init`` and the headers ``<sys/socket.h>``, ``<netinet/in.h>``,
    ``<curl/curl.h>``.

Why it matters
    A candidate that can run programs or reach the network can install packages,
    fetch precomputed answers, or do its work in another process the evaluator does
    not time or observe (A44).

Example
    ``subprocess.run(["pip", "install", "flash-attn"])``; aliased:
    ``from os import system as s; s("nvidia-smi -lgc 2100")``.

Known limits
    Process creation hidden behind foreign code (RH-03) or dynamic execution (RH-04) is
    reported by those rules instead; the sandbox, not this rule, is the real barrier.
"""

from __future__ import annotations

from ._context import Context, Hit, Rule, hit

PY_PREFIXES = (
    "subprocess", "os.system", "os.popen", "os.startfile", "pty", "socket", "socketserver", "ssl", "http",
    "urllib", "urllib3", "requests", "httpx", "aiohttp", "ftplib", "smtplib", "telnetlib", "xmlrpc", "poplib",
    "imaplib", "nntplib", "webbrowser", "pip", "ensurepip", "torch.hub", "huggingface_hub", "pexpect", "sh",
    "plumbum", "paramiko", "fabric", "grpc", "zmq", "wget", "platform.popen", "commands", "asyncio.subprocess",
    "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell", "asyncio.open_connection",
) + tuple(f"os.{f}" for f in ("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe",
                              "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
                              "spawnvpe"))
CXX_CALLS = {"system", "popen", "_popen", "execl", "execlp", "execle", "execv", "execvp", "execve", "execvpe",
             "socket", "connect", "getaddrinfo", "gethostbyname", "curl_easy_init", "WinExec", "ShellExecuteA",
             "ShellExecuteW"}
CXX_HEADERS = {"sys/socket.h", "netinet/in.h", "arpa/inet.h", "netdb.h", "curl/curl.h"}


def check(ctx: Context) -> list[Hit]:
    hits = ctx.ref_hits(PY_PREFIXES)
    hits += ctx.cxx_hits(CXX_CALLS, call_only=True, qualified={"std::system"})
    hits += [hit(line, f"C++: #include <{h}>") for line, h in ctx.cxx_headers if h in CXX_HEADERS]
    return hits


RULE = Rule("RH-02", "process_network", check, __doc__ or "")
