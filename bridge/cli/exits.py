"""Exit codes, and the one way a verb fails: `Failed(message, code)` prints the message on
stderr (one line, no traceback) and exits with `code`."""

from __future__ import annotations

from typing import IO, Any

import click

OK = 0
REFUSED = 1  # the daemon (or the store) said no: not found, already closed, not allowed; doctor found a failure
USAGE = 2  # bad arguments or config; an answer that does not fit its question
UNREACHABLE = 3  # no daemon answers at the URL (or something else answers there)
UNAUTHORIZED = 4  # the daemon wants a token, or another one
INTERRUPTED = 130  # Ctrl-C
BROKEN_PIPE = 141  # the reader went away (`| head`): quiet, as other Unix tools

EXIT_CODES = f"""Exit codes: {OK} ok · {REFUSED} refused or not found · {USAGE} usage or config error ·
{UNREACHABLE} daemon unreachable · {UNAUTHORIZED} token missing or refused · {INTERRUPTED} interrupted."""


class Failed(click.ClickException):
    """A verb could not do what was asked: `message` goes to stderr as is."""

    def __init__(self, message: str, code: int = REFUSED) -> None:
        super().__init__(message)
        self.exit_code = code  # type: ignore[misc]  # Click declares it per class; here it is per failure

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(self.format_message(), err=True)
