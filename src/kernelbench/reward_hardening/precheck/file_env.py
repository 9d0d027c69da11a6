"""RH-07 file_env: files, directories, /proc, the environment and argv.

What it catches
    Python: ``open`` / ``io.open`` / ``os.open`` / ``os.fdopen``, ``input``, ``pathlib``,
    ``read_text`` / ``write_bytes`` / ``iterdir`` / ``glob`` style methods, ``os.listdir``
    / ``scandir`` / ``walk`` / ``stat`` / ``remove`` / ``rename`` / ``makedirs`` / ...,
    ``os.path.exists`` and other file queries, ``os.environ`` (reads and writes),
    ``os.getenv`` / ``putenv`` / ``unsetenv``, ``sys.argv`` / ``sys.stdin``, ``shutil``,
    ``tempfile``, ``glob``, ``fileinput``, ``linecache``, ``zipfile`` / ``tarfile``,
    ``sqlite3``, ``torch.load`` / ``torch.save`` / ``from_file``, ``numpy.load`` /
    ``save`` / ``fromfile`` / ``memmap`` / ``loadtxt``, ``json.load`` / ``dump``,
    ``pandas.read_*``, and string literals naming ``/proc``, ``/sys/``, ``/dev/`` or
    ``/etc/`` paths (docstrings and comments excluded).  Embedded C/C++: ``fopen``,
    ``open``, ``opendir``, ``readlink``, ``stat``, ``getenv`` / ``setenv``,
    ``std::ifstream`` / ``ofstream`` / ``filesystem``, the headers ``<fstream>``,
    ``<filesystem>``, ``<dirent.h>``, and such path strings.

Why it matters
    Reading the reference, test files, the seed or the tolerance from disk or the
    environment lets a candidate precompute or replay answers (A23, A24); writing
    files persists caches across runs and can shadow imports (A43).

Example
    ``open("/proc/self/cmdline").read()``; aliased: ``from os import environ as E;
    seed = int(E["KB_SEED"])``.

Known limits
    The ``load_inline`` build directory is managed by the evaluator and not reported.
    Paths built at run time are only seen when the call itself is flagged.
"""

from __future__ import annotations

import re

from ._context import Context, Hit, Rule, hit

PY_PREFIXES = (
    "builtins.open", "builtins.input", "io.open", "io.FileIO", "io.open_code", "os.open", "os.fdopen", "os.read",
    "os.write", "os.listdir", "os.scandir", "os.walk", "os.fwalk", "os.stat", "os.lstat", "os.access",
    "os.remove", "os.unlink", "os.rename", "os.renames", "os.replace", "os.makedirs", "os.mkdir", "os.rmdir",
    "os.removedirs", "os.chdir", "os.chmod", "os.link", "os.symlink", "os.readlink", "os.truncate", "os.mkfifo",
    "os.environ", "os.environb", "os.getenv", "os.getenvb", "os.putenv", "os.unsetenv", "os.path.exists",
    "os.path.lexists", "os.path.isfile", "os.path.isdir", "os.path.islink", "os.path.getsize", "os.path.getmtime",
    "os.path.getatime", "os.path.getctime", "os.path.samefile", "pathlib", "sys.argv", "sys.orig_argv",
    "sys.stdin", "shutil", "tempfile", "glob", "fileinput", "linecache", "filecmp", "zipfile", "tarfile",
    "sqlite3", "dbm", "getpass", "torch.load", "torch.save", "torch.from_file", "torch.UntypedStorage.from_file",
    "torch.TypedStorage.from_file", "numpy.load", "numpy.save", "numpy.savez", "numpy.savez_compressed",
    "numpy.savetxt",
    "numpy.fromfile", "numpy.memmap", "numpy.loadtxt", "numpy.genfromtxt", "json.load", "json.dump",
)
PY_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "rglob", "tofile"}
CXX_CALLS = {"fopen", "fopen_s", "freopen", "open", "openat", "opendir", "readdir", "readlink", "stat", "lstat",
             "getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "unlink", "mkdir", "creat"}
CXX_NAMES = {"ifstream", "ofstream", "fstream", "filesystem"}
CXX_HEADERS = {"fstream", "filesystem", "dirent.h"}
PATH_RE = re.compile(r"(^|[\s\"'=:(])/(proc|sys|dev|etc)(/|$)")


def check(ctx: Context) -> list[Hit]:
    hits = ctx.ref_hits(PY_PREFIXES)
    hits += [hit(r.line, r.qname) for r in ctx.refs if r.rooted and r.qname.startswith("pandas.read_")]
    hits += [hit(c.line, f".{c.method}()") for c in ctx.calls if c.method in PY_METHODS]
    for line, text, _ in ctx.python_strings():
        m = PATH_RE.search(text)
        if m:
            hits.append(hit(line, f"path string /{m.group(2)}"))
    for line, text in ctx.cxx_strings:
        m = PATH_RE.search(text)
        if m:
            hits.append(hit(line, f"C++: path string /{m.group(2)}"))
    hits += ctx.cxx_hits(CXX_CALLS, call_only=True, qualified={"std::getenv", "std::fopen"})
    hits += [hit(ci.line, f"C++: {ci.qual.lstrip(':')}") for ci in ctx.cxx_idents
             if ci.text in CXX_NAMES and ci.prev not in (".", "->")]
    hits += [hit(line, f"C++: #include <{h}>") for line, h in ctx.cxx_headers if h in CXX_HEADERS]
    return hits


RULE = Rule("RH-07", "file_env", check, __doc__ or "")
