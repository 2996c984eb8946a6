"""Send mail with aiosmtplib: paced, temporary failures (4xx, a refused or dropped
connection) retried with backoff, permanent ones (5xx, a refused login, a bad address)
reported at once with the server's words."""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
import time
from email.message import EmailMessage

import aiosmtplib

from adapters.email.settings import EmailSettings, SmtpServer

log = logging.getLogger("hitl_bridge.email")


class SendFailed(Exception):
    """A mail could not be sent. `permanent`: retrying will not help (5xx, login refused)."""

    def __init__(self, message: str, *, permanent: bool, login: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.login = login  # the server refused our credentials: the whole channel is down


def classify(exc: BaseException) -> SendFailed:
    """What an aiosmtplib error means for retrying."""
    if isinstance(exc, SendFailed):
        return exc
    if isinstance(exc, aiosmtplib.SMTPAuthenticationError):
        return SendFailed(f"SMTP login refused: {exc.code} {exc.message}", permanent=True, login=True)
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        codes = [r.code for r in exc.recipients]
        words = "; ".join(f"{r.recipient}: {r.code} {r.message}" for r in exc.recipients)
        return SendFailed(f"recipient refused: {words}", permanent=all(c >= 500 for c in codes))
    if isinstance(exc, aiosmtplib.SMTPNotSupported):
        return SendFailed(f"SMTP server: {exc}", permanent=True)
    if isinstance(exc, aiosmtplib.SMTPResponseException) and not isinstance(exc, aiosmtplib.SMTPServerDisconnected):
        return SendFailed(f"SMTP {exc.code} {exc.message}", permanent=exc.code >= 500)
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return SendFailed(f"TLS with the SMTP server failed: {exc}", permanent=True)
    if isinstance(exc, aiosmtplib.SMTPException | OSError | TimeoutError):
        return SendFailed(f"SMTP server unreachable: {type(exc).__name__}: {exc}", permanent=False)
    return SendFailed(f"{type(exc).__name__}: {exc}", permanent=False)


class Sender:
    """One SMTP conversation per mail (mail is rare; a pooled connection would go stale)."""

    def __init__(self, settings: EmailSettings) -> None:
        self.settings = settings
        self.server: SmtpServer = settings.server
        self._pace = asyncio.Lock()
        self._last = 0.0

    def _client(self) -> aiosmtplib.SMTP:
        s, server = self.settings, self.server
        context = None
        if server.implicit_tls or s.starttls is not False:
            context = ssl.create_default_context(cafile=s.ca_file)
            if not s.tls_verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        return aiosmtplib.SMTP(
            hostname=server.host, port=server.port, username=server.username, password=server.password,
            use_tls=server.implicit_tls, start_tls=None if server.implicit_tls else s.starttls,
            tls_context=context, timeout=s.timeout_s,
        )

    async def check_login(self) -> None:
        """Connect, TLS, log in and quit: what `doctor` runs. Raises SendFailed."""
        client = self._client()
        try:
            await client.connect()
            await client.quit()
        except Exception as exc:
            raise classify(exc) from None
        finally:
            client.close()

    async def _send_once(self, message: EmailMessage) -> None:
        async with self._pace:  # at most max_per_second mails leave this process
            wait = self._last + 1.0 / self.settings.max_per_second - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last = time.monotonic()
        client = self._client()
        # flattened here rather than by aiosmtplib, whose SMTP policy folds headers at 78
        # characters (a folded subject comes back with a leading space)
        raw = message.as_bytes(policy=message.policy.clone(linesep="\r\n"))
        recipients = [str(a.addr_spec) for a in message["To"].addresses]
        try:
            await client.connect()
            await client.sendmail(self.settings.sender.addr_spec, recipients, raw)
            await client.quit()
        except Exception as exc:
            raise classify(exc) from None
        finally:
            client.close()

    async def send(self, message: EmailMessage) -> None:
        """Send, retrying temporary failures with exponential backoff and jitter; raise
        SendFailed with the last error when it is permanent or the retries are spent."""
        delay = self.settings.first_retry_s
        for attempt in range(self.settings.retries + 1):
            try:
                await self._send_once(message)
                return
            except SendFailed as failure:
                if failure.permanent or attempt == self.settings.retries:
                    raise
                log.warning("email to %s: %s; retrying in %.0fs", message["To"], failure, delay)
                await asyncio.sleep(delay * random.uniform(0.8, 1.2))
                delay = min(delay * 2, self.settings.max_retry_s)
