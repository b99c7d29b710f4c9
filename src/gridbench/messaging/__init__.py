"""Messaging and service benchmarks (``gridbench net``, family ``net``): ping-pong across
sizes, echo services with and without TLS, bursts and bulk transfers, each beside the
native floor (sockperf, iperf3) measured in the same run. See docs/net.md."""
