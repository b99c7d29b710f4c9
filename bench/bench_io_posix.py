"""Benchmark: what gridbench adds to the native tools of the storage-in-depth phases.

On a local directory, in one run, each measured --repeat times (median):

1. conformance: ``pjdfstest`` run by hand (the baseline) against ``gridbench io run`` of
   a conformance-only spec (pjdfstest plus configuration, parsing, analysis, reports);
2. replay: ``fio --read_iolog`` of a recorded trace by hand against ``gridbench io run``
   of a replay-only spec with one stream without O_SYNC (recording, layout, replay,
   analysis, reports);
3. in process: parsing pjdfstest's output and the conformance table, per 1,000 cases.

Measured here (2 shared cores, busy): pjdfstest 4.8 s by hand, 11.0 s through gridbench
(2.3x); replay 2.4 s by hand, 8.8 s through gridbench (3.6x); parsing 9.7 ms per 1,000
cases. The difference is a fixed cost of about 6 s per ``gridbench io run`` (the
command's start, the results directory, analysis and the HTML/CSV/JSON reports), not a
cost per case or per I/O.

Needs root (pjdfstest switches users) and pjdfstest (scripts/install-pjdfstest). Run:

    .venv/bin/python bench/bench_io_posix.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gridbench.io.conformance import parse_output
from gridbench.io.posix_analysis import conformance

GRIDBENCH = str(Path(sys.executable).with_name("gridbench"))
CONFIG = """[features]\nposix_fallocate = {}\nutimensat = {}\n[settings]\nnaptime = 0.01
allow_remount = false\nexpected_failures = []\n[dummy_auth]
entries = [["nobody", "nogroup"], ["daemon", "daemon"]]\n"""
SPEC = """name: bench-{what}\ntargets: [{{name: a, path: {path}}}]\nrepetitions: 1
iozone: {{enabled: false}}\n{section}\n"""


def timed(fn: Callable[[], object], repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def run(argv: list[str], **kw: object) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
    if p.returncode not in (0, 1):
        sys.exit(f"{argv[0]} failed: {p.stderr[-500:]}")
    return str(p.stdout)


def fresh(base: Path, name: str) -> Path:
    d = base / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(mode=0o755)
    return d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: pjdfstest switches users")
    pjd = shutil.which("pjdfstest") or "/usr/local/bin/pjdfstest"
    base = Path(tempfile.mkdtemp(prefix="gbb-", dir="/tmp"))
    base.chmod(0o755)
    env = {**os.environ, "GRIDBENCH_RESULTS": str(base / "results"), "NO_COLOR": "1"}
    try:
        cfg = base / "c.toml"
        cfg.write_text(CONFIG)
        out: list[str] = []

        def native_pjd() -> None:
            out.append(run([pjd, "-c", str(cfg), "-p", str(fresh(base, "n"))]))

        def gb(what: str, section: str) -> Callable[[], None]:
            spec = base / f"{what}.yaml"
            spec.write_text(SPEC.format(what=what, path=base / "g", section=section))
            return lambda: (fresh(base, "g"), run([GRIDBENCH, "io", "run", str(spec)], env=env))

        conf_native = timed(native_pjd, args.repeat)
        conf_gb = timed(gb("conf", "conformance: {enabled: true}"), args.repeat)
        # by hand, the same three fio runs gridbench makes: record, lay out, replay (O_DIRECT,
        # gridbench's default cache mode)
        d = base / "r"
        log = base / "trace.log"
        record = [
            "fio",
            "--name=rec",
            f"--directory={d}",
            "--filename=w.dat",
            "--rw=randrw",
            "--rwmixread=70",
            "--size=16M",
            "--bs=4k",
            f"--write_iolog={log}",
        ]
        layout = [
            "fio",
            "--name=lay",
            f"--filename={d}/r.dat",
            "--rw=write",
            "--size=16M",
            "--bs=4k",
        ]
        replay = [
            "fio",
            "--name=rep",
            f"--read_iolog={log}",
            f"--replay_redirect={d}/r.dat",
            "--replay_no_stall=1",
            "--direct=1",
            "--output-format=json+",
        ]

        def by_hand() -> None:
            fresh(base, "r")
            for argv in (record, layout, replay):
                run(argv)

        rep_native = timed(by_hand, args.repeat)
        section = "replay: {enabled: true, size: 16M, streams: [1], sync: [false]}"
        rep_gb = timed(gb("replay", section), args.repeat)
        text = out[0] * 3  # about 1,200 cases
        n = len(parse_output(text, "bench"))

        def analyse() -> None:
            recs = [{"target": "a", **r} for r in parse_output(text, "bench")]
            conformance(recs, None, [])

        per_k = timed(analyse, args.repeat) / n * 1000
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(
        f"conformance: pjdfstest by hand {conf_native:.2f} s, gridbench io run "
        f"{conf_gb:.2f} s (ratio {conf_gb / conf_native:.1f}x, +{conf_gb - conf_native:.2f} s)"
    )
    print(
        f"replay (16M randrw trace, 1 stream; record, lay out, replay): the same fio runs by "
        f"hand {rep_native:.2f} s, gridbench io run {rep_gb:.2f} s "
        f"(ratio {rep_gb / rep_native:.1f}x, +{rep_gb - rep_native:.2f} s)"
    )
    print(f"parse + conformance table: {per_k * 1000:.1f} ms per 1,000 cases ({n} cases)")


if __name__ == "__main__":
    main()
