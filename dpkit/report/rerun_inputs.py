"""Copy the files a rerun reads into its sandbox, each read once through a descriptor that followed no link.

A document names the files its command reads (``train --data FILE`` or ``--data FOLDER``,
``audit --pairs-file FILE``) by relative paths inside the current directory. A path is trusted
only as a name, never for what it points to: :func:`open_beneath` opens it one component at a
time from a descriptor of the current directory, each ``os.open`` given a single name with
``O_NOFOLLOW`` (``O_DIRECTORY`` for the folders on the way), so a symbolic link anywhere in the
path is refused, not followed. The open descriptor is then checked (``fstat``: a regular file with
one name, or a folder) and its bytes are copied into the rerun's temporary directory as a new
regular file the parent writes (:func:`stage_inputs`). The child process reads only these
copies: swapping a file for a link after the check changes nothing the rerun reads.

A regular file with more than one name (``st_nlink > 1``, a hard link) is refused too: its other
name may lie outside the current directory (a downloaded archive can carry hard links), and from a
descriptor nothing tells where. A file the reader made with ``cp`` has one name.

For a folder (``train --data FOLDER``, a copy of UCI Adult) the files the command reads from it,
:data:`FOLDER_FILES`, are copied under the same rules; a missing one is left for the command to
report.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Sequence

#: The files ``train --data FOLDER`` reads from the folder (``dpkit.algorithms.substrate.data.load_adult``).
FOLDER_FILES = ("adult.data", "adult.test")

_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_CHUNK = 1 << 20


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link (a rerun follows none)"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a special file (a FIFO, socket or device)"


def _open_entry(name: str, parent: int, shown: str, *, file: bool = True, folder: bool = False) -> int:
    """``os.open(name, dir_fd=parent)`` with ``O_NOFOLLOW``, accepting a regular file with one name (``file``)
    or a folder (``folder``); a ``ValueError`` naming ``shown`` otherwise (a link, missing, another kind)."""
    try:
        before = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        raise ValueError(f"{shown!r} does not exist in the current directory") from None
    except OSError as error:
        raise ValueError(f"{shown!r} cannot be read ({error.strerror or error})") from None

    def accepted(mode: int) -> bool:
        return file and stat.S_ISREG(mode) or folder and stat.S_ISDIR(mode)

    wanted = " or ".join(kind for kind, ok in (("a regular file", file), ("a folder", folder)) if ok)
    if not accepted(before.st_mode):
        raise ValueError(f"{shown!r} is {_kind(before.st_mode)}, not {wanted}")
    flags = _READ | os.O_NOFOLLOW | (os.O_DIRECTORY if stat.S_ISDIR(before.st_mode) else 0)
    try:
        fd = os.open(name, flags, dir_fd=parent)
    except OSError as error:  # replaced since the stat: a link now (ELOOP), or gone
        reason = "became a symbolic link or changed kind" if error.errno in (errno.ELOOP, errno.ENOTDIR) else \
            f"cannot be read ({error.strerror or error})"
        raise ValueError(f"{shown!r} {reason}") from None
    after = os.fstat(fd)
    if stat.S_IFMT(after.st_mode) != stat.S_IFMT(before.st_mode) or not accepted(after.st_mode) \
            or stat.S_ISREG(after.st_mode) and after.st_nlink != 1:
        os.close(fd)
        why = f"has {after.st_nlink} names (a hard link: its other name may lie outside; a rerun reads only " \
              f"files with one name, so copy it)" if stat.S_ISREG(after.st_mode) and accepted(after.st_mode) \
            else "changed kind while it was opened"
        raise ValueError(f"{shown!r} {why}")
    return fd


def open_beneath(root: int, path: str, *, file: bool = True, folder: bool = False) -> int:
    """A descriptor of ``path``, opened from the folder ``root`` one component at a time with ``O_NOFOLLOW``.

    ``path`` must be relative without ``..``; every component before the last must be a folder,
    the last a regular file with one name (``file``) or a folder (``folder``).

    Raises
    ------
    ValueError
        A component is a symbolic link, missing or of the wrong kind, or the file has several
        names (one line naming the path).
    """
    parts = PurePosixPath(path).parts
    if not parts or PurePosixPath(path).is_absolute() or ".." in parts:
        raise ValueError(f"{path!r} is not a relative path inside the current directory")
    fd = os.dup(root)
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            shown = str(PurePosixPath(*parts[:index + 1]))
            inner = _open_entry(part, fd, shown, file=file and last, folder=folder or not last)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _copy(source: int, target: Path) -> None:
    """Write the bytes of the descriptor ``source`` into the new file ``target`` (created exclusively)."""
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        while chunk := os.read(source, _CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view):]
    finally:
        os.close(out)


def stage_inputs(inputs: Sequence[tuple[str, bool]], work: Path) -> None:
    """Copy each input, a relative path inside the current directory and whether it may be a folder, to
    the same relative path under ``work`` (so the argv and its hash are unchanged); of a folder, the
    files :data:`FOLDER_FILES` it holds.

    Raises
    ------
    ValueError
        An input is refused (:func:`open_beneath`; one line naming it).
    """
    root = os.open(".", _READ | os.O_DIRECTORY)
    try:
        for path, may_be_folder in inputs:
            try:
                _stage(root, path, may_be_folder, work)
            except ValueError as error:
                raise ValueError(f"the document's input {error}; refusing to rerun it") from None
    finally:
        os.close(root)


def _stage(root: int, path: str, may_be_folder: bool, work: Path) -> None:
    target = work.joinpath(*PurePosixPath(path).parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = open_beneath(root, path, folder=may_be_folder)
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            _copy(fd, target)
            return
        target.mkdir()
        for name in FOLDER_FILES:
            try:
                os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # the command reports the missing file itself
            inner = _open_entry(name, fd, str(PurePosixPath(*PurePosixPath(path).parts, name)))
            try:
                _copy(inner, target / name)
            finally:
                os.close(inner)
    finally:
        os.close(fd)
