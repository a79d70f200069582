"""The few file operations every part of gitmem needs, written once.

Standard library only and cheap to import (no tempfile, contextlib or typing): the hook path
uses them too. Paths are str or os.PathLike.

Locks are flock(2) where fcntl exists. On native Windows (no fcntl) they are msvcrt.locking on
one byte far past any content (LOCK_BYTE), which Windows allows and which keeps readers of the
file's data unhindered (its byte-range locks are mandatory); shared locks are exclusive there
(msvcrt has no shared lock), and Windows, too, drops a dead holder's locks.
"""

from __future__ import annotations

import os
import sys
import time

if sys.platform == "win32":
    import msvcrt

    LOCK_BYTE = 0x7FFFFFFE  # a position _locking accepts (a 32-bit long), past any file gitmem locks
    _POLL_S = 0.005

    def lock(fd: int, shared: bool = False, blocking: bool = True) -> None:
        """Lock the open file `fd` (shared is exclusive here); BlockingIOError when `blocking`
        is False and another process holds it."""
        while True:
            where = os.lseek(fd, 0, os.SEEK_CUR)
            os.lseek(fd, LOCK_BYTE, os.SEEK_SET)
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return
            except OSError:
                if not blocking:
                    raise BlockingIOError(f"file {fd} is locked by another process") from None
            finally:
                os.lseek(fd, where, os.SEEK_SET)
            time.sleep(_POLL_S)

    def unlock(fd: int) -> None:
        where = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, LOCK_BYTE, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        finally:
            os.lseek(fd, where, os.SEEK_SET)
else:
    import fcntl

    def lock(fd: int, shared: bool = False, blocking: bool = True) -> None:
        """flock the open file `fd`; BlockingIOError when `blocking` is False and another
        process holds it."""
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB))

    def unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import Any


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Replace `path` with `data` through a unique temporary file beside it: readers see the old
    content or the new one, never half of either; a crash leaves at most a stray temporary. The
    file keeps its permissions (a settings file the developer made private stays private)."""
    path = os.fspath(path)
    folder, name = os.path.split(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = None
    try:
        with open(tmp, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


MAX_REPO_FILE_BYTES = 4 * 1024 * 1024  # a configuration or instructions file of the repository


def read_plain(path: str | os.PathLike[str], limit: int = MAX_REPO_FILE_BYTES, follow_links: bool = True) -> bytes:
    """The bytes of a plain file of at most `limit` bytes; OSError otherwise (a missing file:
    FileNotFoundError). Files a pull request can plant are read through this: git checks out
    symbolic links, and one to /dev/zero or a FIFO would never end a read. `follow_links`: a link
    to a plain file is read (a developer may link AGENTS.md to CLAUDE.md), else refused."""
    import errno
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)  # a FIFO must not block the open
    if not follow_links and stat.S_ISLNK(os.lstat(path).st_mode):
        raise OSError(errno.EINVAL, "a symbolic link, not a plain file", os.fspath(path))
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a plain file (a folder, device or FIFO)", os.fspath(path))
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise OSError(errno.EFBIG, f"over {limit:,} bytes", os.fspath(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def stray_temporaries(folder: str | os.PathLike[str]) -> list[str]:
    """The temporaries write_atomic left in `folder` when its process died: named
    `.<name>.<pid>.<8 hex>.tmp`, the pid no longer running. Never raises."""
    found: list[str] = []
    if sys.platform == "win32":  # os.kill(pid, 0) would end the process there
        return found
    try:
        names = os.listdir(folder)
    except OSError:
        return found
    for name in names:
        parts = name.rsplit(".", 3)
        if not (name.startswith(".") and len(parts) == 4 and parts[3] == "tmp" and len(parts[2]) == 8
                and parts[1].isascii() and parts[1].isdigit() and 0 < len(parts[1]) <= 9):
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            found.append(name)
        except (OSError, ValueError, OverflowError):
            pass  # running (as another user), or no pid this system has
    return found


def append_line(path: str | os.PathLike[str], line: str) -> None:
    """Append one line with a single write() on an O_APPEND descriptor: concurrent writers never
    interleave inside a line."""
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    data = (line if line.endswith("\n") else line + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def rotate(path: str | os.PathLike[str], max_bytes: int) -> None:
    """Move `path` to `path.1` once it has grown past `max_bytes` (logs that must stay bounded)."""
    path = os.fspath(path)
    try:
        if os.stat(path).st_size > max_bytes:
            os.replace(path, path + ".1")
    except OSError:
        pass


class FileLock:
    """A lock on `path` (created if missing), held for a `with` block: flock, or msvcrt.locking
    on Windows (see the module's docstring).

    The kernel drops it when the holder dies however it dies, so a crash never leaves a stale
    lock. `blocking=False` makes entering raise BlockingIOError when another process holds it.
    """

    __slots__ = ("blocking", "fd", "path", "shared")

    def __init__(self, path: str | os.PathLike[str], shared: bool = False, blocking: bool = True) -> None:
        self.path = os.fspath(path)
        self.shared = shared
        self.blocking = blocking
        self.fd: int | None = None

    @classmethod
    def inherited(cls, path: str | os.PathLike[str], fd: int) -> FileLock:
        """The lock a parent process took on `path` and handed down as the open file `fd`."""
        held = cls(path)
        os.fstat(fd)  # OSError now, not at release, if no such file was handed down
        os.set_inheritable(fd, False)  # what the holder starts must not keep the lock after it dies
        held.fd = fd
        return held

    def hand_off(self) -> None:
        """Close this process's copy of the lock file without unlocking it: a child started with
        the open file (pass_fds; FileLock.inherited there) keeps holding the lock."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> FileLock:
        if self.fd is not None:
            return self  # inherited: held already
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if self.blocking or self.shared:
                lock(fd, self.shared, self.blocking)
            else:
                lock_now(fd)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            unlock(self.fd)
            os.close(self.fd)
            self.fd = None


def utc_stamp(seconds: float | None = None) -> str:
    """`2026-12-01T09:03:33Z`: the one timestamp format of gitmem's logs and records."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if seconds is None else seconds))


def utc_date(seconds: float | None = None) -> str:
    """`2026-12-01` (UTC)."""
    return time.strftime("%Y-%m-%d", time.gmtime(time.time() if seconds is None else seconds))


def utc_seconds(stamp: str | None) -> float | None:
    """Epoch seconds of an ISO 8601 time (`2026-12-01T09:03:33Z`, a transcript's `…54.684Z`, a day
    alone), UTC where it names no zone; None when it is none."""
    if not stamp:
        return None
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()


PROBE_PATIENCE = 0.05  # seconds: is_locked's probe holds a shared lock for microseconds


def lock_now(fd: int) -> None:
    """An exclusive lock on `fd` without waiting for a holder, yet past is_locked's momentary
    probes (which would otherwise pass for a holder); BlockingIOError when one really holds it."""
    deadline = time.monotonic() + PROBE_PATIENCE
    while True:
        try:
            lock(fd, blocking=False)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.002)


def is_locked(path: str | os.PathLike[str]) -> bool:
    """Whether some process holds an exclusive lock on `path` (a missing file is not locked)."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        lock(fd, shared=True, blocking=False)
    except OSError:
        return True
    else:
        unlock(fd)
        return False
    finally:
        os.close(fd)


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, read in blocks (model files are hundreds of MB)."""
    import hashlib  # ≈10 ms: not on the hook path

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def uses_crlf(text: str | bytes) -> bool:
    """The file's lines end in CRLF (as on a Windows checkout, or core.autocrlf): its first does."""
    newline = "\n" if isinstance(text, str) else b"\n"
    first = text.find(newline)  # type: ignore[arg-type]
    return first > 0 and text[first - 1:first] in ("\r", b"\r")


def in_line_ends_of(data: bytes | None, text: str) -> str:
    """`text` (as git stores it) with the line ends of the work tree's `data` it replaces: a CRLF
    checkout (core.autocrlf) stays CRLF, as git's own checkout writes it."""
    if data is None or "\r" in text or not uses_crlf(data):
        return text
    return text.replace("\n", "\r\n")
