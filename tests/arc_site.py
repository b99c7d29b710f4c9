"""A live NorduGrid ARC CE (A-REX 6.17, fork LRMS) for tests, with its own test CA.

Everything lives under one temporary directory, as docs REAL-SYSTEMS.md "ARC CE (A-REX)"
describes: a test CA, a host certificate for ``localhost`` and a user certificate made
with ``arcctl test-ca`` (``--ca-dir`` in the temporary directory, so nothing under
/etc/grid-security is touched), a minimal ``arc.conf`` (fork LRMS, the user's DN mapped
to ``nobody:nogroup``, control and session directories, logs and pid files, the REST/WS
endpoint ``https://localhost:PORT/arex`` on a free high port), and a pre-seeded
``<controldir>/dhparam.pem`` (without it the WS start burns a core on ``openssl dhparam
4096`` for about 80 s). The WS service starts first, then A-REX (in the other order the
endpoint is ``HealthState critical`` for about 60 s and arcsub refuses it); the site is
ready once the first infoprovider run has written ``info.xml``. Both daemons are stopped
by pid at teardown, then every process still working in the site's directory (job
payloads the fork LRMS left behind) is killed by pid.
A daemon that cannot start FAILS the test (never a skip) with the tail of its logs.

arched listens on the port on every interface (the start scripts give it no address);
the host certificate is only valid for ``localhost``.

Status lags: arcstat reads the GLUE2 records the infoprovider rewrites about every 60 s,
and the fork LRMS notices a job's end 10-16 s late; a job is seen finished 15-75 s after
it was submitted.

Run it by hand: ``.venv/bin/python tests/arc_site.py`` prints the environment to export
and waits for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from daemons import (
    alive,
    free_port,
    log_tail,
    log_tails,
    read_pid,
    run_client,
    run_logged,
    scratch_dir,
    serve_by_hand,
    started,
    stop_pids,
    wait_until,
)

ARC_SHARE = Path("/usr/share/arc")
WS_START = ARC_SHARE / "arc-arex-ws-start"
AREX_START = ARC_SHARE / "arc-arex-start"
TOOLS = ("arcctl", "arcproxy", "arcsub", "arcstat", "arckill", "arccat", "openssl")
HOST = "localhost"
CA_ID = "gridbench"
USER_NAME = "gridbench tester"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


class SiteError(RuntimeError):
    """The site did not start; the message carries the tail of its logs."""


ARC_CONF = """\
[common]
hostname = {host}
x509_host_key = {root}/host-{host}-key.pem
x509_host_cert = {root}/host-{host}-cert.pem
x509_cert_dir = {root}/certificates

[authgroup:zero]
file = {root}/allowed-subjects

[mapping]
map_to_user = zero nobody:nogroup

[lrms]
{lrms_lines}

[arex]
controldir = {root}/control
sessiondir = {root}/session
logfile = {root}/log/arex.log
joblog = {root}/log/arex-jobs.log
helperlog = {root}/log/job.helper.errors
pidfile = {root}/run/arex.pid
tmpdir = {root}/tmp
wakeupperiod = 10

[arex/ws]
wsurl = {url}
logfile = {root}/log/ws-interface.log
pidfile = {root}/run/arex-ws.pid

[arex/ws/jobs]
allowaccess = zero

[infosys]
logfile = {root}/log/infoprovider.log

[infosys/glue2]

[infosys/cluster]

[queue:{queue}]
"""
#: the ``[lrms]`` lines of each LRMS the tests run A-REX over (REAL-SYSTEMS.md)
LRMS_LINES = {
    "fork": "lrms = fork",
    # without slurmdbd, sacct fails and A-REX never sees a job end: scontrol instead
    "slurm": "lrms = slurm\nslurm_bin_path = /usr/bin\nslurm_wakeupperiod = 5\n"
    "slurm_use_sacct = no",
}


@dataclass
class ArcSite:
    """The test CE; ``env`` is what an ARC client needs to reach it as the test user."""

    root: Path  # everything: CA, certificates, arc.conf, control/session dirs, logs
    port: int = field(default_factory=free_port)
    pids: dict[str, int] = field(default_factory=dict)
    lrms: str = "fork"  # or "slurm": then ``lrms_env`` reaches the suite's cluster
    queue: str = "fork"  # the LRMS queue (a Slurm partition)
    lrms_env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"https://{HOST}:{self.port}/arex"

    @property
    def conf(self) -> Path:
        return self.root / "arc.conf"

    @property
    def control(self) -> Path:
        return self.root / "control"

    @property
    def session(self) -> Path:
        return self.root / "session"

    @property
    def joblist(self) -> Path:
        """The client's job list (arcsub adds to it; arcstat/arckill/arccat read it)."""
        return self.root / "client" / "jobs.dat"

    @property
    def proxy(self) -> Path:
        return self.root / "client" / "proxy.pem"

    @property
    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.root / "client"),  # the clients write ~/.arc/client.conf
            "X509_USER_CERT": str(self.root / f"client-{USER_NAME.replace(' ', '-')}-cert.pem"),
            "X509_USER_KEY": str(self.root / f"client-{USER_NAME.replace(' ', '-')}-key.pem"),
            "X509_CERT_DIR": str(self.root / "certificates"),
            "X509_USER_PROXY": str(self.proxy),
        }

    def logs(self) -> dict[str, Path]:
        log = self.root / "log"
        return {
            "ws": log / "ws-interface.log",
            "arex": log / "arex.log",
            "infoprovider": log / "infoprovider.log",
        }

    # ---- commands -----------------------------------------------------------------------

    def run(self, *argv: str, check: bool = True, timeout: float = 60, env: bool = True) -> str:
        """Run a command in the site's directory (with the client environment); its stdout."""
        p = run_client(
            argv,
            env={**(self.env if env else {}), "ARC_CONFIG": str(self.conf)},
            timeout=timeout,
            cwd=self.root,
        )
        if check and p.returncode != 0:
            raise SiteError(
                f"{' '.join(argv)} exited {p.returncode}: {(p.stderr or p.stdout).strip()}"
            )
        return p.stdout

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Certificates, configuration, then the WS service and A-REX, in that order."""
        for d in ("control", "session", "log", "run", "client"):
            (self.root / d).mkdir(mode=0o755)
        (self.root / "tmp").mkdir()
        os.chmod(self.root / "tmp", 0o1777)  # arc-config-check wants a sticky, writable tmpdir
        self.make_certificates()
        # a well-known 2048-bit group: instant, and `openssl dhparam -check` accepts it
        dh = self.control / "dhparam.pem"
        self.run(
            "openssl", "genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:ffdhe2048",
            "-out", str(dh), env=False,
        )  # fmt: skip
        os.chmod(dh, 0o600)
        self.conf.write_text(
            ARC_CONF.format(
                host=HOST,
                root=self.root,
                url=self.url,
                lrms_lines=LRMS_LINES[self.lrms],
                queue=self.queue,
            )
        )
        self.run("arcproxy")  # the test user's proxy (no password on the test key)
        self._start("ws", WS_START, self.root / "run" / "arex-ws.pid")
        self._wait_tls()
        self._start("arex", AREX_START, self.root / "run" / "arex.pid")
        self._wait_info()

    def make_certificates(self) -> None:
        """Test CA, host and user certificates in the temp dir; the user's DN is allowed."""
        ca = ["arcctl", "test-ca", "--ca-dir", str(self.root / "certificates"), "--ca-id", CA_ID]
        self.run(*ca, "init", env=False)
        self.run(*ca, "hostcert", "-n", HOST, "-f", env=False)
        self.run(*ca, "usercert", "-n", USER_NAME, "--no-auth", "-f", env=False)
        subject = self.run(
            "openssl", "x509", "-in", self.env["X509_USER_CERT"], "-noout", "-subject",
            "-nameopt", "compat", env=False,
        ).strip()  # fmt: skip
        dn = subject.removeprefix("subject=").strip()
        if not dn.startswith("/"):
            raise SiteError(f"unexpected subject of the user certificate: {subject!r}")
        (self.root / "allowed-subjects").write_text(f'"{dn}"\n')

    def _start(self, name: str, script: Path, pid_file: Path) -> None:
        log = self.root / "log" / f"{name}-start.out"
        env = {**os.environ, **self.lrms_env, "ARC_CONFIG": str(self.conf)}
        rc = run_logged([str(script)], log, env=env, cwd=self.root, timeout=START_TIMEOUT_S)
        if rc != 0:
            raise SiteError(f"{script.name} exited {rc}\n{log_tail(log)}\n{self.log_tails()}")

        def pid_alive() -> bool:
            pid = read_pid(pid_file)
            if pid is not None:
                self.pids[name] = pid
            return pid is not None and alive(pid)

        if wait_until(pid_alive, START_TIMEOUT_S, interval=0.05):
            return
        raise SiteError(f"{script.name} wrote no live pid in {pid_file}\n{self.log_tails()}")

    def _wait_tls(self) -> None:
        """The WS endpoint completes a TLS handshake (the CA verifies its certificate)."""
        ctx = ssl.create_default_context(cafile=str(self._ca_cert()))
        last: Exception | None = None

        def handshake() -> bool:
            nonlocal last
            self._check_alive()
            try:
                with (
                    socket.create_connection(("127.0.0.1", self.port), timeout=2) as raw,
                    ctx.wrap_socket(raw, server_hostname=HOST),
                ):
                    return True
            except OSError as exc:
                last = exc
                return False

        if wait_until(handshake, START_TIMEOUT_S):
            return
        raise SiteError(f"the WS endpoint {self.url} does not answer: {last}\n{self.log_tails()}")

    def _wait_info(self) -> None:
        """The first infoprovider run has published the CE (arcsub needs it)."""
        info = self.control / "info.xml"

        def written() -> bool:
            self._check_alive()
            return info.exists() and info.stat().st_size > 0

        if wait_until(written, START_TIMEOUT_S):
            return
        raise SiteError(f"no infoprovider output in {info}\n{self.log_tails()}")

    def _ca_cert(self) -> Path:
        return self.root / "certificates" / f"ARC-TestCA-{CA_ID}.pem"

    def _check_alive(self) -> None:
        for name, pid in self.pids.items():
            if not alive(pid):
                raise SiteError(f"arched ({name}, pid {pid}) exited\n{self.log_tails()}")

    def log_tails(self) -> str:
        return log_tails(*self.logs().values())

    def stop(self) -> None:
        """Stop A-REX and the WS service by pid, then what their jobs left running."""
        for name in ("arex", "ws"):
            self.stop_daemon(name)
        self.kill_leftovers()

    def kill_leftovers(self) -> None:
        """Kill, by pid, each process working in or started from this site's directory.

        The fork LRMS cancels a job by killing the wrapper whose pid it recorded
        (``localid``): the job script and the payload under it keep running (observed
        with ARC 6.17), so a cancelled ``sleep 300`` would outlive the test.
        """
        root = str(self.root)
        for proc in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError, ValueError):
                pid = int(proc.name)
                cwd = os.readlink(proc / "cwd")
                cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
                if pid != os.getpid() and (cwd.startswith(root + "/") or root + "/" in cmd):
                    os.kill(pid, signal.SIGKILL)

    def stop_daemon(self, name: str) -> None:
        pid = self.pids.pop(name, None)
        if pid is None or not alive(pid):
            return
        children = _descendants(pid)  # the infoprovider, LRMS scripts
        stop_pids([pid], STOP_TIMEOUT_S, then_kill=children)


def _descendants(pid: int) -> list[int]:
    """Pids of the children of ``pid``, their children and so on (read from /proc)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def have_arc() -> bool:
    """Whether the ARC packages (A-REX, clients, arcctl) are installed."""
    return (
        all(shutil.which(x) for x in TOOLS)
        and WS_START.exists()
        and AREX_START.exists()
        and Path("/usr/sbin/arched").exists()
    )


@contextlib.contextmanager
def running_site(
    lrms: str = "fork", queue: str = "fork", lrms_env: dict[str, str] | None = None
) -> Iterator[ArcSite]:
    """A started site, stopped (and its temporary directory removed) on exit."""
    if os.geteuid() != 0:
        pytest.fail("the ARC test site must run as root (A-REX maps jobs to nobody)")
    if not have_arc():
        pytest.fail(
            "NorduGrid ARC is not installed: apt-get install --no-install-recommends "
            "nordugrid-arc-arex nordugrid-arc-client nordugrid-arc-arcctl "
            "nordugrid-arc-arcctl-service nordugrid-arc-plugins-arcrest "
            "nordugrid-arc-plugins-needed nordugrid-arc-hed (scripts/system-packages)"
        )
    with (
        scratch_dir("gb-arc-", 0o755) as tmp,  # 0o755: jobs run as nobody in session/
        started(
            ArcSite(tmp, lrms=lrms, queue=queue, lrms_env=dict(lrms_env or {})),
            (SiteError, subprocess.TimeoutExpired),
        ) as site,
    ):
        yield site


@pytest.fixture(scope="session", name="arc")
def arc_fixture() -> Iterator[ArcSite]:
    """One live CE shared by the ARC tests of a session."""
    with running_site() as s:
        yield s


if __name__ == "__main__":
    serve_by_hand(running_site(), lambda s: s.env, lambda s: f"CE: {s.url}  job list: {s.joblist}")
