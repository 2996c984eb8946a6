"""Verbs adapters register the argparse way: `bridge.registry.COMMANDS` maps a name to
"module:add_command", a function that adds its parser to argparse subparsers and sets
`func(args, settings)` (async or not; `without_config=True` when it reads no config file).
Under the Click CLI each runs with its own parser: its arguments pass through untouched.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
from typing import Any

import click

from bridge.cli.options import Cli


def adapter_verbs() -> dict[str, str]:
    """name → "module:add_command", as the registry lists them (none when it lists none)."""
    from bridge import registry

    return registry.commands()


def adapter_parser(name: str, target: str) -> argparse.ArgumentParser | None:
    """The verb's own parser, or None when its adapter is not in this build."""
    module, _, attribute = target.partition(":")
    try:
        add = getattr(importlib.import_module(module), attribute)
    except ModuleNotFoundError:
        return None
    top = argparse.ArgumentParser(prog="hitl-bridge")
    verbs = top.add_subparsers(dest="command")
    add(verbs)
    found: argparse.ArgumentParser | None = verbs.choices.get(name)
    return found


class ArgparseVerb(click.Command):
    """A Click verb that hands its arguments to an adapter's argparse parser."""

    def __init__(self, name: str, parser: argparse.ArgumentParser) -> None:
        summary = parser.description or ""
        super().__init__(name, help=summary, short_help=summary, add_help_option=False,
                         context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
                         params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)], callback=self.run)
        self.parser = parser

    def run(self, args: tuple[str, ...]) -> int:
        from bridge.logs import configure_logging

        try:
            parsed = self.parser.parse_args(list(args))  # --help and usage errors exit here, as argparse does
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 0
        cli = click.get_current_context().ensure_object(Cli)
        for name in ("url", "token"):  # `hitl-bridge --url X mcp`: the root's flags reach a verb that has them
            if getattr(parsed, name, False) is None and getattr(cli, name):
                setattr(parsed, name, getattr(cli, name))
        settings = None
        if getattr(parsed, "without_config", False):
            configure_logging("DEBUG" if cli.verbose > 1 else "INFO")  # its notes on stderr: stdout may be a protocol
        else:
            settings = cli.settings()
        result: Any = parsed.func(parsed, settings)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        return int(result or 0)


async def _awaited(result: Any) -> Any:
    return await result
