"""A live Globus GRAM5 site for tests: globus-gatekeeper with the fork job manager.

Everything lives under one temporary directory (docs REAL-SYSTEMS.md "Globus GRAM5"): a
throw-away CA with a host and a user certificate (made with ``openssl``, because
``grid-ca-create`` always installs into /etc/grid-security/certificates), a grid-mapfile
mapping the user's DN to a throw-away non-root account (tests/unix_users.py),
``grid-services/jobmanager-fork``, a ``gram.conf`` with its own log, audit and state
directories, and an RFC 3820 proxy of the user (``grid-proxy-init -rfc``) that the clients
use through ``X509_USER_PROXY``. The gatekeeper runs as root on a free high port and maps
each request to the account; the per-user ``globus-job-manager`` it starts outlives the
jobs, so teardown stops it, its scripts and any job left running (every process of the
throw-away account) and then the gatekeeper, all by pid. A site that cannot start FAILS
the test (never a skip) with the tail of the gatekeeper's and job manager's logs.

Run it by hand: ``.venv/bin/python tests/gram_site.py`` prints the environment and the
contact to use and waits for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from daemons import (
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
from unix_users import unix_accounts

HOST = "localhost"  # the host certificate's name, and the name contacts carry
ACCOUNT = "gram"  # unix_accounts makes it gbtest-gram
CA_DN = "/O=Grid/OU=gridbench/CN=gridbench test CA"
HOST_DN = f"/O=Grid/OU=gridbench/CN=host\\/{HOST}"  # openssl -subj escapes the slash
USER_DN = "/O=Grid/OU=gridbench/CN=gridbench gram user"
GATEKEEPER = "/usr/sbin/globus-gatekeeper"
JOB_MANAGER = "/usr/sbin/globus-job-manager"
TOOLS = ("openssl", "grid-proxy-init", "globusrun", "globus-job-submit", "globus-job-status")
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0


class SiteError(RuntimeError):
    """The site did not start; the message carries the tail of its logs."""


@dataclass
class GramSite:
    """The test site; ``env`` and ``contact`` are what a client needs to reach it."""

    root: Path  # everything of the site: CA, certificates, configuration, logs, state
    user: str  # the local account the user's DN is mapped to
    port: int = field(default_factory=free_port)
    gatekeeper_pid: int | None = None

    # ---- paths --------------------------------------------------------------------------

    @property
    def cert_dir(self) -> Path:
        return self.root / "certificates"

    @property
    def proxy(self) -> Path:
        return self.root / "proxy.pem"

    @property
    def gatekeeper_log(self) -> Path:
        return self.root / "gatekeeper.log"

    @property
    def job_manager_log(self) -> Path:
        return self.root / "log" / f"gram_{self.user}.log"

    @property
    def audit_dir(self) -> Path:
        return self.root / "audit"

    @property
    def contact(self) -> str:
        """The gatekeeper contact of the fork job manager (``host:port/service``)."""
        return f"{HOST}:{self.port}/jobmanager-fork"

    @property
    def env(self) -> dict[str, str]:
        """Client environment: the test CA and the user's proxy (the credential)."""
        return {"X509_CERT_DIR": str(self.cert_dir), "X509_USER_PROXY": str(self.proxy)}

    @property
    def uid(self) -> int:
        return pwd.getpwnam(self.user).pw_uid

    # ---- commands -----------------------------------------------------------------------

    def run(self, *argv: str, check: bool = True, timeout: float = 30) -> str:
        """Run a client (or openssl) against this site; return its stdout."""
        p = run_client(argv, env=self.env, timeout=timeout, cwd=self.root)
        if check and p.returncode != 0:
            raise SiteError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def logs(self) -> str:
        return log_tails(self.gatekeeper_log, self.job_manager_log)

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Make the credentials and configuration, start the gatekeeper, wait for it."""
        self.make_credentials()
        self.write_config()
        self.start_gatekeeper()

    def make_credentials(self) -> None:
        """CA, host and user certificates (2048-bit, 2 days), the CA's signing policy, and
        the user's proxy (valid 12 h: globus-job-submit wants 3 h left)."""
        ca = self.root / "ca"
        ca.mkdir(mode=0o700)
        self.cert_dir.mkdir()
        self.run(
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", str(ca / "cakey.pem"), "-out", str(ca / "cacert.pem"),
            "-subj", CA_DN,
            "-addext", "basicConstraints=critical,CA:true",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        )  # fmt: skip
        ca_hash = self.run("openssl", "x509", "-in", str(ca / "cacert.pem"), "-noout", "-hash")
        ca_hash = ca_hash.strip()
        shutil.copy(ca / "cacert.pem", self.cert_dir / f"{ca_hash}.0")
        (self.cert_dir / f"{ca_hash}.signing_policy").write_text(
            f"access_id_CA X509 '{CA_DN}'\npos_rights globus CA:sign\n"
            "cond_subjects globus '\"/O=Grid/OU=gridbench/*\"'\n"
        )
        self._issue(
            "host",
            HOST_DN,
            "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:" + HOST,
        )
        self._issue("user", USER_DN, "extendedKeyUsage=clientAuth")
        self.run(
            "grid-proxy-init", "-rfc", "-q",
            "-cert", str(self.root / "usercert.pem"), "-key", str(self.root / "userkey.pem"),
            "-out", str(self.proxy),
        )  # fmt: skip

    def _issue(self, name: str, subject: str, extensions: str) -> None:
        ca = self.root / "ca"
        key, csr = self.root / f"{name}key.pem", ca / f"{name}.csr"
        ext = ca / f"{name}.ext"
        ext.write_text(
            "basicConstraints=critical,CA:false\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\n" + extensions + "\n"
        )
        self.run(
            "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
            "-out", str(csr), "-subj", subject,
        )  # fmt: skip
        self.run(
            "openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca / "cacert.pem"),
            "-CAkey", str(ca / "cakey.pem"), "-CAcreateserial", "-days", "2",
            "-extfile", str(ext), "-out", str(self.root / f"{name}cert.pem"),
        )  # fmt: skip
        key.chmod(0o400)  # the gatekeeper and grid-proxy-init refuse readable keys

    def write_config(self) -> None:
        """grid-mapfile, grid-services/jobmanager-fork and gram.conf."""
        (self.root / "grid-mapfile").write_text(f'"{USER_DN}" {self.user}\n')
        for d in ("log", "audit", "state"):
            (self.root / d).mkdir()
            (self.root / d).chmod(0o1777)  # the job manager runs as the mapped user
        conf = self.root / "gram.conf"
        conf.write_text(
            "-globus-toolkit-version 6.2\n"
            f"-log-pattern {self.root}/log/gram_$(LOGNAME).log\n"
            "-log-levels 'FATAL|ERROR|WARN|INFO'\n"
            f"-audit-directory {self.audit_dir}\n"
            f"-state-file-dir {self.root}/state\n"
            # the job manager's scripts get a bare environment: without this, staging from
            # the client's GASS server (globus-job-get-output) cannot verify it
            f"-x509-cert-dir {self.cert_dir}\n"
        )
        services = self.root / "grid-services"
        services.mkdir()
        (services / "jobmanager-fork").write_text(
            f"stderr_log,local_cred - {JOB_MANAGER} globus-job-manager -conf {conf} -type fork\n"
        )

    def start_gatekeeper(self) -> None:
        """Start the gatekeeper (it forks into the background and writes its pid file)."""
        pid_file = self.root / "gatekeeper.pid"
        out = self.root / "gatekeeper.stdout"
        env = {
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "GLOBUS_HOSTNAME": HOST,  # job contacts then say https://localhost:PORT/...
        }
        argv = [
            GATEKEEPER, "-p", str(self.port), "-home", "/usr",
            "-l", str(self.gatekeeper_log),
            "-grid_services", str(self.root / "grid-services"),
            "-gridmap", str(self.root / "grid-mapfile"),
            "-x509_cert_dir", str(self.cert_dir),
            "-x509_user_cert", str(self.root / "hostcert.pem"),
            "-x509_user_key", str(self.root / "hostkey.pem"),
            "-pidfile", str(pid_file),
        ]  # fmt: skip
        rc = run_logged(argv, out, env=env, cwd=self.root, timeout=30)
        if rc != 0:
            raise SiteError(f"globus-gatekeeper exited {rc}\n{log_tail(out)}\n{self.logs()}")
        last = ""

        def authenticates() -> bool:
            nonlocal last
            if self.gatekeeper_pid is None:
                self.gatekeeper_pid = read_pid(pid_file)
            if self.gatekeeper_pid is None:
                return False
            p = run_client(["globusrun", "-a", "-r", self.contact], env=self.env, timeout=20)
            last = (p.stdout + p.stderr).strip()
            return p.returncode == 0 and "successful" in last

        if wait_until(authenticates, START_TIMEOUT_S):
            return
        raise SiteError(
            f"the gatekeeper on port {self.port} does not authenticate after "
            f"{START_TIMEOUT_S:g}s (globusrun -a: {last!r})\n{self.logs()}"
        )

    def user_pids(self) -> list[int]:
        """Every process of the throw-away account: job managers, their scripts, jobs."""
        uid = self.uid
        pids = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                for line in (d / "status").read_text().splitlines():
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            pids.append(int(d.name))
                        break
        return pids

    def stop(self) -> None:
        """Stop the account's processes (job manager first), then the gatekeeper."""
        with contextlib.suppress(KeyError):
            stop_pids(self.user_pids(), STOP_TIMEOUT_S)
        if self.gatekeeper_pid is not None:
            stop_pids([self.gatekeeper_pid], STOP_TIMEOUT_S)
            self.gatekeeper_pid = None


def have_gram() -> bool:
    """Whether the Debian packages (gatekeeper, job manager, clients) are installed."""
    return (
        Path(GATEKEEPER).exists()
        and Path(JOB_MANAGER).exists()
        and Path("/usr/share/perl5/Globus/GRAM/JobManager/fork.pm").exists()
        and all(shutil.which(t) for t in TOOLS)
    )


@contextlib.contextmanager
def running_site() -> Iterator[GramSite]:
    """A started site, stopped (its account and directory removed) on exit."""
    if os.geteuid() != 0:
        pytest.fail("the GRAM test site must run as root (the gatekeeper maps users)")
    if not have_gram():
        pytest.fail(
            "Globus GRAM5 is not installed: scripts/system-packages (the Globus block of "
            "scripts/debian-packages.txt)"
        )
    # 0o755: the job manager (the mapped user) reads gram.conf and the CA; started() stops
    # the site before unix_accounts' userdel, which refuses an account with processes
    with (
        scratch_dir("gb-gram-", 0o755) as tmp,
        unix_accounts(ACCOUNT) as (user,),
        started(GramSite(tmp, user), (SiteError, subprocess.TimeoutExpired)) as site,
    ):
        yield site


@pytest.fixture(scope="session", name="gram")
def gram_fixture() -> Iterator[GramSite]:
    """One live GRAM5 site shared by the GRAM tests of a session."""
    with running_site() as s:
        yield s


if __name__ == "__main__":
    serve_by_hand(
        running_site(),
        lambda s: s.env,
        lambda s: f"contact: {s.contact}\njob manager log: {s.job_manager_log}",
    )
