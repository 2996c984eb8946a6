"""`hitl-bridge teams manifest`: write the Teams app package for the config's bot."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from adapters.teams.manifest import package

HELP = "Microsoft Teams: write the app package (manifest.json and icons, zipped) to install the bot"


def add_command(sub: Any) -> None:
    """Register `teams` on the CLI's subparsers."""
    p = sub.add_parser("teams", help=HELP, description=HELP)
    verbs = p.add_subparsers(dest="teams_command", required=True)
    m = verbs.add_parser("manifest", help="write the app package")
    m.add_argument("--out", default="hitl-bridge-teams.zip", help="where to write the zip (default: %(default)s)")
    p.set_defaults(func=cmd_teams)


def cmd_teams(args: argparse.Namespace, settings: Any) -> int:
    section = settings.section("teams") if settings is not None else None
    if not section or not section.get("app_id"):
        print("the config has no teams: section with an app_id (the bot's Microsoft App ID)")
        return 1
    out = Path(args.out)
    out.write_bytes(package(str(section["app_id"]), str(section.get("app_name") or "hitl-bridge")))
    print(f"wrote {out}: upload it in Teams (Apps → Manage your apps → Upload an app)")
    return 0
