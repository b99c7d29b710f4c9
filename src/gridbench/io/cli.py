"""``gridbench io``'s actions as declarations (:mod:`gridbench.commandline`); each runs a
function of :mod:`gridbench.io.command`, imported only when the action runs."""

from __future__ import annotations

from gridbench.commandline import Command, Commands, arg, spec_verbs

COMMANDS = Commands(
    "io",
    (
        Command(
            "io",
            help="storage benchmarks: iozone/Bonnie matrices on fio, speedups, checks, "
            "POSIX conformance (pjdfstest), trace replay, identities, faults",
            parser={
                "epilog": "spec sections (docs/io.md): iozone, bonnie, concurrency, "
                "consistency, http; resilience (faults on a replicated file system's servers "
                "on a schedule, time to recover, every byte written verified); http_clients "
                "(N WebDAV clients at once); conformance (pjdfstest per syscall); replay (fio "
                "trace replay); identities"
            },
            dest="io_action",
            actions=spec_verbs(
                module="gridbench.io.command",
                what="io spec (YAML), see docs/io.md and examples/io-*.yaml",
                example="--set iozone.file_size=64M",
                noun="an io spec",
                run_help="run an io spec against its targets, then report (exit 1 also when "
                "a byte written in the resilience phase is lost or corrupt; conformance needs "
                "pjdfstest: scripts/install-pjdfstest; identities need root)",
                report_help="re-analyse an io results directory and rewrite its reports",
                run_args=(
                    arg(
                        "--force", action="store_true", help="allow targets that already hold data"
                    ),
                ),
            ),
        ),
    ),
)
