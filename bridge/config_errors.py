"""Config errors a person can fix in one go: every problem at once, each with the file, the line
and the key, and a did-you-mean for a misspelt key; a YAML syntax error names the file.

    /srv/hitl-bridge.yaml:3: http.api_token: unknown key (did you mean api_tokens?)
    /srv/hitl-bridge.yaml:7: routes[0].timeout: cannot read 'soon' as a duration ...

Lines come from the YAML's own node marks (the file is composed again only when it is wrong);
suggestions from difflib over the field names of the model at that place.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Sequence
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from bridge.config_yaml import YamlLimit, load_bounded
from bridge.errors import ConfigError

Path_ = tuple[str | int, ...]


class ConfigProblems(ConfigError):
    """Several problems in one config: `problems` holds (line or None, key, reason) for each; the
    message has one line per problem, `FILE:LINE: key: reason`."""

    def __init__(self, file: str, problems: Sequence[tuple[int | None, str, str]]) -> None:
        _line, key, reason = problems[0]
        super().__init__(file, key, reason)
        self.problems = list(problems)
        self.args = ("\n".join(_one(file, *p) for p in self.problems),)


def _one(file: str, line: int | None, key: str, reason: str) -> str:
    where = f"{file}:{line}" if line is not None else file
    return f"{where}: {key}: {reason}" if key else f"{where}: {reason}"


def load_yaml(text: str, file: str) -> Any:
    """`yaml.safe_load` bounded (`load_bounded`: no alias bombs), with a syntax error naming
    `file` (not `<unicode string>`)."""
    try:
        return load_bounded(text)
    except YamlLimit as exc:
        raise ConfigProblems(file, [(None, "", f"refused: {exc}")]) from None
    except yaml.YAMLError as exc:
        for mark in (getattr(exc, "context_mark", None), getattr(exc, "problem_mark", None)):
            if mark is not None:
                mark.name = file
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ConfigProblems(file, [(line, "", f"not valid YAML: {exc}")]) from None


def key_lines(text: str) -> dict[Path_, int]:
    """Each key's and list item's line (1-based) in a YAML document, by its path."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    found: dict[Path_, int] = {}

    def walk(node: yaml.Node | None, path: Path_) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                here = (*path, str(key.value))
                found[here] = key.start_mark.line + 1
                walk(value, here)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                found[(*path, i)] = item.start_mark.line + 1
                walk(item, (*path, i))

    walk(root, ())
    return found


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def field_names(model: type[BaseModel], path: Path_) -> list[str]:
    """The field names of the model found at `path` under `model` (empty when it is not one)."""
    current: type[BaseModel] | None = model
    for part in path:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if current is not None else None
        if field is None:
            return []
        current = _model_of(field.annotation)
    return list(current.model_fields) if current is not None else []


def key_name(loc: Sequence[str | int]) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc).replace(".[", "[")


def validation_problems(exc: ValidationError, file: str, text: str | None, model: type[BaseModel],
                        keyed: re.Pattern[str] | None = None, sections: Sequence[str] = ()) -> ConfigProblems:
    """Every error of `exc` as (line, key, reason), lines from `text` (the file; None for the
    embedded defaults), a did-you-mean for unknown keys (`sections`: top-level keys the model
    holds aside)."""
    lines = key_lines(text) if text else {}
    problems: list[tuple[int | None, str, str]] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = key_name(loc)
        reason = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            reason = "unknown key"
            known = [*field_names(model, loc[:-1]), *(sections if len(loc) == 1 else ())]
            close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
            reason += f" (did you mean {close[0]}?)" if close else " (check the spelling; see config/ for examples)"
        named = keyed.match(reason) if keyed is not None and not key else None
        if named:  # a whole-config check that names the key it is about
            key, reason = named.group(1), named.group(2)
            loc = tuple(int(p) if p.isdigit() else p for p in re.findall(r"[\w-]+", key))
        line = next((lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in lines), None)
        problems.append((line, key, reason))
    return ConfigProblems(file, problems)
