"""``gridbench lab``: several hosts on this machine (network namespaces on a bridge, each
with sshd and node_exporter, links shaped by tc and Toxiproxy), for trying multi-host work
before a real site and for the suite's own multi-host tests (docs/hosts.md)."""

from gridbench.hosts.lab.build import LabPlan, lab_down, lab_status, lab_up, parse_latency

__all__ = ["LabPlan", "lab_down", "lab_status", "lab_up", "parse_latency"]
