"""The documentation's reference pages, generated from the code so they cannot drift from it:

- reference/config.md: every config key, from the pydantic models (bridge/config*.py and each
  adapter's section): type, default, and the field's description or the comment beside it;
- reference/http-api.md: every operation of the daemon's OpenAPI document (the app built as
  `serve` builds it, on a throwaway SQLite store);
- reference/cli.md: every verb's `--help`, from the click commands (and the adapters' verbs);
- reference/metrics.md: every series `/metrics` exports, from the daemon's metrics registry.

The docs build calls `pages()` (scripts/docs_hooks.py); to look at them as files:

    .venv/bin/python scripts/gen_reference.py --out /tmp/reference
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import inspect
import io
import json
import re
import sys
import tempfile
import types
import typing
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pydantic import BaseModel, SecretStr  # noqa: E402
from pydantic.fields import FieldInfo  # noqa: E402
from pydantic_core import PydanticUndefined  # noqa: E402

from bridge.config import Settings  # noqa: E402
from bridge.durations import format_duration  # noqa: E402
from bridge.specs import channel_specs  # noqa: E402

#: the model that validates each adapter's section: channel sections by key, sources by `type`
CHANNEL_MODELS: dict[str, str] = {spec.name: spec.config_model for spec in channel_specs()}  # bridge.specs
SOURCE_MODELS: dict[str, str] = {
    "webhook": "adapters.webhook.source:WebhookConfig",
    "delta": "adapters.delta.config:DeltaConfig",
    "langgraph": "adapters.langgraph.source:LangGraphConfig",
    "teal": "adapters.teal.source:TealConfig",
    "mastra": "adapters.mastra.source:MastraConfig",
    "agentworld": "adapters.agentworld.source:AgentWorldConfig",
    "mcp": "adapters.mcp.settings:McpSettings",
    "github": "adapters.github.settings:GitHubConfig",
    "gitlab": "adapters.gitlab.settings:GitLabConfig",
    "gateway": "adapters.gateway.settings:GatewaySettings",
    "temporal": "adapters.temporal.config:TemporalConfig",
    "a2a": "adapters.a2a.server:A2aConfig",
    "agui": "adapters.agui.source:AguiConfig",
}
#: the page that explains each section, relative to docs/reference/
GUIDE: dict[str, str] = {
    "web": "../channels/web-inbox.md", "slack": "../channels/slack.md", "telegram": "../channels/telegram.md",
    "email": "../channels/email.md", "webhook": "../requests.md", "delta": "../engines/delta.md",
    "langgraph": "../engines/langgraph.md", "teal": "../engines/teal-mastra-agentworld.md",
    "mastra": "../engines/teal-mastra-agentworld.md", "agentworld": "../engines/teal-mastra-agentworld.md",
    "mcp": "../engines/mcp.md", "github": "../guides/github-gitlab-deploys.md",
    "gitlab": "../guides/github-gitlab-deploys.md", "store": "../store.md", "http": "../configuration.md",
    "gateway": "../guides/mcp-gateway.md",
    "temporal": "../engines/temporal.md", "a2a": "../engines/a2a.md", "agui": "../engines/agui.md",
    "routes": "../timing.md", "people": "../people.md",
}
GENERATED = "<!-- generated from the code by scripts/gen_reference.py at each docs build: do not edit -->\n\n"


def load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


# ---- config ----------------------------------------------------------------------------------

#: the core's config models (their docstrings are not shown; an adapter section's are)
_CORE_CONFIG = ("bridge.config", "bridge.config_daemon", "bridge.config_routes")


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """The comment beside each field (`name: T = x  # comment`) or on the lines just above it."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        above: list[str] = []
        for line in source.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                above.append(stripped.lstrip("#").lstrip(":").strip())
                continue
            field = re.match(r"^\s{4}(\w+)\s*:[^#]*?(?:#\s*(.*))?$", line)
            if field and not stripped.startswith(("def ", "@", "return")):
                text = " ".join([*above, (field.group(2) or "").lstrip(":").strip()]).strip()
                if text:
                    found[field.group(1)] = text
            above = []
    return found


def _type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return "duration" if args[0] is timedelta else _type(args[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type(a) if a is not type(None) else "null" for a in args)
    if origin is typing.Literal:
        return " or ".join(json.dumps(a) for a in args)
    if origin in (list, tuple, frozenset, set):
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return f"map of {_type(args[0])} → {_type(args[1])}" if args else "map"
    if annotation is timedelta:
        return "duration"
    if annotation is SecretStr:
        return "secret string"
    if annotation is Any:
        return "any"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.__name__
    return getattr(annotation, "__name__", str(annotation))


def _value(value: Any) -> str:
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, SecretStr):
        return json.dumps(value.get_secret_value())
    if isinstance(value, BaseModel):
        return "(see below)"
    return json.dumps(value, default=str)


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        return _value(info.default_factory())  # type: ignore[call-arg]
    if info.default is PydanticUndefined:
        return "**required**"
    return _value(info.default)


def _nested(annotation: Any) -> Iterator[type[BaseModel]]:
    """The models inside a field's type (Route in list[Route], ApiToken in dict[str, ApiToken | str])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _nested(arg)


def guide_meanings(guide: str | None) -> dict[str, str]:
    """What the section's page says of each key in its key tables (`| `key` [default] | meaning |`)."""
    if guide is None:
        return {}
    text = (ROOT / "docs" / "reference" / guide).resolve().read_text(encoding="utf-8")
    default = r"(?: \[`[^`]*`\]| \[[^\]`]*\])?"  # [1.0] or [`["."]`]
    rows = re.findall(rf"^\| `(\w+)`{default} \| (.+?) \|$", text, re.M)
    return {key: meaning for key, meaning in rows}


def model_table(model: type[BaseModel], prefix: str, seen: set[type[BaseModel]] | None = None,
                nest: bool = True, guide: str | None = None) -> str:
    """A table of `model`'s keys under `prefix`, then (with `nest`) one for each model nested in it;
    a key the section's `guide` page explains in a key table gets the page's words."""
    seen = set() if seen is None else seen
    seen.add(model)
    comments = {**_comments(model), **guide_meanings(guide)}  # the page's words for people, when it has some
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, info in model.model_fields.items():
        if info.exclude:
            continue
        key = info.alias or name
        meaning = (info.description or comments.get(name, "")).replace("|", "\\|").replace("\\\\|", "\\|")
        rows.append(f"| `{prefix}{key}` | {_type(info.annotation).replace('|', chr(92) + '|')} | "
                    f"{_default(info).replace('|', chr(92) + '|')} | {meaning} |")
        for inner in _nested(info.annotation):
            if nest and inner not in seen:
                nested.append((f"{prefix}{key}", inner))
    doc = inspect.cleandoc(model.__dict__.get("__doc__") or "")  # its own, not BaseModel's
    text = (doc.split("\n\n")[0].replace("\n", " ") + "\n\n" if doc and model.__module__ not in _CORE_CONFIG else "")
    out = [text + "\n".join(rows) + "\n"]
    for key, inner in nested:
        seen.add(inner)
        out.append(f"\n### `{key}`: {inner.__name__}\n\n" + model_table(inner, "", seen))
    return "".join(out)


def with_channel_rows(table: str) -> str:
    """The top-level table with a row per channel section (held aside by Settings, one per
    spec), before `sources`."""
    rows = [f"| `{spec.name}` | map of str → any or null | {json.dumps(spec.default_section)} | "
            + ("adapter sections: validated by the adapter that owns them (see bridge.registry)" if i == 0 else "")
            + " |\n" for i, spec in enumerate(channel_specs())]
    head, sep, tail = table.partition("| `sources` |")
    return head + "".join(rows) + sep + tail


def config_page() -> str:
    parts = [
        "# Configuration keys\n\n", GENERATED,
        "Every key `serve` and `check-config` accept, with its type and default, read from the models "
        "that validate the file. Durations are written like `90s`, `10m`, `2h`, `1d` or `1h30m` (or a "
        "number of seconds). How the file is found, `${ENV}` substitution and `HITL_BRIDGE__SECTION__KEY` "
        "overrides: [Configuration](../configuration.md).\n\n",
        "## Top level\n\n", with_channel_rows(model_table(Settings, "", nest=False)),
    ]
    seen: set[type[BaseModel]] = {Settings}
    for name, info in Settings.model_fields.items():
        for inner in _nested(info.annotation):
            if inner not in seen:
                each = "[]" if typing.get_origin(info.annotation) is list else ""  # routes[].notify
                parts.append(f"\n## `{name}`\n\n" + model_table(inner, f"{name}{each}.", seen))
            break
    for key, target in CHANNEL_MODELS.items():
        guide = f" ([{key} guide]({GUIDE[key]}))" if key in GUIDE else ""
        parts.append(f"\n## `{key}:` (channel){guide}\n\n"
                     + model_table(load(target), f"{key}.", guide=GUIDE.get(key)))
    for kind, target in SOURCE_MODELS.items():
        parts.append(f"\n## `sources: - type: {kind}` ([guide]({GUIDE[kind]}))\n\n"
                     + model_table(load(target), "", guide=GUIDE[kind]))
    return "".join(parts)


# ---- HTTP API, metrics: from a daemon built as serve builds it ---------------------------------

async def _daemon_facts() -> tuple[dict[str, Any], list[tuple[Any, list[str]]]]:
    from bridge.config import load_settings
    from bridge.daemon import Daemon

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "reference.yaml"
        config.write_text(
            f"store: {{url: 'sqlite:///{tmp}/bridge.db'}}\n"
            "sources: [{type: webhook}, {type: mcp}, {type: teal, base_url: 'http://127.0.0.1:9'}]\n",
            encoding="utf-8")
        daemon = Daemon(load_settings(str(config), env={}))
        await daemon.start(serve_http=False)
        try:
            schema = daemon.app.openapi()
            metrics = daemon.app.state.metrics
            await metrics.render()  # fills the gauges computed on scrape, so their labels show
            families = [(family, _label_names(metrics.registry, family.name)) for family in metrics.registry.collect()]
        finally:
            await daemon.stop()
    return schema, families


def _schema_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return "`" + schema["$ref"].rsplit("/", 1)[-1] + "`"
    if schema.get("type") == "array":
        return "list of " + _schema_name(schema.get("items", {}))
    if "anyOf" in schema:
        return " or ".join(_schema_name(s) for s in schema["anyOf"])
    return str(schema.get("type", "any"))


def http_page(schema: dict[str, Any]) -> str:
    out = ["# HTTP API\n\n", GENERATED,
           f"{schema['info'].get('description', '')} Version {schema['info'].get('version')}. The same "
           "document is served by the daemon at `/openapi.json`, with Swagger UI at `/docs` and ReDoc at "
           "`/redoc`. Requests, answers and callbacks explained: "
           "[Requests and the HTTP API](../requests.md).\n\n"]
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            out.append(f"## `{method.upper()} {path}`\n\n")
            if op.get("summary"):
                out.append(f"**{op['summary']}**\n\n")
            if op.get("description"):
                out.append(op["description"].strip() + "\n\n")
            params = op.get("parameters", [])
            if params:
                out.append("| parameter | in | type | required | meaning |\n|---|---|---|---|---|\n")
                for p in params:
                    desc = (p.get("description") or "").replace("\n", " ").replace("|", "\\|")
                    out.append(f"| `{p['name']}` | {p['in']} | {_schema_name(p.get('schema', {}))} | "
                               f"{'yes' if p.get('required') else 'no'} | {desc} |\n")
                out.append("\n")
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                out.append(f"Body ({media}): {_schema_name(content.get('schema', {}))}\n\n")
            responses = op.get("responses", {})
            if responses:
                out.append("Responses: " + ", ".join(
                    f"`{code}` {r.get('description', '')}".rstrip() for code, r in responses.items()) + "\n\n")
    components = schema.get("components", {}).get("schemas", {})
    if components:
        out.append("## Schemas\n\n")
        for name, comp in sorted(components.items()):
            out.append(f"### `{name}`\n\n")
            props = comp.get("properties", {})
            if not props:
                out.append(f"{comp.get('type', 'any')}\n\n")
                continue
            required = set(comp.get("required", []))
            out.append("| field | type | required |\n|---|---|---|\n")
            for prop, spec in props.items():
                out.append(f"| `{prop}` | {_schema_name(spec)} | {'yes' if prop in required else 'no'} |\n")
            out.append("\n")
    return "".join(out)


def _label_names(registry: Any, name: str) -> list[str]:
    """A metric's label names, also when no series of it exists yet (prometheus_client keeps them
    on the collector, which its registry maps to the names it exports)."""
    for collector, names in getattr(registry, "_collector_to_names", {}).items():
        if name in names or any(n.startswith(name + "_") for n in names):
            return list(getattr(collector, "_labelnames", ()))
    return []


def metrics_page(families: list[tuple[Any, list[str]]]) -> str:
    out = ["# Metrics\n\n", GENERATED,
           "Every series `/metrics` exports (Prometheus text format), read from the daemon's metrics "
           "registry. Gauges come from the store and are the same on every replica; counters and "
           "histograms count in each process. Alerts and a dashboard: [Operations](../operations.md#metrics).\n\n",
           "| metric | type | labels | meaning |\n|---|---|---|---|\n"]
    for family, label_names in sorted(families, key=lambda f: f[0].name):
        name = family.name + ("_total" if family.type == "counter" else "")
        labels = sorted(set(label_names) | {label for sample in family.samples for label in sample.labels
                                            if label != "le"})
        documentation = family.documentation.replace("|", "\\|").replace("\n", " ")
        out.append(f"| `{name}` | {family.type} | {', '.join(f'`{x}`' for x in labels)} | {documentation} |\n")
    return "".join(out)


# ---- CLI -------------------------------------------------------------------------------------

def cli_page() -> str:
    import click

    from bridge import cli

    out = ["# CLI\n\n", GENERATED,
           "Every verb's `--help`, as `hitl-bridge` prints it. How to use them: [CLI](../cli.md).\n\n"]
    root = cli.root
    with click.Context(root, info_name=cli.PROG) as ctx:
        out.append(f"## `{cli.PROG}`\n\n```\n{root.get_help(ctx)}\n```\n\n")
        for name in root.list_commands(ctx):
            command = root.get_command(ctx, name)
            if command is None:
                continue
            out.append(f"## `{cli.PROG} {name}`\n\n```\n{_help(command, name, ctx)}\n```\n\n")
    return "".join(out)


def _help(command: Any, name: str, parent: Any) -> str:
    import click

    if isinstance(command, click.Command) and not hasattr(command, "parser"):
        with click.Context(command, info_name=name, parent=parent) as ctx:
            return command.get_help(ctx)
    buffer = io.StringIO()  # an adapter's argparse verb: its own parser prints the help
    with contextlib.redirect_stdout(buffer):
        parser = command.parser
        parser.prog = f"hitl-bridge {name}"
        parser.print_help()
    return buffer.getvalue().rstrip()


# ---- all -------------------------------------------------------------------------------------

def pages() -> dict[str, str]:
    """docs-relative path → Markdown, for every reference page."""
    schema, families = asyncio.run(_daemon_facts())
    return {"reference/config.md": config_page(), "reference/http-api.md": http_page(schema),
            "reference/cli.md": cli_page(), "reference/metrics.md": metrics_page(families)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write reference/*.md into")
    args = parser.parse_args()
    for path, text in pages().items():
        target = args.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
