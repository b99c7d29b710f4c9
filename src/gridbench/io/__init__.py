"""Storage benchmarks (``gridbench io``): the iozone and Bonnie matrices on fio and bonnie++,
targets against a baseline as signed speedups, concurrent clients, consistency checks and
HTTP transfer timing. See docs/io.md."""
