"""A throw-away CA and server certificate, made at run time for the TLS echo series.

Nothing is shipped: each run makes its own P-256 CA, signs a server certificate whose
subject alternative name is the host clients connect to (an IP address or a DNS name),
writes the PEM files into the run's directory (keys mode 0600) and forgets the CA's key.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gridbench.errors import GridbenchError
from gridbench.messaging.transports.base import TlsFiles

_VALID = datetime.timedelta(days=2)


def _name(common: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gridbench"),
            x509.NameAttribute(NameOID.COMMON_NAME, common),
        ]
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return x509.DNSName(host)


def _write(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``mode`` from the start (a key is never readable by others)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)  # O_CREAT does not change the mode of a file that existed


def make_tls(directory: Path, host: str) -> TlsFiles:
    """A new CA (``ca.pem``) and a server certificate for ``host`` (``server.pem``,
    ``server.key``) in ``directory``; clients trust ``ca.pem`` and connect by ``host``."""
    host = host.strip("[]")
    if not host or any(c.isspace() for c in host):
        raise GridbenchError(
            f"cannot make a TLS certificate for host {host!r}",
            where="tls",
            fix="give the IP address or DNS name clients connect to",
        )
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("gridbench throw-away CA")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALID)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(host))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALID)
        .add_extension(x509.SubjectAlternativeName([_san(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = TlsFiles(
        ca=directory / "ca.pem",
        cert=directory / "server.pem",
        key=directory / "server.key",
        host=host,
    )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _write(files.ca, ca.public_bytes(serialization.Encoding.PEM), 0o644)
        _write(files.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        _write(files.key, pem, 0o600)
    except OSError as exc:
        raise GridbenchError(
            f"cannot write the TLS files: {exc.strerror or exc}",
            where=str(directory),
            fix="give a writable directory (the run's directory)",
        ) from None
    return files
