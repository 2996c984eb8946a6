"""Configuration: one YAML file (DESIGN §4), `${ENV}` substitution, env overrides.

Env overrides use `HITL_BRIDGE__SECTION__KEY=value` (double underscores between keys,
value read as YAML), e.g. `HITL_BRIDGE__HTTP__LISTEN=0.0.0.0:8787`.
"""

from __future__ import annotations

import copy
import ipaddress
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from bridge.config_errors import load_yaml, validation_problems
from bridge.config_yaml import YamlLimit, read_bounded
from bridge.durations import parse_duration
from bridge.errors import ConfigError
from bridge.people import People, PeopleError
from bridge.specs import channel_specs, default_targets

ENV_PREFIX = "HITL_BRIDGE__"
CONFIG_ENV = "HITL_BRIDGE_CONFIG"
#: where to look when neither --config nor $HITL_BRIDGE_CONFIG names a file: the first of
#: these that exists (os.pathsep-separated; the Docker image sets /config/… first)
SEARCH_PATH_ENV = "HITL_BRIDGE_CONFIG_PATH"
DEFAULT_FILE = "hitl-bridge.yaml"
EMBEDDED = "<embedded defaults>"

Duration = Annotated[timedelta, BeforeValidator(parse_duration)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoreSettings(_Strict):
    url: str = "sqlite:///./.hitl-bridge/bridge.db"
    #: prune closed requests (cancelled, delivered, expired, failed; outcome delivered) last
    #: changed longer ago than this, with their events; None (the default): keep everything
    retain_closed: Duration | None = None

    @field_validator("retain_closed", mode="before")
    @classmethod
    def _off(cls, value: object) -> object:
        off = value is False or (isinstance(value, str) and value.strip().lower() in ("off", "never"))
        return None if off else value

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, url: str) -> str:
        if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError("use sqlite:///path/to/file.db or postgresql://user@host:5432/db")
        return url


TOKEN_NAME_PATTERN = r"^[A-Za-z0-9_.@-]{1,64}$"


class ApiToken(_Strict):
    """One bearer token for /v1. Its name is the identity that answers with it (`api:<name>`)."""

    token: str = Field(min_length=16, max_length=512)
    #: may answer in the name of others (the body's `responder` names who): a chat relay,
    #: an operator's tool. Without it a token votes only as itself.
    act_for_others: bool = False


class HttpSettings(_Strict):
    listen: str = "127.0.0.1:8787"
    #: name -> token (or {token, act_for_others}); a plain list names them api, api-2, ...
    api_tokens: dict[str, ApiToken] = Field(default_factory=dict)
    max_body_bytes: int = Field(default=256 * 1024, ge=1024, le=64 * 1024 * 1024)
    callback_allow: list[str] = Field(default_factory=list)  # host globs; empty: any public host
    #: callbacks may reach loopback, private, link-local addresses (always so on a loopback-only
    #: daemon; a host named in callback_allow may too)
    callback_allow_private: bool = False
    public_url: str | None = None  # how people reach this bridge (links in messages)
    #: Host names the bridge answers to; None: the listen address, localhost, 127.0.0.1, ::1 and
    #: the hosts of public_url / telegram.webhook_url; "*.example.com" for subdomains; "*": any
    allowed_hosts: list[str] | None = None
    metrics_public: bool = False  # /metrics without a token even when api_tokens are set
    #: wrong credentials (answers 401) from one client address per minute before it gets 429
    max_auth_failures: int = Field(default=20, ge=1, le=100_000)
    #: proxies (addresses or CIDR networks) whose `X-Forwarded-For` / `X-Forwarded-Proto` are
    #: believed; from anyone else they are ignored and the socket's peer is the client. None by
    #: default: every client is who connects
    trusted_proxies: list[str] = Field(default_factory=list, max_length=1000)
    #: time a client has to send a whole request (headers and body) once it connects
    read_timeout: Duration = timedelta(seconds=15)
    keep_alive_timeout: Duration = timedelta(seconds=5)  # an idle connection is closed after it
    #: open connections at once; None: three quarters of the open-file limit (ulimit -n)
    max_connections: int | None = Field(default=None, ge=4, le=1_000_000)

    @field_validator("api_tokens", mode="before")
    @classmethod
    def _named_tokens(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            value = {("api" if i == 0 else f"api-{i + 1}"): t for i, t in enumerate(value)}
        if not isinstance(value, dict):
            raise ValueError("expected a map of name: token (or a list of tokens)")
        out: dict[str, Any] = {}
        for name, token in value.items():
            if token in ("", None) or (isinstance(token, dict) and token.get("token") in ("", None)):
                continue  # an unset optional token
            if not isinstance(name, str) or not re.match(TOKEN_NAME_PATTERN, name):
                raise ValueError(f"token name {str(name)[:40]!r}: use 1-64 letters, digits, '_.@-'")
            if isinstance(token, str):
                if len(token) < 16:
                    raise ValueError(f"API token {name!r} must be at least 16 characters")
                token = {"token": token}
            out[name] = token
        return out

    @field_validator("api_tokens")
    @classmethod
    def _distinct(cls, tokens: dict[str, ApiToken]) -> dict[str, ApiToken]:
        values = [t.token for t in tokens.values()]
        if len(set(values)) != len(values):
            raise ValueError("two API tokens have the same value: each name needs its own token")
        return tokens

    @property
    def first_token(self) -> str | None:
        """A token for the daemon's own clients (the CLI, the demo)."""
        return next(iter(self.api_tokens.values())).token if self.api_tokens else None

    @field_validator("read_timeout", "keep_alive_timeout")
    @classmethod
    def _positive_seconds(cls, value: timedelta) -> timedelta:
        if not timedelta(seconds=1) <= value <= timedelta(hours=1):
            raise ValueError("use between 1s and 1h")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, entries: list[str]) -> list[str]:
        out = []
        for entry in entries:
            try:
                out.append(str(ipaddress.ip_network(entry.strip(), strict=False)))
            except ValueError:
                raise ValueError(f"{entry[:60]!r}: use an IP address or a CIDR network such as 10.0.0.0/8 "
                                 "(the proxies in front of the bridge, not host names)") from None
        return out

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, names: list[str] | None) -> list[str] | None:
        for name in names or []:
            bare = name.strip().strip("[]")
            if not bare or len(bare) > 253 or any(c in bare for c in "/@ \t?#") or \
                    ("*" in bare and bare != "*" and not (bare.startswith("*.") and "*" not in bare[2:])):
                raise ValueError(f"{name[:60]!r}: use a host name or address without port or scheme, "
                                 "'*.example.com' for its subdomains, or '*' for any")
            if ":" in bare:
                try:
                    ipaddress.IPv6Address(bare)
                except ValueError:
                    raise ValueError(f"{name[:60]!r}: no port (the bridge answers the name on any port)") from None
        return names

    @field_validator("listen")
    @classmethod
    def _host_port(cls, listen: str) -> str:
        host, sep, port = listen.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError("expected host:port, e.g. 127.0.0.1:8787")
        return listen

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    @property
    def loopback_only(self) -> bool:
        return self.host in ("127.0.0.1", "localhost", "::1") or self.host.startswith("127.")


class SecretsSettings(_Strict):
    key: str | None = None  # Fernet key (urlsafe base64, 32 bytes) or any passphrase

    @field_validator("key")
    @classmethod
    def _empty_is_none(cls, key: str | None) -> str | None:
        return key or None


class DeliverySettings(_Strict):
    give_up_after: Duration = timedelta(hours=24)
    first_retry: Duration = timedelta(seconds=1)
    max_backoff: Duration = timedelta(minutes=5)
    timeout: Duration = timedelta(seconds=10)
    concurrency: int = Field(default=32, ge=1, le=1000)


class EscalationLevel(_Strict):
    after: Duration
    notify: list[str] = Field(min_length=1)
    replace: bool = False
    repeat: int = Field(default=0, ge=0, le=100)


class OnTimeout(_Strict):
    answer: Any = None
    fail: bool = False
    keep_waiting: bool = False

    @model_validator(mode="after")
    def _exactly_one(self) -> OnTimeout:
        chosen = [self.answer is not None, self.fail, self.keep_waiting]
        if sum(chosen) != 1:
            raise ValueError("set exactly one of answer, fail: true, keep_waiting: true")
        return self


class Route(_Strict):
    name: str | None = None
    match: dict[str, str | list[str]] = Field(default_factory=dict)
    notify: list[str] = Field(default_factory=default_targets)
    responders: list[str] = Field(default_factory=list)
    quorum: int = Field(default=1, ge=1, le=100)
    remind_every: Duration | None = None
    escalate: list[EscalationLevel] = Field(default_factory=list)
    timeout: Duration | None = None
    on_timeout: OnTimeout | None = None
    max_timeout: Duration | None = None
    #: refuse an approval from the person the request names in `requested_by`
    forbid_self_approval: bool = False

    @model_validator(mode="after")
    def _levels_in_order(self) -> Route:
        where = f"route {self.name!r}: " if self.name else ""
        for i in range(1, len(self.escalate)):
            if self.escalate[i].after <= self.escalate[i - 1].after:
                raise ValueError(f"{where}escalate[{i}].after must be later than escalate[{i - 1}].after "
                                 "(levels in increasing order)")
        return self

    def check_quorum(self, people: People) -> None:
        """Refuse a quorum larger than the people who could ever answer on this route."""
        from bridge.timers import max_possible_responders  # bridge.timers imports this module

        where = f"route {self.name!r}: " if self.name else ""
        most = max_possible_responders(self, people)
        if most is not None and self.quorum > most:
            raise ValueError(f"{where}quorum {self.quorum} is larger than the {most} people who may "
                             "answer (responders plus escalation targets)")

    @model_validator(mode="after")
    def _timing_is_possible(self) -> Route:
        where = f"route {self.name!r}: " if self.name else ""
        self.check_quorum(People())
        answer = self.on_timeout.answer if self.on_timeout else None
        if answer is not None and not _could_be_an_answer(answer):
            raise ValueError(f"{where}on_timeout.answer {answer!r} cannot answer any question "
                             "(use a non-empty string, a list of options, an object, or true/false)")
        if self.timeout and self.max_timeout and self.timeout > self.max_timeout:
            raise ValueError(f"{where}timeout is longer than max_timeout")
        return self


def _could_be_an_answer(value: Any) -> bool:
    """Valid for at least one question kind (checked per question when the deadline passes)."""
    if isinstance(value, bool):
        return True  # confirm
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return all(isinstance(v, str) and v for v in value)
    return isinstance(value, dict)


class Settings(_Strict):
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


_KEYED_REASON = re.compile(r"^((?:routes\[\d+\]|default_route|people|groups)[\w.\[\]-]*): (.*)$", re.S)
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class UnsetVariables(ValueError):
    """`${NAME}` references (no default) whose variable is unset or empty: (key, name) pairs."""

    def __init__(self, missing: list[tuple[str, str]]) -> None:
        super().__init__(", ".join(name for _, name in missing))
        self.missing = missing


def substitute_env(value: Any, env: dict[str, str], key: str = "") -> Any:
    """Replace `${NAME}` / `${NAME:-default}` in every string. `${NAME}` whose variable is
    unset or empty raises UnsetVariables naming it and the key (an optional value says so
    with a default, even an empty one: `${NAME:-}`)."""
    missing: list[tuple[str, str]] = []
    out = _substitute(value, env, key, missing)
    if missing:
        raise UnsetVariables(missing)
    return out


def _substitute(value: Any, env: dict[str, str], key: str, missing: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        def one(m: re.Match[str]) -> str:
            found = env.get(m.group(1))
            if found:
                return found
            if m.group(2) is None:
                missing.append((key, m.group(1)))
                return ""
            return m.group(2)

        return _ENV_REF.sub(one, value)
    if isinstance(value, list):
        return [_substitute(v, env, f"{key}[{i}]", missing) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _substitute(v, env, f"{key}.{k}" if key else str(k), missing) for k, v in value.items()}
    return value


def apply_env_overrides(data: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    for name, raw in sorted(env.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__") if p]
        if not path:
            continue
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            value = raw
        node = data
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = {}
                node[key] = child
            node = child
        node[path[-1]] = value
    return data


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
