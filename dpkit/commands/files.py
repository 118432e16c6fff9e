"""Every file and folder a ``dpkit`` command writes is created here: exclusively and atomically.

* :func:`write_new` writes a temporary file beside the target, then ``os.link``\\ s it onto the
  target name, which fails if that name exists: of N concurrent writers exactly one succeeds,
  and the others get :class:`FileExistsError`. With ``force=True`` the temporary file is
  ``os.replace``\\ d onto the target instead (atomic: a reader, or a kill, sees the old file or
  the new one, never a mix).
* :func:`install_folder` renames a finished folder onto a name that must not exist (atomic);
  with ``force=True`` an existing folder is first renamed aside, the new one renamed in, and
  the old one removed, so a kill leaves the old folder or the new one (possibly beside a
  recognisable temporary name, removed by the next run).
* Temporary names are ``.dpkit-tmp-<pid>-<random>-<name>``; :func:`remove_stale` deletes those
  whose owning process is dead (every writer calls it on its folder first).
* Files get mode ``0o666 & ~umask`` and folders ``0o777 & ~umask``, as ``open``/``mkdir`` would.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
from pathlib import Path

__all__ = ["TEMP_PREFIX", "install_folder", "new_temp_folder", "remove_stale", "temp_name", "write_new"]

TEMP_PREFIX = ".dpkit-tmp-"
_TEMP = re.compile(r"^\.dpkit-tmp-(\d+)-[0-9a-f]+-")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temp_name(target: str | os.PathLike[str]) -> Path:
    """A fresh temporary path beside ``target``: ``.dpkit-tmp-<pid>-<random>-<name>``."""
    path = Path(target)
    return path.with_name(f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{path.name}"[:255])


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
    """Remove the temporary files and folders in ``folder`` left by dead ``dpkit`` processes; returns them."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.match(entry.name)
        if match is None or _alive(int(match.group(1))):
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
    concurrent writer wins); with ``force`` an existing file is replaced atomically.
    """
    target = Path(path)
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
    aside = temp_name(target)
    os.rename(target, aside)
    os.rename(built, target)
    shutil.rmtree(aside, ignore_errors=True)
