"""A small, real batch-system CLI for trying the command backend without a scheduler.

``python -m gridbench.jobflow.backends.command.demo [global options] COMMAND ...`` manages jobs as
detached processes whose state lives in files under a state directory::

    init                       create the state directory ("the credential")
    submit [--name N] [--hold S] -- PROGRAM ARG...
                               start a job; prints "Submitted demo job <id>"
    status [ID ...]            one line "<id> <STATE> <exit code or ->" per known job
                               (every job when no id is given; ids may be comma-joined)
    cancel ID ...              cancel jobs
    output ID                  print a job's output (stdout and stderr)
    queue                      print the ids of jobs that have not ended

States are PENDING, RUNNING, COMPLETED, FAILED and CANCELLED (Slurm's names). Global
options make it behave like a slow or heavy client: ``--delay S`` sleeps before acting
(a JVM starting), ``--burn S`` spends S seconds of CPU. ``--state-dir`` defaults to
``$GRIDBENCH_DEMO_DIR`` or ``<tmp>/gridbench-demo-<uid>``.

Each job runs under its own supervisor process (``_run``), in a new session, detached
from the CLI, so it is not a child of whoever called the CLI. Only the standard library is
used, so a call costs one interpreter start.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

STATES = ("PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED")


def _default_dir() -> str:
    env = os.environ.get("GRIDBENCH_DEMO_DIR")
    if env:
        return env
    return str(Path(tempfile.gettempdir()) / f"gridbench-demo-{os.getuid()}")


def _write(path: Path, text: str) -> None:
    """Atomic write: readers see the old file or the whole new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive; /proc tells (Linux), elsewhere assume alive
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def job_state(job: Path) -> tuple[str, str]:
    """(state, exit code or "-") of one job directory."""
    if (job / "cancelled").exists():
        return "CANCELLED", "-"
    exit_file = job / "exit"
    if exit_file.exists():
        code = exit_file.read_text().strip()
        return ("COMPLETED" if code == "0" else "FAILED"), code
    pid_file = job / "pid"
    if pid_file.exists() and not _alive(int(pid_file.read_text())):
        if exit_file.exists():  # it ended between the two checks
            return job_state(job)
        return "FAILED", "-"  # the supervisor died without recording an exit code
    if (job / "started").exists():
        return "RUNNING", "-"
    return "PENDING", "-"


def _jobs(state_dir: Path, ids: list[str]) -> tuple[list[Path], list[str]]:
    """Known job directories for ``ids`` (all jobs when empty) and the unknown ids."""
    if not ids:
        return sorted(p for p in state_dir.iterdir() if (p / "argv.json").exists()), []
    known, unknown = [], []
    for i in (x for arg in ids for x in arg.split(",") if x):
        p = state_dir / i
        if i.isalnum() and (p / "argv.json").exists():
            known.append(p)
        else:
            unknown.append(i)
    return known, unknown


def cmd_init(state_dir: Path, _: argparse.Namespace) -> int:
    state_dir.mkdir(parents=True, exist_ok=True)
    print(f"ready {state_dir}")
    return 0


def cmd_submit(state_dir: Path, a: argparse.Namespace) -> int:
    argv = list(a.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("submit: no program given", file=sys.stderr)
        return 2
    state_dir.mkdir(parents=True, exist_ok=True)
    while True:
        jid = uuid.uuid4().hex[:12]
        job = state_dir / jid
        try:
            job.mkdir()
            break
        except FileExistsError:
            continue
    _write(job / "name", a.name or "")
    _write(job / "hold", str(a.hold))
    _write(job / "argv.json", json.dumps(argv))
    me = [
        sys.executable,
        "-m",
        "gridbench.jobflow.backends.command.demo",
        "--state-dir",
        str(state_dir),
    ]
    sup = subprocess.Popen(
        [*me, "_run", jid],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    _write(job / "pid", str(sup.pid))
    print(f"Submitted demo job {jid}")
    return 0


def cmd_run(state_dir: Path, a: argparse.Namespace) -> int:
    """The supervisor of one job: wait out the hold, run the program, record its exit."""
    job = state_dir / a.id
    time.sleep(float((job / "hold").read_text() or 0))
    if (job / "cancelled").exists():
        return 0
    argv = json.loads((job / "argv.json").read_text())
    _write(job / "started", str(time.time_ns()))
    with open(job / "out", "wb") as out:
        try:
            code = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        except OSError as exc:
            out.write(f"cannot start {argv[0]!r}: {exc.strerror or exc}\n".encode())
            code = 127
    _write(job / "exit", str(code))
    return 0


def cmd_status(state_dir: Path, a: argparse.Namespace) -> int:
    if not state_dir.is_dir():
        print(f"no state directory {state_dir} (run init)", file=sys.stderr)
        return 1
    known, unknown = _jobs(state_dir, a.ids)
    for i in unknown:
        print(f"status: unknown job id {i}", file=sys.stderr)
    for job in known:
        state, code = job_state(job)
        print(f"{job.name} {state} {code}")
    return 1 if unknown and not known else 0


def cmd_cancel(state_dir: Path, a: argparse.Namespace) -> int:
    known, unknown = _jobs(state_dir, a.ids)
    for i in unknown:
        print(f"cancel: unknown job id {i}", file=sys.stderr)
    for job in known:
        state, _ = job_state(job)
        if state in ("COMPLETED", "FAILED", "CANCELLED"):
            print(f"{job.name} already {state}")
            continue
        _write(job / "cancelled", str(time.time_ns()))
        with contextlib.suppress(OSError, ValueError):
            os.killpg(int((job / "pid").read_text()), signal.SIGTERM)
        print(f"cancelled {job.name}")
    return 1 if unknown else 0


def cmd_output(state_dir: Path, a: argparse.Namespace) -> int:
    known, unknown = _jobs(state_dir, [a.id])
    if unknown or not known:
        print(f"output: unknown job id {a.id}", file=sys.stderr)
        return 1
    out = known[0] / "out"
    if out.exists():
        sys.stdout.buffer.write(out.read_bytes())
    return 0


def cmd_queue(state_dir: Path, _: argparse.Namespace) -> int:
    if state_dir.is_dir():
        for job in _jobs(state_dir, [])[0]:
            if job_state(job)[0] in ("PENDING", "RUNNING"):
                print(job.name)
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m gridbench.jobflow.backends.command.demo",
        description="A tiny batch system of detached processes (for the command backend).",
    )
    ap.add_argument("--state-dir", default="", help="where jobs live (default: see module)")
    ap.add_argument("--delay", type=float, default=0.0, help="sleep S seconds before acting")
    ap.add_argument("--burn", type=float, default=0.0, help="spend S seconds of CPU first")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("init").set_defaults(func=cmd_init)
    p = sub.add_parser("submit")
    p.add_argument("--name", default="")
    p.add_argument("--hold", type=float, default=0.0, help="stay PENDING this long")
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_submit)
    p = sub.add_parser("status")
    p.add_argument("ids", nargs="*")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("cancel")
    p.add_argument("ids", nargs="+")
    p.set_defaults(func=cmd_cancel)
    p = sub.add_parser("output")
    p.add_argument("id")
    p.set_defaults(func=cmd_output)
    sub.add_parser("queue").set_defaults(func=cmd_queue)
    p = sub.add_parser("_run")
    p.add_argument("id")
    p.set_defaults(func=cmd_run)
    return ap


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.delay > 0:
        time.sleep(a.delay)
    if a.burn > 0:
        t0 = time.process_time()
        while time.process_time() - t0 < a.burn:
            pass
    state_dir = Path(a.state_dir or _default_dir()).expanduser()
    code: int = a.func(state_dir, a)
    return code


if __name__ == "__main__":
    sys.exit(main())
