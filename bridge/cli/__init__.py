"""`hitl-bridge`: run the daemon (`serve`), and work with a running one from any folder or
machine (`list`, `show`, `answer`, `inbox`...) through its HTTP API. `--offline` reads the
store directly instead, for admin work while the daemon is down.

Verbs are registered by name in VERBS ("module:attribute" of a Click command), imported
only when used: a new verb is one more line there. Adapters' verbs registered the argparse
way (`bridge.registry.COMMANDS`, e.g. `hitl-bridge mcp`) are listed after them.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import Any

import click

from bridge.cli.exits import BROKEN_PIPE, EXIT_CODES, INTERRUPTED, REFUSED, USAGE, Failed
from bridge.cli.options import Cli, daemon_options

PROG = "hitl-bridge"
COMPLETE_VAR = "_HITL_BRIDGE_COMPLETE"

#: verb → "module:attribute" of its click.Command, in the order `--help` lists them
VERBS: dict[str, str] = {
    "serve": "bridge.cli.admin:serve",
    "list": "bridge.cli.requests:list_requests",
    "show": "bridge.cli.requests:show",
    "answer": "bridge.cli.answer:answer",
    "inbox": "bridge.cli.inbox:inbox",
    "cancel": "bridge.cli.requests:cancel",
    "redeliver": "bridge.cli.requests:redeliver",
    "grants": "bridge.cli.grants:grants",
    "doctor": "bridge.cli.admin:doctor",
    "check-config": "bridge.cli.admin:check_config",
    "demo": "bridge.cli.demo:demo",
    "completion": "bridge.cli.completion:completion",
}

ENVIRONMENT = """\b
Environment:
  HITL_BRIDGE_URL     the daemon to talk to (as --url)
  HITL_BRIDGE_TOKEN   its API token (as --token)
  HITL_BRIDGE_CONFIG  the config file (as --config)"""


class Verbs(click.Group):
    """The verbs of VERBS, each imported when it is first needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from bridge.cli.adapter_verbs import adapter_verbs

        return list(VERBS) + [name for name in adapter_verbs() if name not in VERBS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = VERBS.get(cmd_name)
        if target is None:
            from bridge.cli.adapter_verbs import ArgparseVerb, adapter_parser, adapter_verbs

            found = adapter_verbs().get(cmd_name)
            parser = adapter_parser(cmd_name, found) if found else None
            return ArgparseVerb(cmd_name, parser) if parser is not None else None
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"VERBS[{cmd_name!r}] = {target!r} is not a click command")
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a reader gone away (`| head`) shows here, not at exit
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise click.exceptions.Exit(BROKEN_PIPE) from None
        return result


@click.group(cls=Verbs, epilog=f"{EXIT_CODES}\n\n{ENVIRONMENT}",
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(None, "--version", "-V", package_name="hitl-bridge", prog_name=PROG,
                      message="%(prog)s %(version)s")
@click.option("-v", "--verbose", count=True, help="Log what happens (-vv: with the libraries' debug lines).")
@daemon_options
@click.pass_context
def root(ctx: click.Context, verbose: int) -> None:
    """hitl-bridge: paused agent runs get answers from people.

    `serve` runs the daemon. The other verbs talk to a running daemon through its HTTP API,
    from any folder or machine: it is found at --url / HITL_BRIDGE_URL, else at http.listen
    of the config (127.0.0.1:8787 by default). `--offline` reads the store instead."""
    from bridge.logs import configure_logging

    cli = ctx.ensure_object(Cli)
    cli.verbose = verbose
    configure_logging("DEBUG" if verbose > 1 else "INFO" if verbose else "WARNING")


def main(argv: list[str] | None = None) -> None:
    """The `hitl-bridge` command."""
    sys.exit(run(argv))


def run(argv: list[str] | None = None) -> int:
    """Run one command line; its exit code (see EXIT_CODES)."""
    from bridge.errors import ConfigError
    from bridge.store import StoreError

    try:
        result = root.main(args=argv, prog_name=PROG, complete_var=COMPLETE_VAR, standalone_mode=False)
    except click.exceptions.Abort:  # Ctrl-C (Click has ended the line)
        return INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except ConfigError as exc:  # from deep inside a verb (a source's section, a reload)
        click.echo(f"config error: {exc}", err=True)
        return USAGE
    except StoreError as exc:  # a store that cannot be opened or used: one line, the fix if known
        fix = getattr(exc, "fix", "")
        click.echo(f"store error: {exc}" + (f" (fix: {fix})" if fix else ""), err=True)
        return REFUSED
    return result if isinstance(result, int) else 0


__all__ = ["COMPLETE_VAR", "PROG", "VERBS", "Cli", "Failed", "daemon_options", "main", "run"]
logging.getLogger(__name__).addHandler(logging.NullHandler())
