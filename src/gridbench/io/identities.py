"""Identity and permission checks (the DEISA functional findings): access to a target as
named local users, not only as the one who runs gridbench.

- **access matrix**: root lays out, for each user, directories and files of four modes
  (private 0700/0600, shared 0755/0644, traverse-only 0711/0644, open 0777/0666), owned
  by that user; every user then tries to read, write, list and traverse each. What the
  permission bits say (the owner's, the group's or the others' bits) is the expected
  answer; a file system that answers otherwise (identity squashed, no mapping, a FUSE
  mount closed to other users) fails the check.
- **ownership across copy and backup/restore**: ``cp -a`` and ``tar`` (numeric owners)
  of the users' files inside the target; owner, group and mode must survive.
- **invisible until root visits**: a directory made through the peer path (or by root),
  looked up as a user before root has looked at it through the target.

The probes are coreutils (``head``, ``truncate``, ``ls``, ``stat``) run as the user with
an argv list and no shell. Needs root: without it every check is "not run".
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridbench.errors import SpecError
from gridbench.io.model_posix import IdentitySpec
from gridbench.io.safety import PreparedTarget

#: (kind, directory mode, file mode) laid out per user.
LAYOUT: tuple[tuple[str, int, int], ...] = (
    ("private", 0o700, 0o600),
    ("shared", 0o755, 0o644),
    ("traverse-only", 0o711, 0o644),
    ("open", 0o777, 0o666),
)
OPS = ("read", "write", "list", "traverse")
PROBE_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
PROBE_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]


def check_users(names: Sequence[str]) -> list[User]:
    """The users, looked up; an unknown user, root, or a name given twice is a spec error."""
    out = []
    for n in names:
        try:
            pw = pwd.getpwnam(n)
        except KeyError:
            raise SpecError(
                f"no local user {n!r}",
                where="identities.users",
                fix="name existing local users (getent passwd NAME), or create them first",
            ) from None
        if pw.pw_uid == 0:
            raise SpecError(
                f"{n!r} is root", where="identities.users", fix="name users other than root"
            )
        out.append(User(n, pw.pw_uid, pw.pw_gid, tuple(os.getgrouplist(n, pw.pw_gid))))
    if len({u.uid for u in out}) != len(out):
        raise SpecError(
            "the same user is named twice", where="identities.users", fix="name distinct users"
        )
    return out


def allowed(mode: int, owner: int, group: int, user: User, bits: int) -> bool:
    """Whether ``user`` has all of ``bits`` (4 r, 2 w, 1 x) on an object with ``mode``,
    ``owner`` and ``group``: the owner's bits, else the group's, else the others' (POSIX)."""
    if user.uid == owner:
        have = (mode >> 6) & 7
    elif group in user.groups:
        have = (mode >> 3) & 7
    else:
        have = mode & 7
    return have & bits == bits


def expected(op: str, dmode: int, fmode: int, owner: User, user: User) -> bool:
    """What the bits allow ``user`` for ``op`` on a directory (and its file) of ``owner``."""

    def on_dir(bits: int) -> bool:
        return allowed(dmode, owner.uid, owner.gid, user, bits)

    def on_file(bits: int) -> bool:
        return allowed(fmode, owner.uid, owner.gid, user, bits)

    return {
        "read": on_dir(1) and on_file(4),
        "write": on_dir(1) and on_file(2),
        "list": on_dir(4 | 1),  # ls stats what it lists: needs search as well
        "traverse": on_dir(1),
    }[op]


def _argv(op: str, d: Path) -> list[str]:
    f = str(d / "f")
    return {
        "read": ["head", "-c", "1", f],
        "write": ["truncate", "--no-create", "--size=+0", f],
        "list": ["ls", "-A", str(d)],
        "traverse": ["stat", "--format=%i", f],
    }[op]


def probe(argv: list[str], user: User) -> str:
    """``allowed``, ``denied``, ``missing`` or ``error: ...`` for ``argv`` run as ``user``."""
    try:
        p = subprocess.run(
            argv,
            user=user.uid,
            group=user.gid,
            extra_groups=list(user.groups),
            capture_output=True,
            text=True,
            errors="replace",
            env=PROBE_ENV,
            cwd="/",
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"error: no answer within {PROBE_TIMEOUT_S:g} s"
    if p.returncode == 0:
        return "allowed"
    err = p.stderr.strip()
    if "Permission denied" in err or "Operation not permitted" in err:
        return "denied"
    if "No such file" in err:
        return "missing"
    return f"error: {err[-200:]}"


def _check(
    name: str, user: str, ok: bool | None, exp: str, act: str, detail: str
) -> dict[str, Any]:
    return {"check": name, "user": user, "ok": ok, "expected": exp, "actual": act, "detail": detail}


def _lay_out(base: Path, users: Sequence[User]) -> None:
    for u in users:
        for kind, dmode, fmode in LAYOUT:
            d = base / f"{u.name}-{kind}"
            d.mkdir()
            (d / "f").write_bytes(b"gridbench identity check\n")
            for path, mode in ((d / "f", fmode), (d, dmode)):
                os.chown(path, u.uid, u.gid)
                os.chmod(path, mode)


def access_matrix(base: Path, users: Sequence[User]) -> list[dict[str, Any]]:
    """Every user against every user's four layouts and four operations."""
    _lay_out(base, users)
    out = []
    for owner in users:
        for kind, dmode, fmode in LAYOUT:
            d = base / f"{owner.name}-{kind}"
            for user in users:
                for op in OPS:
                    want = expected(op, dmode, fmode, owner, user)
                    got = probe(_argv(op, d), user)
                    exp = "allowed" if want else "denied"
                    row = _check(
                        "access",
                        user.name,
                        got == exp,
                        exp,
                        got,
                        "as the permission bits say" if got == exp else "bits not honoured",
                    )
                    row["object"] = f"{owner.name}'s {kind} ({dmode:o}/{fmode:o})"
                    row["op"] = op
                    out.append(row)
    return out


def _meta(p: Path) -> tuple[int, int, int]:
    st = p.lstat()
    return st.st_uid, st.st_gid, st.st_mode & 0o7777


def preserved(base: Path, users: Sequence[User]) -> list[dict[str, Any]]:
    """Owner, group and mode of each user's files after ``cp -a`` and a tar backup and
    restore inside the target (the layout of :func:`access_matrix` must exist)."""
    src = sorted(p for p in base.iterdir() if p.is_dir())
    copy, arch, restored = (
        base.parent / "id-copy",
        base.parent / "id.tar",
        base.parent / "id-restored",
    )
    restored.mkdir()
    steps = {
        "copy (cp -a)": (["cp", "-a", str(base), str(copy)], copy),
        "backup/restore (tar)": (
            ["tar", "--numeric-owner", "-cpf", str(arch), "-C", str(base), "."],
            restored,
        ),
    }
    out = []
    for what, (argv, dest) in steps.items():
        p = subprocess.run(argv, capture_output=True, text=True, check=False, env=PROBE_ENV)
        if p.returncode == 0 and dest is restored:
            p = subprocess.run(
                ["tar", "--numeric-owner", "--same-owner", "-xpf", str(arch), "-C", str(restored)],
                capture_output=True,
                text=True,
                check=False,
                env=PROBE_ENV,
            )
        for u in users:
            mine = [d for d in src if d.name.startswith(f"{u.name}-")]
            lost = [
                f"{d.name}{sub}"
                for d in mine
                for sub in ("", "/f")
                if p.returncode != 0
                or not (dest / d.name / sub.lstrip("/")).exists()
                or _meta(dest / d.name / sub.lstrip("/")) != _meta(d / sub.lstrip("/"))
            ]
            detail = (
                p.stderr.strip()[-200:]
                if p.returncode
                else ("owner, group and mode kept" if not lost else "changed: " + ", ".join(lost))
            )
            out.append(
                _check(
                    f"{what} keeps ownership",
                    u.name,
                    not lost,
                    "kept",
                    "kept" if not lost else "changed",
                    detail,
                )
            )
    return out


def root_visit(target: Path, peer: Path | None, user: User) -> dict[str, Any]:
    """The seed's "a user cannot see a directory until root has visited it": a directory
    made through the peer (else by root through the target), looked up first as a user."""
    name = "visit-me"
    maker = (peer if peer is not None else target) / name
    maker.mkdir(mode=0o755)
    (maker / "f").write_bytes(b"x")
    os.chmod(maker, 0o755)
    os.chmod(maker / "f", 0o644)
    path = target / name
    before = probe(["stat", "--format=%i", str(path / "f")], user)
    if before == "allowed":
        return _check(
            "visible before root visits", user.name, True, "allowed", before, "seen at once"
        )
    os.listdir(path)  # root visits
    after = probe(["stat", "--format=%i", str(path / "f")], user)
    detail = (
        "invisible until root visited it (the DEISA finding)"
        if after == "allowed"
        else f"not visible to {user.name} even after root visited it"
    )
    return _check("visible before root visits", user.name, False, "allowed", before, detail)


def run_identity_checks(
    spec: IdentitySpec, prepared: PreparedTarget, peer: str | None
) -> list[dict[str, Any]]:
    """Every identity check on one target, in its work directory (removed afterwards)."""
    users = check_users(spec.users)
    if os.geteuid() != 0:
        return [_check("identity checks", "", None, "", "", "not run: switching users needs root")]
    top = prepared.workdir / "identities"
    top.mkdir()
    os.chmod(top, 0o755)
    base = top / "tree"
    base.mkdir()
    os.chmod(base, 0o755)
    try:
        out = access_matrix(base, users)
        out += preserved(base, users)
        peer_dir = None
        if peer is not None:
            peer_dir = Path(peer) / prepared.workdir.name / "identities"
        out.append(root_visit(top, peer_dir if peer_dir and peer_dir.is_dir() else None, users[0]))
        return out
    finally:
        shutil.rmtree(top, ignore_errors=True)
