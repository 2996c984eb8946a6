"""What the core needs to know about GitHub people (bridge.specs): a handle is a login
(`github:ana`), compared in lower case as GitHub does. GitHub is a source, never a channel:
its handles name who triggered a deploy, so `people:` can join them to a person."""

from __future__ import annotations

import re

from bridge.specs import HandleError, IdentitySpec

#: GitHub's login rule: letters, digits and single hyphens, 1-39 characters; `[bot]` for apps
LOGIN = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,38}(\[bot\])?$")


def normalize(ident: str) -> str:
    ident = ident.strip().lower()
    if not LOGIN.match(ident):
        raise HandleError("a GitHub handle is a login such as github:octocat")
    return ident


SPEC = IdentitySpec(name="github", normalize=normalize, source_factory="adapters.github:build_source",
                    person_hint="github:<login>")
