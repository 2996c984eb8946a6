"""What the core needs to know about GitLab people (bridge.specs): a handle is a username
(`gitlab:ana`), compared in lower case as GitLab does. GitLab is a source, never a channel:
its handles name who triggered a deploy and who approves with their own token."""

from __future__ import annotations

import re

from bridge.specs import HandleError, IdentitySpec

#: GitLab's username rule: letters, digits, `_`, `.`, `-`; starts and ends with a letter or digit
USERNAME = re.compile(r"^[a-z0-9](?:[a-z0-9_.-]{0,253}[a-z0-9])?$")


def normalize(ident: str) -> str:
    ident = ident.strip().lower()
    if not USERNAME.match(ident):
        raise HandleError("a GitLab handle is a username such as gitlab:ana")
    return ident


SPEC = IdentitySpec(name="gitlab", normalize=normalize, source_factory="adapters.gitlab:build_source",
                    person_hint="gitlab:<username>")
