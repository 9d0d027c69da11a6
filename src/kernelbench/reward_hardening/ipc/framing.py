"""Frames on the wire: length-prefixed JSON headers plus raw byte blobs, never pickles.

Used by the parent (:mod:`kernelbench.procs`) and by both workers. A frame is a JSON
header and a list of blobs; large frames spill to a private file instead of the pipe.
Tensors travel as dtype/shape metadata plus their raw bytes (:func:`tensor_to_wire`).
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

__all__ = [
    "FrameError", "ResponseTooLarge", "decode_frame", "encode_frame", "make_spill_dir", "recv_frame", "send_frame",
    "tensor_from_wire", "tensor_to_wire", "value_from_json", "value_to_json", "values_from_wire",
    "values_to_wire",
]

_HEADER_LIMIT = 16 * 1024 * 1024


class ResponseTooLarge(RuntimeError):
    """The worker's reply exceeded the response-size limit."""


class FrameError(ValueError):
    """A frame is malformed."""



def encode_frame(header: dict, blobs: list[bytes] | None = None) -> bytes:
    blobs = blobs or []
    header = dict(header)
    header["_blob_sizes"] = [len(b) for b in blobs]
    raw = json.dumps(header, allow_nan=True).encode()
    return struct.pack("<I", len(raw)) + raw + b"".join(blobs)


def decode_frame(data: bytes) -> tuple[dict, list[bytes]]:
    if len(data) < 4:
        raise FrameError("frame shorter than its length prefix")
    (hlen,) = struct.unpack_from("<I", data, 0)
    if hlen > _HEADER_LIMIT or 4 + hlen > len(data):
        raise FrameError("header length out of range")
    try:
        header = json.loads(data[4 : 4 + hlen])
    except ValueError as exc:
        raise FrameError(f"header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise FrameError("header is not an object")
    sizes = header.pop("_blob_sizes", [])
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise FrameError("bad blob sizes")
    if 4 + hlen + sum(sizes) != len(data):
        raise FrameError("blob sizes do not add up to the frame length")
    blobs, pos = [], 4 + hlen
    for s in sizes:
        blobs.append(bytes(data[pos : pos + s]))
        pos += s
    return header, blobs


SPILL_THRESHOLD = 256 * 1024


_SPILL_PREFIX = "kernelguard_spill_"


def _pid_namespace() -> str:
    """This process's pid namespace (pids mean something only inside it)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _remove_orphaned_spill_dirs(base: str) -> int:
    """Remove spill directories whose evaluator died (a SIGKILLed parent cannot clean up).

    A directory is named after the pid namespace and the pid of the process that made it;
    it is removed only when it belongs to this user, was made in this pid namespace (a
    /dev/shm shared with another container holds pids that mean nothing here) and no
    process with that pid exists.  Returns how many were removed.
    """
    import shutil

    removed = 0
    try:
        names = os.listdir(base)
    except OSError:
        return 0
    own_ns = _pid_namespace()
    for name in names:
        if not name.startswith(_SPILL_PREFIX):
            continue
        ns, _, rest = name[len(_SPILL_PREFIX):].partition("_")
        pid = rest.split("_", 1)[0]
        if ns != own_ns or not pid.isdigit() or int(pid) == os.getpid():
            continue
        path = os.path.join(base, name)
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
            continue  # its maker is alive (or the pid was reused: left alone)
        except ProcessLookupError:
            pass
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


def make_spill_dir() -> str:
    """A private directory for large frames (in /dev/shm when the machine has it).

    Named ``kernelguard_spill_<pid namespace>_<pid>_…``; the directories of evaluators
    that died without cleaning up are removed here first.
    """
    import tempfile

    base = None
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize >= 8 << 30:  # small container /dev/shm: use the disk instead
            base = "/dev/shm"
    _remove_orphaned_spill_dirs(base or tempfile.gettempdir())
    return tempfile.mkdtemp(prefix=f"{_SPILL_PREFIX}{_pid_namespace()}_{os.getpid()}_", dir=base)


def send_frame(conn: Any, header: dict, blobs: list | None = None, spill_dir: str | None = None) -> None:
    """Send a frame; blobs above ``SPILL_THRESHOLD`` go through a file in ``spill_dir``.

    A socket pair moves large payloads in 64 KiB reads; a file in /dev/shm moves them at
    memory speed.  Only the file's base name travels in the header, and the reader
    opens it inside its own spill directory without following links.
    """
    blobs = blobs or []
    total = sum(len(b) for b in blobs)
    if spill_dir and total > SPILL_THRESHOLD:
        import secrets

        name = f"frame-{os.getpid()}-{secrets.token_hex(8)}.bin"
        fd = os.open(os.path.join(spill_dir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            for b in blobs:
                fh.write(b)
        header = dict(header)
        header["_spill"] = name
        header["_spill_sizes"] = [len(b) for b in blobs]
        conn.send_bytes(encode_frame(header, []))
    else:
        conn.send_bytes(encode_frame(header, blobs))


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def recv_frame(conn: Any, maxlength: int | None = None, spill_dir: str | None = None) -> tuple[dict, list]:
    data = conn.recv_bytes(maxlength) if maxlength else conn.recv_bytes()
    header, blobs = decode_frame(data)
    name = header.pop("_spill", None)
    sizes = header.pop("_spill_sizes", None)
    if name is None:
        return header, blobs
    import stat

    if (not spill_dir or not isinstance(name, str) or os.path.basename(name) != name
            or not name.startswith("frame-") or not isinstance(sizes, list)
            or not all(isinstance(x, int) and x >= 0 for x in sizes)):
        raise FrameError("bad spill reference")
    path = os.path.join(spill_dir, name)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError as exc:
        raise FrameError(f"spill file unreadable: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FrameError("spill file is not a regular file")
        if maxlength and st.st_size > maxlength:
            raise ResponseTooLarge(f"reply larger than {maxlength} bytes")
        if sum(sizes) != st.st_size:
            raise FrameError("spill sizes do not match the file")
        buf = bytearray(st.st_size)
        view = memoryview(buf)
        got = 0
        while got < st.st_size:
            n = os.readv(fd, [view[got:]])
            if n <= 0:
                raise FrameError("spill file truncated")
            got += n
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
    out, pos = [], 0
    for size in sizes:
        out.append(view[pos: pos + size])
        pos += size
    return header, out


_WIRE_DTYPES = (
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
    "uint8", "bool", "complex64", "complex128",
)


def tensor_to_wire(t: Any) -> tuple[dict, bytes]:
    """Plain CPU bytes of a tensor (copied; the caller's tensor is untouched)."""
    import torch

    cpu = t.detach().to("cpu").contiguous()
    dtype = str(cpu.dtype).replace("torch.", "")
    flat = cpu.reshape(-1)
    data = memoryview(flat.view(torch.uint8).numpy()) if flat.numel() else b""
    return {"dtype": dtype, "shape": list(cpu.shape)}, data


def tensor_from_wire(meta: dict, data: bytes) -> Any:
    import torch

    dtype_name = meta.get("dtype")
    shape = meta.get("shape")
    if dtype_name not in _WIRE_DTYPES or not isinstance(shape, list):
        raise FrameError(f"unsupported tensor encoding {meta!r}")
    dtype = getattr(torch, dtype_name)
    numel = 1
    for s in shape:
        if not isinstance(s, int) or s < 0:
            raise FrameError("bad shape")
        numel *= s
    itemsize = torch.empty((), dtype=dtype).element_size()
    if numel * itemsize != len(data):
        raise FrameError("tensor byte count does not match dtype and shape")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    buf = data if isinstance(data, bytearray) else bytearray(data)
    return torch.frombuffer(buf, dtype=torch.uint8).view(dtype).reshape(shape)


def value_to_json(v: Any) -> Any:
    """Plain constructor/forward arguments as JSON (tuples tagged so they come back as tuples)."""
    if isinstance(v, tuple):
        return {"__tuple__": [value_to_json(x) for x in v]}
    if isinstance(v, list):
        return [value_to_json(x) for x in v]
    if isinstance(v, dict):
        return {"__dict__": [[value_to_json(k), value_to_json(x)] for k, x in v.items()]}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return {"__repr__": repr(v)}


def value_from_json(v: Any) -> Any:
    if isinstance(v, list):
        return [value_from_json(x) for x in v]
    if isinstance(v, dict):
        if "__tuple__" in v:
            return tuple(value_from_json(x) for x in v["__tuple__"])
        if "__dict__" in v:
            return {value_from_json(k): value_from_json(x) for k, x in v["__dict__"]}
        if "__repr__" in v:
            return v["__repr__"]
    return v


def values_to_wire(values: list) -> tuple[list, list]:
    """A list of forward/constructor arguments as (header items, blobs)."""
    import torch

    items, blobs = [], []
    for v in values:
        if isinstance(v, torch.Tensor):
            meta, data = tensor_to_wire(v)
            items.append({"kind": "tensor", "meta": meta, "blob": len(blobs)})
            blobs.append(data)
        else:
            items.append({"kind": "value", "value": value_to_json(v)})
    return items, blobs


def values_from_wire(items: list, blobs: list, device: Any = None) -> list:
    """Inverse of :func:`values_to_wire`; tensors land on ``device`` (CPU when None)."""
    out = []
    for item in items:
        if item.get("kind") == "tensor":
            t = tensor_from_wire(item["meta"], blobs[item["blob"]])
            out.append(t if device is None else t.to(device))
        else:
            out.append(value_from_json(item.get("value")))
    return out


# --------------------------------------------------------------------------- context
