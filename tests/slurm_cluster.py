"""A live, throw-away Slurm cluster for tests: munged, slurmctld and slurmd on loopback.

Everything lives under one temporary directory, on free non-default ports, with its own
munge socket and key, so it never touches a system Slurm. The daemons run in the
foreground as children of the test process and are stopped by pid at teardown. A daemon
that cannot start FAILS the test (never a skip) with the tail of its log.

Run it by hand to poke at a cluster: ``.venv/bin/python tests/slurm_cluster.py
[--accounting]`` prints the ``SLURM_CONF`` to export and waits for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from daemons import (
    free_port,
    log_tails,
    run_client,
    scratch_dir,
    serve_by_hand,
    spawn_logged,
    started,
    wait_until,
)

NODE = "gbnode"
CPUS = 8
PARTITION = "debug"
START_TIMEOUT_S = 30.0
DAEMONS = ("munged", "slurmctld", "slurmd")
ACCOUNTING = ("mariadbd", "mariadb-install-db", "slurmdbd", "sacctmgr", "sacct")


class ClusterError(RuntimeError):
    """A daemon did not start; the message carries the tail of its log."""


def slurm_conf(c: SlurmCluster) -> str:
    """The slurm.conf of a test cluster (REAL-SYSTEMS.md: the lines that matter)."""
    r = c.root
    accounting = (
        "AccountingStorageType=accounting_storage/slurmdbd\n"
        f"AccountingStorageHost=localhost\nAccountingStoragePort={c.dbd_port}\n"
        f"AccountingStoragePass={c.munge_socket}\n"  # with auth/munge: the munge socket
        if c.accounting
        else "AccountingStorageType=accounting_storage/none\n"
    )
    jwt = f"AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={c.jwt_key}\n" if c.rest else ""
    return f"""\
ClusterName=gridbench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={c.ctld_port}
SlurmdPort={c.slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={c.munge_socket}
CredType=cred/munge
{jwt}StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={r}/run/slurmctld.pid
SlurmdPidFile={r}/run/slurmd-%n.pid
SlurmctldLogFile={c.ctld_log}
SlurmdLogFile={r}/log/slurmd{"" if c.nodes == 1 else "-%n"}.log
SlurmctldDebug=info
SlurmdDebug=info
LogTimeFormat=iso8601_ms
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
{accounting}JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
SchedulerType=sched/builtin
SchedulerParameters={c.scheduler_parameters}
SlurmdParameters=config_overrides
MinJobAge={c.min_job_age}
MaxJobCount=100000
ReturnToService=2
MpiDefault=none
InactiveLimit=0
KillWait=2
{node_lines(c)}"""


def node_names(nodes: int) -> list[str]:
    """The node names of a cluster of ``nodes``: ``gbnode`` alone (the one-node cluster the
    older tests know), else ``gbnode1`` … ``gbnodeN``."""
    return [NODE] if nodes == 1 else [f"{NODE}{i}" for i in range(1, nodes + 1)]


def node_lines(c: SlurmCluster) -> str:
    """NodeName and PartitionName lines. Several nodes share 127.0.0.1 and each has its
    own slurmd ``Port``: Debian's slurmd is built with multiple-slurmd support, so
    ``slurmd -N NAME`` runs one daemon per emulated node on one host (docs/backends.md)."""
    names = node_names(c.nodes)
    lines = [
        f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1"
        + (f" Port={c.node_ports[i]}" if c.nodes > 1 else "")
        + f" CPUs={CPUS} RealMemory=4000 State=UNKNOWN"
        for i, n in enumerate(names)
    ]
    nodes = NODE if c.nodes == 1 else f"{NODE}[1-{c.nodes}]"
    if c.nodes > 1:  # sbatch refuses a job larger than the partition (else it pends forever)
        lines.insert(0, "EnforcePartLimits=ALL")
    lines.append(f"PartitionName={PARTITION} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


DB_PASSWORD = "gridbench-test"


def slurmdbd_conf(c: SlurmCluster) -> str:
    """slurmdbd.conf: MariaDB over TCP on loopback with its own port."""
    r = c.root
    return f"""\
DbdHost=localhost
DbdPort={c.dbd_port}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={c.munge_socket}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={c.db_port}
StorageUser=slurm
StoragePass={DB_PASSWORD}
StorageLoc=slurm_acct_db
LogFile={r}/log/slurmdbd.log
PidFile={r}/run/slurmdbd.pid
DebugLevel=info
LogTimeFormat=iso8601_ms
"""


@dataclass
class SlurmCluster:
    """One test cluster; ``env`` is what a backend (or a CLI call) needs to reach it."""

    root: Path
    min_job_age: int = 600
    accounting: bool = False  # slurmdbd + MariaDB, for sacct
    rest: bool = False  # JWT auth + slurmrestd on TCP, for the REST submission path
    rest_port: int = field(default_factory=free_port)
    ctld_port: int = field(default_factory=free_port)
    slurmd_port: int = field(default_factory=free_port)
    dbd_port: int = field(default_factory=free_port)
    db_port: int = field(default_factory=free_port)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    nodes: int = 1  # emulated nodes, one slurmd each (multiple-slurmd mode)
    #: slurm.conf's SchedulerParameters (``defer,sched_interval=N``: passes every N s only)
    scheduler_parameters: str = "batch_sched_delay=0,sched_min_interval=0"
    node_ports: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ValueError("a cluster has at least one node")
        while len(self.node_ports) < self.nodes:
            self.node_ports.append(free_port())

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.root / "run" / "munge.socket"

    @property
    def jwt_key(self) -> Path:
        return self.root / "etc" / "jwt.key"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def token(self, lifespan: int = 3600, user: str = "root") -> str:
        """A fresh JWT from ``scontrol token`` (the value after ``SLURM_JWT=``)."""
        out = self.run("scontrol", "token", f"username={user}", f"lifespan={lifespan}")
        return out.strip().partition("=")[2]

    @property
    def ctld_log(self) -> Path:
        return self.root / "log" / "slurmctld.log"

    @property
    def env(self) -> dict[str, str]:
        """Environment overrides for Slurm clients (pass to the backend's ``env`` option)."""
        return {"SLURM_CONF": str(self.conf), "MUNGE_SOCKET": str(self.munge_socket)}

    def log_of(self, name: str) -> Path:
        return self.root / "log" / f"{name}.log"

    # ---- commands -----------------------------------------------------------------------

    def run(self, *argv: str, check: bool = True, timeout: float = 20) -> str:
        """Run a Slurm client command against this cluster; return its stdout."""
        p = run_client(argv, env=self.env, timeout=timeout)
        if check and p.returncode != 0:
            raise ClusterError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def job_ids(self) -> list[str]:
        """Ids of every job the controller still lists."""
        out = self.run("squeue", "-h", "-o", "%i", check=False)
        return [x.strip() for x in out.split() if x.strip()]

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start munged, slurmctld and slurmd; return once the node is idle."""
        for d in ("etc", "state", "spool", "run", "log", "munge"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        os.chmod(self.root / "munge", 0o700)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        if self.rest:
            self.jwt_key.write_bytes(os.urandom(32))
            os.chmod(self.jwt_key, 0o600)
        self.conf.write_text(slurm_conf(self), encoding="utf-8")
        self._spawn(
            "munged",
            [
                "munged",
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={self.root}/run/munged.pid",
                f"--seed-file={self.root}/munge/munged.seed",
                f"--log-file={self.log_of('munged')}",
            ],
        )
        self._wait("munged", self.munge_socket.exists, self.log_of("munged"))
        if self.accounting:
            self._start_accounting()
        self.start_ctld()
        names = node_names(self.nodes)
        for name in names:
            proc = "slurmd" if self.nodes == 1 else f"slurmd-{name}"
            self._spawn(proc, ["slurmd", "-D", "-f", str(self.conf), "-N", name])
        last = "slurmd" if self.nodes == 1 else f"slurmd-{names[-1]}"
        self._wait(last, self._node_idle, self.log_of(last))
        if self.rest:
            self.start_rest()

    def start_rest(self) -> None:
        """slurmrestd on TCP loopback with JWT auth, dropped to ``nobody``: as root it
        refuses, and with its user check disabled it rejects every passed-through token."""
        plugins = "openapi/v0.0.38,openapi/dbv0.0.38" if self.accounting else "openapi/v0.0.38"
        argv = ["slurmrestd", "-f", str(self.conf), "-a", "rest_auth/jwt", "-s", plugins]
        argv += ["-u", "nobody", "-g", "nogroup", f"127.0.0.1:{self.rest_port}"]
        # SLURM_JWT=daemon makes it speak auth/jwt to slurmctld (else munge, which
        # rejects every passed-through token: "Rejecting thread config token")
        self._spawn("slurmrestd", argv, extra_env={"SLURM_JWT": "daemon"})
        self._wait("slurmrestd", self._rest_listening, self.log_of("slurmrestd"))

    def stop_rest(self) -> None:
        self._terminate("slurmrestd")

    def _rest_listening(self) -> bool:
        return _listening(self.rest_port)

    def _start_accounting(self) -> None:
        """MariaDB (own datadir, socket, port), then slurmdbd, then the cluster's record."""
        r = self.root
        sock = r / "run" / "mysql.sock"
        init = subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={r}/db",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if init.returncode != 0:
            raise ClusterError(f"mariadb-install-db failed:\n{init.stdout}\n{init.stderr}")
        self._spawn(
            "mariadbd",
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={r}/db",
                f"--socket={sock}",
                f"--port={self.db_port}",
                "--bind-address=127.0.0.1",
                "--user=root",
                f"--pid-file={r}/run/mariadb.pid",
                f"--log-error={self.log_of('mariadbd')}",
                "--innodb-buffer-pool-size=64M",
                "--skip-log-bin",
            ],
        )
        self._wait("mariadbd", sock.exists, self.log_of("mariadbd"))
        grant = (
            f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}';"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
        )
        self.run("mariadb", "--no-defaults", f"--socket={sock}", "-u", "root", "-e", grant)
        dbd = r / "etc" / "slurmdbd.conf"
        dbd.write_text(slurmdbd_conf(self), encoding="utf-8")
        os.chmod(dbd, 0o600)
        self._spawn("slurmdbd", ["slurmdbd", "-D"])
        self._wait("slurmdbd", self._dbd_listening, self.log_of("slurmdbd"))
        self.run("sacctmgr", "-i", "add", "cluster", "gridbench")

    def _dbd_listening(self) -> bool:
        return _listening(self.dbd_port)

    def start_ctld(self, *, clear: bool = False) -> None:
        """(Re)start slurmctld and wait until it answers ``scontrol ping``.

        ``clear`` drops its saved jobs: squeue forgets them, sacct still has them.
        """
        argv = ["slurmctld", "-D", "-i", "-f", str(self.conf), *(["-c"] if clear else [])]
        self._spawn("slurmctld", argv)
        self._wait("slurmctld", self._ctld_up, self.ctld_log)

    def stop_ctld(self) -> None:
        """Stop slurmctld only (to test a controller outage)."""
        self._terminate("slurmctld")

    def stop(self) -> None:
        """Cancel leftover jobs by id, then stop every process this cluster started."""
        ctld = self.procs.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            with contextlib.suppress(Exception):
                ids = self.job_ids()
                if ids:
                    self.run("scancel", *ids, check=False)
                    self.wait_quiet()
        for name in reversed(list(self.procs)):
            self._terminate(name)
        for pid in self._strays():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def wait_quiet(self, timeout: float = 10.0) -> bool:
        """Wait until no job of this cluster is pending, running or completing."""

        def quiet() -> bool:
            return not self.run("squeue", "-h", "-t", "PD,R,CG,S", "-o", "%i", check=False).strip()

        return wait_until(quiet, timeout)

    def _strays(self) -> list[int]:
        """Pids of slurmstepd and job processes still running against this cluster.

        slurmstepd daemonises (its parent becomes init), so it is found by the
        ``SLURM_CONF`` of this cluster in its environment, which it and the job
        processes inherit from slurmd and sbatch.
        """
        import psutil

        mine = str(self.conf)
        found = []
        for p in psutil.process_iter(["pid"]):
            if p.pid == os.getpid():
                continue
            try:
                if p.environ().get("SLURM_CONF") == mine:
                    found.append(p.pid)
            except (psutil.Error, OSError):
                continue
        return found

    def _spawn(self, name: str, argv: list[str], extra_env: dict[str, str] | None = None) -> None:
        env = {**os.environ, **self.env, **(extra_env or {})}
        log = self.root / "log" / f"{name}.stderr"
        self.procs[name] = spawn_logged(argv, log, env=env, cwd=self.root)

    def _terminate(self, name: str) -> None:
        p = self.procs.pop(name, None)
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)

    def _wait(self, name: str, ready: Callable[[], bool], log: Path) -> None:
        proc = self.procs[name]

        def failed() -> ClusterError:
            stderr = self.root / "log" / f"{name}.stderr"
            state = f"exited {proc.returncode}" if proc.poll() is not None else "not ready"
            return ClusterError(f"{name} did not start ({state})\n{log_tails(log, stderr)}")

        def up() -> bool:
            if proc.poll() is not None:
                raise failed()
            return ready()

        if not wait_until(up, START_TIMEOUT_S, interval=0.05):
            raise failed()

    def _ctld_up(self) -> bool:
        try:
            return "is UP" in self.run("scontrol", "ping", check=False, timeout=5)
        except subprocess.TimeoutExpired:
            return False

    def _node_idle(self) -> bool:
        try:
            out = self.run("sinfo", "-h", "-N", "-o", "%t", check=False, timeout=5)
        except subprocess.TimeoutExpired:
            return False
        states = out.split()
        return len(states) == self.nodes and all(x == "idle" for x in states)


def _listening(port: int) -> bool:
    """Whether something accepts TCP connections on ``port`` of loopback."""
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def rest_options(cluster: SlurmCluster, token: Path, **options: object) -> dict[str, object]:
    """slurm backend options that submit and poll through this cluster's slurmrestd."""
    rest = {"url": cluster.rest_url, "token_file": str(token), "user": "root"}
    base = {"conf": str(cluster.conf), "submit_via": "rest", "status_via": "rest", "rest": rest}
    return base | options


def have_slurm(accounting: bool = False) -> bool:
    """Whether the Debian packages are installed (scripts/debian-packages.txt)."""
    tools = (*DAEMONS, "sbatch", "squeue", "scontrol", "scancel")
    return all(shutil.which(x) for x in (*tools, *(ACCOUNTING if accounting else ())))


@contextlib.contextmanager
def running_cluster(
    prefix: str = "gb-slurm-",
    *,
    accounting: bool = False,
    min_job_age: int = 600,
    rest: bool = False,
    nodes: int = 1,
    scheduler_parameters: str | None = None,
) -> Iterator[SlurmCluster]:
    """A started cluster of ``nodes`` emulated nodes, stopped (and its directory removed)
    on exit."""
    if os.geteuid() != 0:
        pytest.fail("the Slurm test cluster must run as root (it starts munged and slurmd)")
    if not have_slurm(accounting) or (rest and not shutil.which("slurmrestd")):
        pytest.fail(
            "Slurm is not installed: apt-get install --no-install-recommends "
            "slurmctld slurmd slurm-client munge slurmdbd mariadb-server "
            "(scripts/debian-packages.txt)"
        )
    with scratch_dir(prefix) as tmp:
        cluster = SlurmCluster(
            tmp, min_job_age=min_job_age, accounting=accounting, rest=rest, nodes=nodes
        )
        if scheduler_parameters is not None:
            cluster.scheduler_parameters = scheduler_parameters
        with started(cluster, (ClusterError,)):
            yield cluster


@pytest.fixture(scope="session", name="slurm")
def slurm_fixture() -> Iterator[SlurmCluster]:
    """One live cluster shared by the Slurm tests of a session.

    Each test module that imports this fixture gets its own session-scoped instance of it
    from pytest, so the cluster itself is shared here: started by the first, stopped when
    the last is torn down (at the end of the session).
    """
    if _shared.cluster is None:
        if _shared.error:
            pytest.fail(_shared.error, pytrace=False)
        try:
            _shared.cluster = _shared.stack.enter_context(running_cluster(rest=True))
        except BaseException as exc:
            _shared.error = str(exc)
            raise
    _shared.users += 1
    try:
        yield _shared.cluster
    finally:
        _shared.users -= 1
        if _shared.users == 0:
            _shared.stack.close()
            _shared.cluster = None


@dataclass
class _Shared:
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    cluster: SlurmCluster | None = None
    users: int = 0
    error: str = ""


_shared = _Shared()


@pytest.fixture(name="slurm_acct")
def slurm_acct_fixture() -> Iterator[SlurmCluster]:
    """A cluster with accounting (slurmdbd + MariaDB), for sacct."""
    with running_cluster(prefix="gb-slurm-acct-", accounting=True) as c:
        yield c


@pytest.fixture(name="slurm_private")
def slurm_private_fixture() -> Iterator[SlurmCluster]:
    """A cluster of one's own, for tests that stop its daemons."""
    with running_cluster(prefix="gb-slurm-own-") as c:
        yield c


MULTI_NODES = 4


@pytest.fixture(scope="session", name="slurm4")
def slurm4_fixture() -> Iterator[SlurmCluster]:
    """A 4-node cluster (one slurmd per emulated node) for job-size sweeps over nodes."""
    with running_cluster(prefix="gb-slurm4-", nodes=MULTI_NODES) as c:
        yield c


def _by_hand_info(c: SlurmCluster) -> str:
    rest = f"slurmrestd: {c.rest_url}  token: {c.token()}\n" if c.rest else ""
    return f"{rest}controller log: {c.ctld_log}"


if __name__ == "__main__":
    serve_by_hand(
        running_cluster(
            accounting="--accounting" in sys.argv,
            rest="--rest" in sys.argv,
            nodes=MULTI_NODES if "--nodes4" in sys.argv else 1,
        ),
        lambda c: {"SLURM_CONF": str(c.conf)},
        _by_hand_info,
    )
