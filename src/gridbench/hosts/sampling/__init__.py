"""Server sampling on any host, for every family (docs/hosts.md, "Sampling").

| module | job |
|---|---|
| `figures.py` | a host's counters and the figures two of them give (pure); named problems |
| `exporter.py` | node_exporter's ``/metrics``: parsed (pure, bounded), scraped (httpx) |
| `deadline_http.py` | a blocking httpx client whose requests end by a deadline (trickling peers) |
| `clock.py` | a host's clock against the controller's: offsets, absurd and stepping clocks |
| `probe.py` | the psutil probe (stdlib + psutil only): over SSH, or in-process (``local``) |
| `ssh.py` | the probe started with a host's Python over asyncssh, its lines read and checked |
| `sampler.py` | :class:`Sampler`: each host every interval into ``RUN/samples/<host>.jsonl`` |
| `host_state.py` | a sampled host (:class:`HostTarget`) and what the sampler's tasks share |
| `spec.py` | the ``sampling:`` block every family's spec takes, and the sampler's targets |
| `analysis.py` | samples + phases → per-phase figures (polars); the client-bound rule |
| `report.py` | the chart over time with phases marked, a table per phase, the warnings |
| `compared.py` | metrics.json's ``sampling`` (every family), ``client_bound``, compared figures |

Core: imports no family.
"""
