"""Atomic file writes: a crash mid-write never leaves a half-written file behind.

The file is written to a temporary name in the target's folder and renamed over it. The target
keeps its mode (a new file gets 0666 minus the umask, as ``open()`` would give it), and a symlink
is written through to the file it points at, so the link stays a link.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from fixport.core.foundation.errors import FixportError

# Short on purpose: a temporary name longer than the target's could pass the folder's name limit.
TEMP_PREFIX = ".fixport-"
TEMP_SUFFIX = ".tmp"
NEW_FILE_MODE = 0o666


class FileWriteError(FixportError):
    """An output file cannot be written: a read-only folder, a full disk, a name too long."""


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` (through a symlink to its target) atomically; returns the file written."""
    return atomic_write(path, lambda stream: stream.write(data))


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object],
                 verify: Callable[[Path], None] | None = None) -> Path:
    """``write(stream)`` to ``path`` atomically; ``verify(temporary_path)`` may refuse the written
    file by raising, before it replaces anything. Returns the file written."""
    target = Path(os.path.realpath(Path(path).expanduser()))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = output_mode(target)
        handle, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=target.parent)
    except OSError as exc:
        raise write_error(Path(path), exc) from exc
    try:
        with os.fdopen(handle, "wb") as stream:
            write(stream)
            stream.flush()
            os.fchmod(stream.fileno(), mode)
            os.fsync(stream.fileno())
        if verify is not None:
            verify(Path(temp_name))
        os.replace(temp_name, target)
    except BaseException as exc:
        Path(temp_name).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise write_error(Path(path), exc) from exc
        raise
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def output_mode(target: Path) -> int:
    """The existing file's permission bits, or what a plain ``open()`` would create."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return NEW_FILE_MODE & ~current_umask()


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (other threads may create files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_error(path: Path, exc: OSError) -> FileWriteError:
    """What went wrong, in the user's terms, and what to do."""
    folder = path.parent if str(path.parent) else Path(".")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return FileWriteError(f"Cannot write {path}: the folder {folder} is not writable ({exc.strerror}).",
                              "Choose an output in a folder you can write to, or change its permissions.")
    if exc.errno == errno.ENOSPC or exc.errno == errno.EDQUOT:
        return FileWriteError(f"Cannot write {path}: the disk is full.",
                              "Free some space or choose an output on another disk; nothing was changed.")
    if exc.errno == errno.ENAMETOOLONG:
        return FileWriteError(f"Cannot write {path}: the file name is too long for its folder.",
                              "Choose a shorter name.")
    if exc.errno in (errno.ENOTDIR, errno.EISDIR, errno.EEXIST):
        return FileWriteError(f"Cannot write {path}: {exc.strerror}.",
                              "Choose an output path whose folders are folders and whose name is a file.")
    return FileWriteError(f"Cannot write {path}: {exc.strerror or exc}.", "Choose another output path.")
