"""`serve`, `doctor`, `check-config`: the daemon itself and the checks of its config."""

from __future__ import annotations

import asyncio
import json
import logging
import os

import click

from bridge.cli.exits import REFUSED, USAGE, Failed, codes
from bridge.cli.options import Cli, config_failure, config_option, daemon_options, json_option
from bridge.http.listen import port_taken


@click.command(short_help="Run the daemon (web inbox, HTTP API, sources, channels).",
               epilog=codes("stopped (Ctrl-C, SIGTERM)", "could not start (the port is taken, the store will not open)",
                            "config error", remote=False, interrupt=False))
@click.option("--listen", metavar="HOST:PORT",
              help="Where the web inbox and HTTP API listen (default: http.listen, 127.0.0.1:8787).")
@config_option
@click.pass_obj
def serve(cli: Cli, listen: str | None) -> int:
    """Run the daemon: sources, channels, the web inbox and the HTTP API on http.listen
    (127.0.0.1:8787 by default), until Ctrl-C or SIGTERM; SIGHUP reloads the config. With no
    config file it runs on embedded defaults (SQLite in ./.hitl-bridge/)."""
    from bridge.config import EMBEDDED, ENV_PREFIX
    from bridge.config_daemon import HttpSettings
    from bridge.daemon import Daemon
    from bridge.errors import ConfigError
    from bridge.eventloop import loop_factory, run
    from bridge.logs import configure_logging

    if listen is not None:
        try:
            HttpSettings.model_validate({"listen": listen})  # the same check the config file gets
        except ValueError:
            raise Failed(f"--listen: expected HOST:PORT such as 127.0.0.1:8788, got {listen!r}", USAGE) from None
        # as an env override: it wins over every config file, and a reload (SIGHUP) keeps it
        os.environ[f"{ENV_PREFIX}HTTP__LISTEN"] = json.dumps(listen)  # read as YAML: quoted, a string
    settings = cli.settings()
    try:
        _name, factory = loop_factory()
    except ValueError as exc:
        raise Failed(str(exc), USAGE) from None
    configure_logging(settings.log_level, settings.log_format)
    taken = port_taken(settings.http.host, settings.http.port)
    if taken:
        raise Failed(f"cannot listen on {settings.http.listen}: {taken}. Is another hitl-bridge (or `demo`) "
                     "running there? Stop it, or set another http.listen.", REFUSED)
    from bridge.store.sqlite_lock import StoreInUse, one_daemon_per_store

    try:
        with one_daemon_per_store(settings.store.url, settings.http.listen):  # one serve per SQLite file
            daemon = Daemon(settings, embedded=settings.origin == EMBEDDED)
            if settings.origin == EMBEDDED:  # a log line, not a print: JSON logs stay JSON
                logging.getLogger("hitl_bridge").info(
                    "no config file, running on embedded defaults (store %s, web inbox at http://%s/inbox)",
                    settings.store.url, settings.http.listen)
            run(daemon.run_forever(), factory)
    except StoreInUse as exc:
        raise Failed(f"hitl-bridge could not start: {exc}", REFUSED) from None
    except ConfigError as exc:
        raise config_failure(exc) from None
    except OSError as exc:  # the port taken since the check, a store that will not open...
        raise Failed(f"hitl-bridge could not start: {exc}", REFUSED) from None
    return 0


@click.command(short_help="Check config, store, platforms, engines and the running daemon.",
               epilog=codes("every check passed (warnings allowed)", "a check failed", "config error", remote=False))
@json_option
@daemon_options
@click.pass_obj
def doctor(cli: Cli, as_json: bool) -> int:
    """Check what is live: the config, the store (opened and written), each route target,
    Slack and Telegram tokens, scopes and chats, each engine's reachability, and the running
    daemon's /readyz and sources (at --url, else http.listen)."""
    from bridge.doctor import diagnose, exit_code, render_json, render_text

    settings = cli.settings()
    address = cli.address()
    findings = asyncio.run(diagnose(settings, daemon_url=address.url, token=address.token))
    click.echo(render_json(findings) if as_json else render_text(findings))
    return exit_code(findings)


@click.command("check-config", short_help="Validate a config file without starting anything.",
               epilog=codes("valid", None, "not valid: the file, the key and the reason", remote=False))
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--allow-empty", is_flag=True,
              help="Accept a file with no routes, default_route, people or groups (as `allow_empty: true` does).")
@json_option
@config_option
@click.pass_obj
def check_config(cli: Cli, file: str | None, allow_empty: bool, as_json: bool) -> int:
    """Validate a config file as `serve` would read it, without starting anything or using
    the network: a summary, or the file, the key and the fix. FILE defaults to the one
    `serve` would read. A file with no rules at all is an error (a reload refuses it)
    unless it says `allow_empty: true` or --allow-empty is given."""
    from bridge.config import load_settings
    from bridge.errors import ConfigError
    from bridge.preflight import check_config as check
    from bridge.reload import check_has_rules

    try:
        settings = load_settings(file or cli.config)  # raises ConfigError on the first mistake
        if not allow_empty:
            check_has_rules(settings)
        summary = check(settings)
    except ConfigError as exc:
        if not as_json:
            raise config_failure(exc) from None
        problems = getattr(exc, "problems", None) or [(None, exc.key, exc.reason)]
        click.echo(json.dumps({"ok": False, "file": exc.file, "key": exc.key, "error": exc.reason,
                               "problems": [{"line": line, "key": key, "error": reason}
                                            for line, key, reason in problems]}, indent=2))
        return USAGE
    click.echo(json.dumps({"ok": True, "summary": summary}, indent=2) if as_json else summary)
    return 0
