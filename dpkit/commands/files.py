"""Every file and folder a ``dpkit`` command writes is created here: exclusively and atomically.

* :func:`write_new` writes a temporary file beside the target, then ``os.link``\\ s it onto the
  target name, which fails if that name exists: of N concurrent writers exactly one succeeds,
  and the others get :class:`FileExistsError`. With ``force=True`` the temporary file is
  ``os.replace``\\ d onto the target instead (atomic: a reader, or a kill, sees the old file or
  the new one, never a mix).
* :func:`install_folder` renames a finished folder onto a name that must not exist (atomic);
  with ``force=True`` an existing folder is swapped with the new one in a single
  ``renameat2(RENAME_EXCHANGE)`` (Linux), then the old one, now under the temporary name, is
  removed: at every instant the target is wholly the old folder or wholly the new one. Where
  the exchange is unsupported the old folder is renamed aside to ``.dpkit-old-<pid>-<random>-
  <name>`` and the new one renamed in; a kill between those two renames leaves the target
  missing and the old folder aside, and the next run in that folder renames it back.
* Temporary names are ``.dpkit-tmp-<pid>-<random>-<name>``; :func:`remove_stale` deletes those
  whose owning process is dead, and restores (or, when the target exists again, deletes) their
  ``.dpkit-old-`` folders (every writer calls it on its folder first).
* Files get mode ``0o666 & ~umask`` and folders ``0o777 & ~umask``, as ``open``/``mkdir`` would.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import sys
from pathlib import Path

__all__ = ["ASIDE_PREFIX", "TEMP_PREFIX", "install_folder", "new_temp_folder", "remove_stale", "temp_name", "write_new"]

TEMP_PREFIX = ".dpkit-tmp-"
ASIDE_PREFIX = ".dpkit-old-"
_TEMP = re.compile(r"^\.dpkit-(tmp|old)-(\d+)-[0-9a-f]+-(.*)$", re.DOTALL)


def temp_name(target: str | os.PathLike[str], prefix: str = TEMP_PREFIX) -> Path:
    """A fresh temporary path beside ``target``: ``.dpkit-tmp-<pid>-<random>-<name>``."""
    path = Path(target)
    return path.with_name(f"{prefix}{os.getpid()}-{secrets.token_hex(4)}-{path.name}"[:255])


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files and folders in ``folder`` left by dead ``dpkit`` processes; returns them.

    A ``.dpkit-old-`` folder (an old folder set aside by a ``--force`` that was killed before
    the new one was renamed in) is renamed back onto its name if that name is free again.
    """
    removed = []
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name.startswith(ASIDE_PREFIX))
    except OSError:
        return removed
    for entry in entries:  # the .dpkit-tmp- ones first: an unfinished new folder never beats an old one
        match = _TEMP.match(entry.name)
        if match is None or _alive(int(match.group(2))):
            continue
        if match.group(1) == "old" and len(entry.name) < 255:
            original = os.path.join(folder, match.group(3))
            with contextlib.suppress(OSError):
                if not os.path.lexists(original):
                    os.rename(entry.path, original)
                    continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def write_new(path: str | os.PathLike[str], data: str | bytes, *, force: bool = False) -> None:
    """Create ``path`` holding ``data``, complete or not at all.

    Without ``force`` the name must not exist (:class:`FileExistsError` otherwise, also when a
    concurrent writer wins); with ``force`` an existing file is replaced atomically. Any other
    :class:`OSError` (a full disk, a permission or read-only file system error) names ``path``,
    never only the temporary file, and leaves nothing behind.
    """
    try:
        _write_new(Path(path), data, force)
    except OSError as error:
        if error.filename is not None and not Path(os.fsdecode(error.filename)).name.startswith(TEMP_PREFIX):
            raise
        raise type(error)(error.errno, f"{error.strerror or error} (nothing was written)",
                          os.fspath(path)) from None


def _write_new(target: Path, data: str | bytes, force: bool) -> None:
    remove_stale(target.parent)
    temporary = temp_name(target)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            stream.flush()
            os.fsync(stream.fileno())
        if force:
            os.replace(temporary, target)
        else:
            try:
                os.link(temporary, target)
            except FileExistsError:
                raise FileExistsError(errno.EEXIST, "exists (another run may have just written it); pass --force "
                                      "to replace it", os.fspath(target)) from None
            except OSError as error:  # a file system without hard links: rename onto a checked name
                if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                    raise
                if os.path.lexists(target):
                    raise FileExistsError(errno.EEXIST, "exists; pass --force to replace it", os.fspath(target)) from None
                os.rename(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def new_temp_folder(target: str | os.PathLike[str]) -> Path:
    """Create and return an empty temporary folder beside ``target`` (mode ``0o777 & ~umask``)."""
    remove_stale(Path(target).absolute().parent)
    folder = temp_name(Path(target).absolute())
    folder.mkdir(0o777)
    return folder


def install_folder(built: str | os.PathLike[str], target: str | os.PathLike[str], *, force: bool = False) -> None:
    """Rename the finished folder ``built`` onto ``target``.

    Without ``force``, ``target`` must not exist, or be an empty folder (:class:`FileExistsError`
    otherwise). With ``force`` an existing ``target`` is renamed aside first and removed after
    the new one is in place.
    """
    built, target = Path(built), Path(target)
    try:
        os.rename(built, target)  # POSIX: atomic; also replaces an *empty* folder, fails on a non-empty one
        return
    except OSError as error:
        if error.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not force:
            if error.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise FileExistsError(errno.EEXIST, "exists and is not empty (another run may have just written "
                                      "it); pass --force to replace it", os.fspath(target)) from None
            raise
    if _exchange(built, target):  # built now holds the old folder
        shutil.rmtree(built, ignore_errors=True)
        return
    aside = temp_name(target, ASIDE_PREFIX)
    os.rename(target, aside)
    os.rename(built, target)
    shutil.rmtree(aside, ignore_errors=True)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two existing paths atomically with Linux's ``renameat2(RENAME_EXCHANGE)``; ``False`` if unsupported."""
    if not sys.platform.startswith("linux") or os.environ.get("DPKIT_NO_RENAME_EXCHANGE"):
        return False
    import ctypes  # only where a folder is replaced

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc without renameat2 (glibc < 2.28, musl < 1.2.?)
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):  # old kernel or file system
        return False
    raise OSError(code, os.strerror(code), os.fspath(second))
