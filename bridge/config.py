"""Configuration: one YAML file (DESIGN §4), `${ENV}` substitution, env overrides.

Env overrides use `HITL_BRIDGE__SECTION__KEY=value` (double underscores between keys,
value read as YAML), e.g. `HITL_BRIDGE__HTTP__LISTEN=0.0.0.0:8787`.

The settings root and loading live here; the sections in bridge.config_daemon, routes in
bridge.config_routes, the environment's part in bridge.config_env (each name importable
from here too).
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails

from bridge.config_daemon import TOKEN_NAME_PATTERN as TOKEN_NAME_PATTERN
from bridge.config_daemon import ApiToken as ApiToken
from bridge.config_daemon import DeliverySettings as DeliverySettings
from bridge.config_daemon import Duration as Duration
from bridge.config_daemon import HttpSettings as HttpSettings
from bridge.config_daemon import SecretsSettings as SecretsSettings
from bridge.config_daemon import StoreSettings as StoreSettings
from bridge.config_daemon import StrictModel
from bridge.config_env import ENV_PREFIX as ENV_PREFIX
from bridge.config_env import UnsetVariables as UnsetVariables
from bridge.config_env import apply_env_overrides as apply_env_overrides
from bridge.config_env import substitute_env as substitute_env
from bridge.config_errors import load_yaml, validation_problems
from bridge.config_routes import EscalationLevel as EscalationLevel
from bridge.config_routes import OnTimeout as OnTimeout
from bridge.config_routes import Route as Route
from bridge.config_yaml import YamlLimit, read_bounded
from bridge.errors import ConfigError
from bridge.people import People, PeopleError
from bridge.policy.rules import PolicyRule
from bridge.specs import channel_specs

CONFIG_ENV = "HITL_BRIDGE_CONFIG"
#: where to look when neither --config nor $HITL_BRIDGE_CONFIG names a file: the first of
#: these that exists (os.pathsep-separated; the Docker image sets /config/… first)
SEARCH_PATH_ENV = "HITL_BRIDGE_CONFIG_PATH"
DEFAULT_FILE = "hitl-bridge.yaml"
EMBEDDED = "<embedded defaults>"


class Settings(StrictModel):
    store: StoreSettings = Field(default_factory=StoreSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    secrets: SecretsSettings = Field(default_factory=SecretsSettings)
    delivery: DeliverySettings = Field(default_factory=DeliverySettings)
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = "text"
    sources: list[dict[str, Any]] = Field(default_factory=lambda: [{"type": "webhook"}])
    routes: list[Route] = Field(default_factory=list)
    default_route: Route = Field(default_factory=lambda: Route(name="default"))
    #: person -> handles (`slack:U…`, `telegram:<id>`, `web:<login>`, `email:<address>`, `api:<token>`)
    people: dict[str, list[str]] = Field(default_factory=dict)
    #: group -> people
    groups: dict[str, list[str]] = Field(default_factory=dict)
    #: rules that decide requests without a person (bridge.policy.rules): deny beats allow beats ask
    policies: list[PolicyRule] = Field(default_factory=list)
    #: a file with no routes, default_route, people or groups is accepted (check-config and
    #: a reload refuse one otherwise: an empty or cut-short file would drop every rule)
    allow_empty: bool = False
    # where the settings came from, for error messages
    origin: str = Field(default=EMBEDDED, exclude=True)
    _people: People = PrivateAttr(default_factory=People)
    #: channel sections (`<name>:` of each bridge.specs spec), validated by the adapter that
    #: owns them (see bridge.registry)
    _sections: dict[str, dict[str, Any] | None] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _channel_sections(cls, data: Any, handler: Any) -> Settings:
        """Each channel's section (`<name>:` of its spec) is the adapter's to validate: kept
        aside as a mapping (or None), the spec's default when the config has none."""
        sections: dict[str, dict[str, Any] | None] = {}
        wrong: list[InitErrorDetails] = []
        if isinstance(data, dict):
            data = dict(data)
            for spec in channel_specs():
                section = data.pop(spec.name) if spec.name in data else copy.deepcopy(spec.default_section)
                if section is not None and not isinstance(section, dict):
                    wrong.append(InitErrorDetails(type="dict_type", loc=(spec.name,), input=section))
                sections[spec.name] = section
        try:
            settings: Settings = handler(data)
        except ValidationError as exc:  # every problem at once, the sections' too
            raise ValidationError.from_exception_data(exc.title, [*wrong, *exc.errors()]) from None  # type: ignore[list-item]
        if wrong:
            raise ValidationError.from_exception_data(cls.__name__, wrong)
        if isinstance(data, dict):
            settings._sections = sections
        return settings

    if not TYPE_CHECKING:  # `settings.slack`: a channel's section read as an attribute, as before
        def __getattr__(self, name: str) -> Any:
            sections = (object.__getattribute__(self, "__pydantic_private__") or {}).get("_sections") or {}
            if name in sections:
                return sections[name]
            return super().__getattr__(name)

    def section(self, name: str) -> dict[str, Any] | None:
        """The config section of the channel `name` (None: not configured)."""
        return self._sections.get(name)

    def set_section(self, name: str, section: dict[str, Any] | None) -> None:
        self._sections[name] = section

    @property
    def sections(self) -> dict[str, dict[str, Any] | None]:
        """Every channel section, by name (a copy)."""
        return dict(self._sections)

    @field_validator("sources")
    @classmethod
    def _sources_have_type(cls, sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, source in enumerate(sources):
            if not isinstance(source, dict) or not isinstance(source.get("type"), str):
                raise ValueError(f"sources[{i}] needs a `type` (delta, webhook, langgraph...)")
        return sources

    @model_validator(mode="after")
    def _name_routes(self) -> Settings:
        for i, route in enumerate(self.routes):
            if route.name is None:
                route.name = f"routes[{i}]"
        if self.default_route.name is None:
            self.default_route.name = "default"
        return self

    @model_validator(mode="after")
    def _people_hold_together(self) -> Settings:
        try:
            self._people = People(self.people, self.groups)
        except PeopleError as exc:
            raise ValueError(str(exc)) from None
        for i, route in enumerate([*self.routes, self.default_route]):
            key = f"routes[{i}]" if i < len(self.routes) else "default_route"
            entries = [*route.responders, *(t for level in route.escalate for t in level.notify)]
            unknown = self._people.unknown_references(entries)
            if unknown:
                raise ValueError(f"{key}: {', '.join(unknown)} is not defined in people: / groups:")
            try:
                route.check_quorum(self._people)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
        return self

    @model_validator(mode="after")
    def _policies_can_decide(self) -> Settings:
        """A rule that can never match, or that an earlier or stronger one shadows, is refused
        (bridge.policy.lint), naming it and the fix."""
        if not self.policies:
            return self
        from bridge.policy.lint import policy_problems

        routes = [r.name or "" for r in [*self.routes, self.default_route]]
        sources = {str(s.get("name") or s.get("type")): str(s.get("type")) for s in self.sources}
        problems = policy_problems(self.policies, routes, sources)
        if problems:
            index, reason = problems[0]
            more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''} in policies:)" \
                if len(problems) > 1 else ""
            raise ValueError(f"policies[{index}]: {reason}{more}")
        return self

    @property
    def has_rules(self) -> bool:
        """Whether the config says anything about who answers what: a route, a default_route
        of its own, people or groups."""
        return bool(self.routes or self.people or self.groups
                    or self.default_route != Route(name="default"))

    @property
    def directory(self) -> People:
        """The people and groups, resolved (bridge.people)."""
        return self._people

    @property
    def data_dir(self) -> Path:
        if self.store.url.startswith("sqlite:///"):
            return Path(self.store.url.removeprefix("sqlite:///")).parent
        return Path(".hitl-bridge")


_KEYED_REASON = re.compile(r"^((?:routes\[\d+\]|default_route|people|groups|policies\[\d+\])[\w.\[\]-]*): (.*)$",
                           re.S)


def embedded_defaults(env: dict[str, str]) -> dict[str, Any]:
    """No config file: web inbox + HTTP intake + /mcp on loopback, cwd watched, chat apps by env."""
    data: dict[str, Any] = {
        "sources": [{"type": "delta", "roots": ["."]}, {"type": "webhook"}, {"type": "mcp"}],
    }
    for spec in channel_specs():  # the inbox by its default, chat apps by their env
        section = spec.env_section(env)
        if section is None and spec.default_section is not None:
            section = copy.deepcopy(spec.default_section)
        if section is not None:
            data[spec.name] = section
    if env.get("BRIDGE_API_TOKEN"):
        data["http"] = {"api_tokens": [env["BRIDGE_API_TOKEN"]]}
    if env.get("BRIDGE_SECRET_KEY"):
        data["secrets"] = {"key": env["BRIDGE_SECRET_KEY"]}
    return data


def find_config_file(explicit: str | None, env: dict[str, str]) -> Path | None:
    """`--config`, else `$HITL_BRIDGE_CONFIG`, else the first existing file of
    `$HITL_BRIDGE_CONFIG_PATH` (default: ./hitl-bridge.yaml), else None (embedded defaults)."""
    if explicit:
        return Path(explicit)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    candidates = [p for p in env.get(SEARCH_PATH_ENV, DEFAULT_FILE).split(os.pathsep) if p.strip()]
    return next((Path(p) for p in candidates if Path(p).is_file()), None)


def load_settings(path: str | None = None, env: dict[str, str] | None = None) -> Settings:
    """Read, substitute, override and validate; raise ConfigError naming file and key."""
    env = dict(os.environ) if env is None else env
    file = find_config_file(path, env)
    origin = str(file) if file else EMBEDDED
    text: str | None = None
    if file is None:
        data = embedded_defaults(env)
    else:
        try:
            text = read_bounded(file)
        except FileNotFoundError:
            raise ConfigError(origin, "", "file not found") from None
        except YamlLimit as exc:
            raise ConfigError(origin, "", str(exc)) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(origin, "", f"cannot read: {exc}") from None
        loaded = load_yaml(text, origin)  # bounded; a syntax error names the file and the line
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(origin, "", "the top level must be a mapping of sections")
        try:
            data = substitute_env(loaded, env)
        except UnsetVariables as exc:
            key, name = exc.missing[0]
            others = sorted({n for _, n in exc.missing[1:]} - {name})
            more = f" (also unset: {', '.join(others)})" if others else ""
            raise ConfigError(origin, key, f"${{{name}}} is not set (set the variable, or give a default: "
                                           f"${{{name}:-default}}, or ${{{name}:-}} for an optional value){more}"
                              ) from None
    data = apply_env_overrides(data, env)
    from bridge.env_routes import apply_env_routes  # SLACK_CHANNEL / TELEGRAM_CHAT_ID: the default route's targets

    data = apply_env_routes(data, env)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:  # every problem, each with its line and a did-you-mean
        raise validation_problems(exc, origin, text if file is not None else None, Settings,
                                  _KEYED_REASON, [s.name for s in channel_specs()]) from None
    settings.origin = origin
    return settings
