"""Real transports for the net family: raw TCP, ZeroMQ, gRPC (with TLS), MUSCLE3, and the
transfer tools. Each client measures on its own side with ``perf_counter_ns``."""
