"""fio through gridbench's client/server run against the same job files run by hand.

Makes a lab of 3 hosts (``gridbench lab up``, root). A first gridbench run (not counted)
writes the job files; then ROUNDS rounds, each running both sides once, the side that goes
first alternating from round to round:

- gridbench: an io run whose ``clients:`` block has the 3 hosts write then read at once
  (fio --server in each namespace, fio --client from here); its aggregate per test (all
  bytes ÷ the slowest client's run time, ``metrics.clients.series``);
- by hand: the job files of that first run, run with plain ``fio`` in each host's namespace
  (``ip netns exec``), each on its own file, started at the same moment (each waits, one
  exec away from fio, until all three are ready); the same aggregate.

Before each side: sync, the page cache dropped, 3 s of quiet (:func:`settle`). Each client
moves SIZE (default 1 GiB) with the page cache out of the way: ``--cache
direct`` (default: O_DIRECT, as ``cache: direct``) or ``--cache flush`` (buffered, the
write's time includes fio's ``end_fsync``, as ``include_flush: true``; the read is then
from the page cache on both sides). Prints each round's figures and ratio, then per test
the median of the rounds' ratios gridbench ÷ by hand (target: at least 0.95), of the
aggregate and of the sum of the clients' own rates.

    .venv/bin/python bench/bench_io_clients.py [--size 1G] [--rounds 8] [--cache direct]
        [--dir DIR]   (the target: a disk that takes O_DIRECT; default a folder in /var/tmp)
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
from pathlib import Path

from gridbench.hosts.inventory import load_inventory
from gridbench.hosts.lab.book import STATE_ROOT
from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.parse import parse_fio_text
from gridbench.io.runner import IoRunner

LAB = "bioc"
TESTS = ("write", "read")
#: each test's aggregate ("last done": all bytes ÷ the slowest client's run time), and the
#: sum of the clients' own rates, which a straggler weighs on less
SUM = " sum of rates"
FIGURES = tuple(f"{t}{k}" for t in TESTS for k in ("", SUM))
SETTLE_S = 3.0
#: run in each namespace before fio: says it is ready, waits for "go", then becomes fio, so
#: the three by-hand fio processes start together as fio's client starts its servers' jobs
BARRIER = (
    "import os, sys; print('ready', flush=True); sys.stdin.readline(); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def lab(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "gridbench.cli", "lab", *args, "--name", LAB],
                   check=True, capture_output=True, text=True)  # fmt: skip


def settle() -> None:
    """What the last side left is written out and forgotten, and the disk given a moment:
    otherwise whichever side goes first in a round pays for the previous round's writeback
    and file removal (seen as a round's first write at half the second's)."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    time.sleep(SETTLE_S)


def gridbench_run(
    inv: Path, target: Path, size: str, cache: str, out: Path
) -> tuple[dict[str, float], Path]:
    """One io run of the 3 hosts at once: the aggregate kB/s per test, and the run."""
    settle()
    mode = "direct" if cache == "direct" else "none"
    text = (
        f"name: bench-clients\ntargets: [{{name: t, path: {target}}}]\nrepetitions: 1\n"
        f"cache: {mode}\niozone: {{enabled: false, file_size: {size}, record_size: 1M, "
        f"include_flush: {'true' if cache == 'flush' else 'false'}}}\n"
        f"clients:\n  inventory: {inv}\n  hosts: [{LAB}-1, {LAB}-2, {LAB}-3]\n  counts: [3]\n"
        "  same_file: false\n  compare_hosts: false\n"
    )
    spec, data = load_io_spec_text(text, "bench.yaml")
    run = IoRunner(spec, data, out).execute()
    m = analyze_and_write(run)
    series = m["clients"]["series"]
    got = {e["test"]: e["last_done_kbps"]["mean"] for e in series}
    got |= {f"{e['test']}{SUM}": e["sum_kbps"]["mean"] for e in series}
    if set(got) != set(FIGURES):  # a host lost (fio's client gave up on it): said, not hidden
        raise RuntimeError(f"{run.path}: only {sorted(got)}; lost {m['clients']['lost']}")
    return got, run.path


def job_files(run: Path) -> dict[str, str]:
    """The job file gridbench sent every host, per test."""
    return {t: next((run / "raw").glob(f"*-series3-{t}.fio")).read_text() for t in TESTS}


def by_hand(inv: Path, jobs: dict[str, str], target: Path) -> dict[str, float]:
    """The job files, plain fio in each namespace at once, each host on its own file (as
    fio's client mode names it: ADDRESS.FILE); the aggregate kB/s per test."""
    settle()
    hosts = load_inventory(inv).hosts
    work = target / "by-hand"
    work.mkdir(exist_ok=True)
    out: dict[str, float] = {}
    for test in TESTS:
        procs = []
        for h in hosts.values():
            lines = []
            for x in jobs[test].splitlines():
                if x.startswith("directory="):
                    x = f"directory={work}"
                elif x.startswith("filename="):
                    x = f"filename={h.address}.{x.partition('=')[2]}"
                lines.append(x)
            jf = work / f"{h.name}-{test}.fio"
            jf.write_text("\n".join(lines) + "\n")
            argv = ["ip", "netns", "exec", str(h.netns), sys.executable, "-c", BARRIER]
            argv += ["fio", "--output-format=json+", str(jf)]
            procs.append(
                subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            )
        for p in procs:  # every fio is one exec away: then all start at the same moment
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [r for p in procs for r in parse_fio_text(p.communicate()[0], "by hand")]
        assert len(results) == len(hosts), f"{test}: {len(results)} results by hand"
        out[test] = sum(r.bytes for r in results) / 1024 / max(r.runtime_s for r in results)
        out[f"{test}{SUM}"] = sum(r.kbps for r in results)
    shutil.rmtree(work)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1G", help="each client's file (default 1G)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--cache", choices=("direct", "flush"), default="direct")
    ap.add_argument("--dir", type=Path, default=Path("/var/tmp"), help="where the target is")
    a = ap.parse_args()
    lab("up", "--hosts", "3")
    base = Path(tempfile.mkdtemp(prefix="bench-io-clients-", dir=a.dir))
    inv = STATE_ROOT / LAB / "inventory.yaml"
    ratios: dict[str, list[float]] = {t: [] for t in FIGURES}
    figures: dict[str, dict[str, list[float]]] = {"gridbench": {}, "by hand": {}}
    try:
        (base / "t0").mkdir()
        _, first = gridbench_run(inv, base / "t0", a.size, a.cache, base / "results")
        jobs = job_files(first)
        for k in range(a.rounds):
            target = base / f"t{k + 1}"
            target.mkdir()
            try:
                if k % 2:  # by hand first in every other round
                    h = by_hand(inv, jobs, target)
                    g, _ = gridbench_run(inv, target, a.size, a.cache, base / "results")
                else:
                    g, _ = gridbench_run(inv, target, a.size, a.cache, base / "results")
                    h = by_hand(inv, jobs, target)
            except (RuntimeError, AssertionError) as exc:
                print(f"round {k + 1} not counted: {exc}", flush=True)
                continue
            finally:
                shutil.rmtree(target, ignore_errors=True)
            for t in FIGURES:
                ratios[t].append(g[t] / h[t])
                figures["gridbench"].setdefault(t, []).append(g[t])
                figures["by hand"].setdefault(t, []).append(h[t])
            said = [
                f"{t} gridbench {g[t]:,.0f} kB/s, by hand {h[t]:,.0f} kB/s ({g[t] / h[t]:.3f})"
                for t in TESTS
            ]
            first_side = "by hand" if k % 2 else "gridbench"
            print(f"round {k + 1} ({first_side} first): " + "; ".join(said), flush=True)
    finally:
        lab("down")
        shutil.rmtree(base, ignore_errors=True)
    counted = len(ratios[TESTS[0]])
    print(f"{counted} of {a.rounds} rounds counted, {a.size} per client, 3 clients, "
          f"cache {a.cache}:")  # fmt: skip
    for t in FIGURES if counted else ():
        r = statistics.median(ratios[t])
        gm = statistics.median(figures["gridbench"][t])
        hm = statistics.median(figures["by hand"][t])
        ok = "ok" if r >= 0.95 else "BELOW TARGET"
        print(f"{t}: median ratio {r:.3f} (rounds {min(ratios[t]):.3f}..{max(ratios[t]):.3f}; "
              f"medians gridbench {gm:,.0f} kB/s, by hand {hm:,.0f} kB/s) "
              f"target >= 0.95: {ok}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
