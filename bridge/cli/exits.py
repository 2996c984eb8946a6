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

EXIT_CODES = f"""\b
Exit codes:
  {OK:<4} ok
  {REFUSED:<4} refused or not found (the daemon said no; doctor found a failure)
  {USAGE:<4} usage or config error (also an answer that does not fit its question)
  {UNREACHABLE:<4} no daemon answers at the URL
  {UNAUTHORIZED:<4} token missing or refused
  {INTERRUPTED:<4} interrupted (Ctrl-C)
  {BROKEN_PIPE:<4} the reader closed the output early (`| head`), as other Unix tools"""


def codes(ok: str, refused: str | None, usage: str = "usage or config error", *, remote: bool = True,
          interrupt: bool = True) -> str:
    """A verb's epilog: what each exit code means for it."""
    daemon = f" · {UNREACHABLE} no daemon · {UNAUTHORIZED} token refused" if remote else ""
    ctrl_c = f" · {INTERRUPTED} Ctrl-C" if interrupt else ""
    no = f" · {REFUSED} {refused}" if refused else ""
    return f"Exit codes: {OK} {ok}{no} · {USAGE} {usage}{daemon}{ctrl_c}."


class Failed(click.ClickException):
    """A verb could not do what was asked: `message` goes to stderr as is."""

    def __init__(self, message: str, code: int = REFUSED) -> None:
        super().__init__(message)
        self.exit_code = code  # type: ignore[misc]  # Click declares it per class; here it is per failure

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(self.format_message(), err=True)
