"""A real SMTP server on 127.0.0.1 (aiosmtpd) for the email tests: optional STARTTLS with
a self-signed certificate made on the spot, optional AUTH, every message kept parsed, and
failures injected the way real servers answer (451 try later, 550 no such user)."""

from __future__ import annotations

import datetime
import email
import email.policy
import ipaddress
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword, Session


@dataclass
class Mailbox:
    """What the server received, and what it should refuse next."""

    messages: list[EmailMessage] = field(default_factory=list)
    temporary_failures: int = 0  # answer the next N DATA commands with 451
    refuse: set[str] = field(default_factory=set)  # recipients answered with 550
    logins: list[str] = field(default_factory=list)

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages if address in str(m["To"])]


class Handler:
    def __init__(self, box: Mailbox) -> None:
        self.box = box

    async def handle_RCPT(self, server: Any, session: Session, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        if address in self.box.refuse:
            return f"550 5.1.1 <{address}>: Recipient address rejected: User unknown"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        if self.box.temporary_failures > 0:
            self.box.temporary_failures -= 1
            return "451 4.3.0 Temporary local problem, try again later"
        raw = envelope.original_content or envelope.content
        assert isinstance(raw, bytes)
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.box.messages.append(parsed)
        return "250 2.0.0 Ok: queued"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 / localhost and its key (PEM files)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp / "smtp-cert.pem", tmp / "smtp-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@dataclass
class SmtpServer:
    box: Mailbox
    port: int
    cert: Path | None
    user: str | None
    password: str | None

    def url(self, *, password: str | None = None) -> str:
        who = f"{self.user}:{password or self.password}@" if self.user else ""
        return f"smtp://{who}127.0.0.1:{self.port}"


@contextmanager
def smtp_server(tmp: Path, *, starttls: bool = False, user: str | None = None,
                password: str | None = None) -> Iterator[SmtpServer]:
    """Run aiosmtpd on a free 127.0.0.1 port (in its own thread, as aiosmtpd does)."""
    box = Mailbox()
    kwargs: dict[str, Any] = {}
    cert = None
    if starttls:
        cert, key = self_signed(tmp)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        kwargs.update(tls_context=context, require_starttls=True)
    if user:
        def authenticate(server: Any, session: Session, envelope: Envelope, mechanism: str,
                         auth_data: Any) -> AuthResult:
            ok = isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user \
                and auth_data.password.decode() == password
            if ok:
                box.logins.append(user)
            return AuthResult(success=ok, handled=False)

        kwargs.update(authenticator=authenticate, auth_require_tls=starttls, auth_required=True)
    port = free_port()
    controller = Controller(Handler(box), hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    try:
        yield SmtpServer(box, port, cert, user, password)
    finally:
        controller.stop()
