"""Ping-pong across hosts against sockperf on the same path (issue 38, Performance: at most
1.3x sockperf at 1 KiB).

Makes a lab of 2 hosts (``gridbench lab up``; one with a Toxiproxy path of ``--delay``),
then runs ``gridbench net run`` with the ``remote`` environment and the peer on a lab host:
gridbench's TCP ping-pong and, in the same run on the same path, sockperf's. Prints both
mean round trips at 1 KiB and their ratio, on the plain link (the namespaces' veth and
bridge: the software's cost shows) and across the latency path (the distance dominates);
``--repeat`` runs of each, the median ratio. Root only.

    .venv/bin/python bench/bench_net_remote.py [--repeat 3] [--delay 20]
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET = 1.3
SPEC = """\
name: bench-remote
environments: [remote]
remote: {{inventory: {inventory}, peer: {peer}}}
pingpong: {{transports: [tcp], sizes: {{list: [1k]}}, tests: 3, round_trips: {trips}}}
floor: {{duration: 3s, iperf3: false}}
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "gridbench.cli", *args], capture_output=True,
                       text=True, timeout=900, check=False)  # fmt: skip
    if r.returncode != 0:
        sys.exit(f"gridbench {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def _once(work: Path, inventory: str, peer: str, trips: int) -> tuple[float, float, float, float]:
    """(gridbench's mean, sockperf's mean, gridbench's p50, sockperf's p50), ms."""
    spec = work / f"{peer}.yaml"
    spec.write_text(SPEC.format(inventory=inventory, peer=peer, trips=trips))
    results = work / "results"
    _cli("net", "run", str(spec), "--results", str(results))
    run = sorted(results.iterdir())[-1]
    metrics = json.loads((run / "metrics.json").read_text())
    row = metrics["pingpong"][0]["rows"][0]
    sockperf = metrics["floor"][0]["sockperf"][0]
    assert sockperf["size_bytes"] == 1024
    ours, theirs = row["rtt_ms"], sockperf["rtt_ms"]
    return float(ours["mean"]), float(theirs["mean"]), float(ours["p50"]), float(theirs["p50"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--delay", type=int, default=20, help="ms per round trip on host 2's path")
    a = ap.parse_args()
    name = "n" + secrets.token_hex(3)
    _cli("lab", "up", "--name", name, "--hosts", "2", "--latency", f"{name}-2:{a.delay}ms")
    inventory = f"/run/gridbench-lab/{name}/inventory.yaml"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for peer, label, trips in ((f"{name}-1", "plain link", 2000),
                                       (f"{name}-2", f"{a.delay} ms path", 100)):  # fmt: skip
                means, p50s = [], []
                for _ in range(a.repeat):
                    ours, floor, ours50, floor50 = _once(Path(tmp), inventory, peer, trips)
                    means.append(ours / floor)
                    p50s.append(ours50 / floor50)
                    print(f"{label}: gridbench tcp mean {ours:.4f} ms / p50 {ours50:.4f} ms; "
                          f"sockperf mean {floor:.4f} ms / p50 {floor50:.4f} ms; ratios "
                          f"{ours / floor:.2f} (means), {ours50 / floor50:.2f} (p50)")  # fmt: skip
                for what, ratios in (("means", means), ("p50", p50s)):
                    med = statistics.median(ratios)
                    verdict = "meets" if med <= TARGET else "misses"
                    print(f"{label}: median ratio of {what} {med:.2f} ({verdict} the "
                          f"{TARGET}x target)")  # fmt: skip
    finally:
        _cli("lab", "down", "--name", name)


if __name__ == "__main__":
    main()
