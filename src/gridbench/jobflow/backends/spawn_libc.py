"""``posix_spawn`` in another working directory, through the C library.

:func:`os.posix_spawn` has no "change directory" file action, but glibc (2.29+) and musl
(1.1.24+) have ``posix_spawn_file_actions_addchdir_np``. :mod:`gridbench.jobflow.backends.spawn`
calls this module only for a child that must start somewhere other than the current
directory (the command backend's ``workdir``); everything else about the child (its
descriptors, signal mask and defaults, a new session) is set exactly as ``os.posix_spawn``
would set it, and a directory that cannot be entered is an OSError from the spawn, as with
Popen's ``cwd``.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any

# glibc's and musl's posix_spawnattr_setflags bits
_SETSIGDEF = 0x04
_SETSIGMASK = 0x08
_SETSID = 0x80
# bytes for each opaque C structure: glibc's file actions take 80, its attributes 336 and a
# sigset_t 128 (musl's are smaller); generous buffers need no per-libc sizes
_OPAQUE = 1024


@functools.cache
def _libc() -> Any:
    """The C library's spawn functions, or None where chdir actions do not exist."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.posix_spawn_file_actions_addchdir_np  # noqa: B018 - probing for the symbol
    except (OSError, AttributeError):
        return None
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    for name, args in {
        "posix_spawn_file_actions_init": [vp],
        "posix_spawn_file_actions_destroy": [vp],
        "posix_spawn_file_actions_addopen": [vp, i, cp, i, ctypes.c_uint],
        "posix_spawn_file_actions_adddup2": [vp, i, i],
        "posix_spawn_file_actions_addclose": [vp, i],
        "posix_spawn_file_actions_addchdir_np": [vp, cp],
        "posix_spawnattr_init": [vp],
        "posix_spawnattr_destroy": [vp],
        "posix_spawnattr_setflags": [vp, ctypes.c_short],
        "posix_spawnattr_setsigmask": [vp, vp],
        "posix_spawnattr_setsigdefault": [vp, vp],
        "sigemptyset": [vp],
        "sigaddset": [vp, i],
        "posix_spawn": [ctypes.POINTER(ctypes.c_int), cp, vp, vp, vp, vp],
    }.items():
        fn = getattr(libc, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    return libc


def available() -> bool:
    """Whether a child can be spawned in another directory."""
    return _libc() is not None


def _cstrings(items: Sequence[bytes]) -> Any:
    """A NULL-terminated ``char *[]``; an embedded NUL is a ValueError, as with os.*."""
    if any(b"\0" in x for x in items):
        raise ValueError("embedded null byte")
    return (ctypes.c_char_p * (len(items) + 1))(*items, None)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise OSError(rc, os.strerror(rc), what)


def posix_spawn_in(
    cwd: str,
    path: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    file_actions: Sequence[tuple[Any, ...]],
    setsigdef: Sequence[int],
    setsid: bool,
) -> int:
    """``os.posix_spawn(path, argv, env, file_actions=..., setsigmask=(), setsigdef=...,
    setsid=...)`` that changes to ``cwd`` after the file actions; the child's pid."""
    libc = _libc()
    if libc is None:
        raise OSError(0, "posix_spawn cannot change directory with this C library", cwd)
    if any("=" in k for k in env):
        raise ValueError("illegal environment variable name")
    c_argv = _cstrings([os.fsencode(a) for a in argv])
    c_env = _cstrings([os.fsencode(f"{k}={v}") for k, v in env.items()])
    fa, attr = ctypes.create_string_buffer(_OPAQUE), ctypes.create_string_buffer(_OPAQUE)
    mask, dflt = ctypes.create_string_buffer(_OPAQUE), ctypes.create_string_buffer(_OPAQUE)
    _check(libc.posix_spawn_file_actions_init(fa), "posix_spawn_file_actions_init")
    try:
        _check(libc.posix_spawnattr_init(attr), "posix_spawnattr_init")
        try:
            for action in file_actions:
                _add_action(libc, fa, action)
            _check(libc.posix_spawn_file_actions_addchdir_np(fa, os.fsencode(cwd)), "chdir")
            libc.sigemptyset(mask)
            libc.sigemptyset(dflt)
            for sig in setsigdef:
                libc.sigaddset(dflt, sig)
            _check(libc.posix_spawnattr_setsigmask(attr, mask), "setsigmask")
            _check(libc.posix_spawnattr_setsigdefault(attr, dflt), "setsigdefault")
            flags = _SETSIGDEF | _SETSIGMASK | (_SETSID if setsid else 0)
            _check(libc.posix_spawnattr_setflags(attr, flags), "setflags")
            pid = ctypes.c_int()
            rc = libc.posix_spawn(ctypes.byref(pid), os.fsencode(path), fa, attr, c_argv, c_env)
            if rc != 0:  # errno of the exec or of the chdir, as Popen reports them
                raise OSError(rc, os.strerror(rc), path)
            return pid.value
        finally:
            libc.posix_spawnattr_destroy(attr)
    finally:
        libc.posix_spawn_file_actions_destroy(fa)


def _add_action(libc: Any, fa: Any, action: tuple[Any, ...]) -> None:
    """One of os.posix_spawn's file actions, added to the C file-actions object."""
    kind, *args = action
    if kind == os.POSIX_SPAWN_OPEN:
        fd, path, flags, mode = args
        rc = libc.posix_spawn_file_actions_addopen(fa, fd, os.fsencode(path), flags, mode)
    elif kind == os.POSIX_SPAWN_DUP2:
        rc = libc.posix_spawn_file_actions_adddup2(fa, *args)
    elif kind == os.POSIX_SPAWN_CLOSE:
        rc = libc.posix_spawn_file_actions_addclose(fa, *args)
    else:
        raise ValueError(f"unknown file action {kind!r}")
    _check(rc, "posix_spawn file action")
