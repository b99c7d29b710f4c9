"""fio through gridbench's client/server run against the same job files run by hand.

Makes a lab of 3 hosts (``gridbench lab up``, root), then, alternating, ROUNDS times:
- gridbench: an io run whose ``clients:`` block has the 3 hosts write then read at once
  (fio --server in each namespace, fio --client from here); its aggregate (all bytes ÷ the
  slowest client's run time) per test;
- by hand: the job files that run wrote (raw/*.fio), run with plain ``fio`` in each
  host's namespace at the same moment (``ip netns exec``), each on its own file; the same
  aggregate from their JSON.
Prints each figure and the ratio gridbench ÷ by hand per test (target: at least 0.95).

    .venv/bin/python bench/bench_io_clients.py [--size 64M] [--rounds 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from gridbench.hosts.inventory import load_inventory
from gridbench.hosts.lab.book import STATE_ROOT
from gridbench.io.load import load_io_spec_text
from gridbench.io.metrics import analyze_and_write
from gridbench.io.parse import parse_fio_text
from gridbench.io.runner import IoRunner

LAB = "bioc"


def lab(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "gridbench.cli", "lab", *args, "--name", LAB],
                   check=True, capture_output=True, text=True)  # fmt: skip


def gridbench_run(inv: Path, target: Path, size: str, out: Path) -> tuple[dict[str, float], Path]:
    text = (
        f"name: bench-clients\ntargets: [{{name: t, path: {target}}}]\nrepetitions: 1\n"
        f"cache: none\niozone: {{enabled: false, file_size: {size}, record_size: 1M, "
        "include_flush: true}\n"
        f"clients:\n  inventory: {inv}\n  hosts: [{LAB}-1, {LAB}-2, {LAB}-3]\n  counts: [3]\n"
        "  same_file: false\n  compare_hosts: false\n"
    )
    spec, data = load_io_spec_text(text, "bench.yaml")
    run = IoRunner(spec, data, out).execute()
    m = analyze_and_write(run)
    return {e["test"]: e["last_done_kbps"]["mean"] for e in m["clients"]["series"]}, run.path


def by_hand(inv: Path, run: Path, target: Path) -> dict[str, float]:
    """The run's job files, plain fio in each namespace at once, each on its own file."""
    hosts = load_inventory(inv).hosts
    work = target / "by-hand"
    work.mkdir(exist_ok=True)
    out: dict[str, float] = {}
    for test in ("write", "read"):
        job = next((run / "raw").glob(f"*-series3-{test}.fio")).read_text()
        procs = []
        for h in hosts.values():
            lines = [
                f"directory={work}" if x.startswith("directory=") else x for x in job.splitlines()
            ]
            lines = [
                f"filename={h.address}.gridbench-clients.dat" if x.startswith("filename=") else x
                for x in lines
            ]
            jf = work / f"{h.name}-{test}.fio"
            jf.write_text("\n".join(lines) + "\n")
            argv = ["ip", "netns", "exec", str(h.netns), "fio", "--output-format=json+", str(jf)]
            procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True))
        results = [r for p in procs for r in parse_fio_text(p.communicate()[0], "by hand")]
        total = sum(r.bytes for r in results)
        out[test] = total / 1024 / max(r.runtime_s for r in results)
    shutil.rmtree(work)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="64M", help="each client's file (default 64M)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="the target (default a temp dir)")
    a = ap.parse_args()
    lab("up", "--hosts", "3")
    base = Path(tempfile.mkdtemp(prefix="bench-io-clients-", dir=a.dir))
    inv = STATE_ROOT / LAB / "inventory.yaml"
    figures: dict[str, dict[str, list[float]]] = {"gridbench": {}, "by hand": {}}
    try:
        for k in range(a.rounds):
            target = base / f"t{k}"
            target.mkdir()
            g, run = gridbench_run(inv, target, a.size, base / "results")
            h = by_hand(inv, run, target)
            for who, fig in (("gridbench", g), ("by hand", h)):
                for test, v in fig.items():
                    figures[who].setdefault(test, []).append(v)
            said = [f"{t} gridbench {g[t]:,.0f} kB/s, by hand {h[t]:,.0f} kB/s" for t in g]
            print(f"round {k + 1}: " + "; ".join(said))
    finally:
        lab("down")
        shutil.rmtree(base, ignore_errors=True)
    for test in figures["gridbench"]:
        gm = statistics.median(figures["gridbench"][test])
        hm = statistics.median(figures["by hand"][test])
        ok = "ok" if gm >= 0.95 * hm else "BELOW TARGET"
        print(f"{test}: gridbench {gm:,.0f} kB/s, by hand {hm:,.0f} kB/s, ratio {gm / hm:.3f} "
              f"(target >= 0.95: {ok})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
