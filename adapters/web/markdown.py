"""Request descriptions as safe Markdown (markdown-it-py, CommonMark with tables and
strikethrough): raw HTML is never passed through, links keep only http(s) and mailto,
images become links (the inbox loads nothing from elsewhere, and its CSP would refuse it
anyway), and headings start at <h3> so that they fit under the page's own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markupsafe import Markup

SAFE_SCHEMES = ("http:", "https:", "mailto:")
LINK_REL = "nofollow noopener noreferrer"
MAX_SOURCE = 20_000


def _valid_link(url: str) -> bool:
    return url.strip().lower().startswith(SAFE_SCHEMES)


def _render_image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = token.attrGet("src") or ""
    if not src:
        return escapeHtml(alt)
    return (f'<a href="{escapeHtml(str(src))}" rel="{LINK_REL}" class="md-image">'
            f'image: {escapeHtml(alt)}</a>')


def _build() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False, "breaks": True})
    md.enable(["table", "strikethrough"])
    md.validateLink = _valid_link  # type: ignore[method-assign]
    md.add_render_rule("image", _render_image)
    return md


_MD = _build()
_INLINE_TEXT = RendererHTML()


def _adjust(tokens: list[Token]) -> None:
    """Shift headings down two levels; mark links; turn refused links into plain text."""
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 2, 6)}"
        if token.children:
            _adjust(token.children)
        if token.type == "link_open":
            if _valid_link(str(token.attrGet("href") or "")):
                token.attrSet("rel", LINK_REL)
            else:
                token.tag, token.attrs = "span", {}
                token.meta["refused"] = True
    # a refused link's closing tag must match its (now) <span>
    stack: list[Token] = []
    for token in tokens:
        if token.type == "link_open":
            stack.append(token)
        elif token.type == "link_close" and stack:
            if stack.pop().meta.get("refused"):
                token.tag = "span"


@dataclass(frozen=True)
class Rendered:
    html: Markup  # safe to insert as is
    plain: str  # the text alone, for one-line excerpts


@lru_cache(maxsize=512)
def render_markdown(text: str) -> Rendered:
    """`text` rendered once per distinct description (pages that poll re-render often, and a
    hostile description can cost markdown-it a good fraction of a second)."""
    if not text:
        return Rendered(Markup(""), "")
    env: dict[str, Any] = {}
    tokens = _MD.parse(text[:MAX_SOURCE], env)
    _adjust(tokens)
    html = Markup(_MD.renderer.render(tokens, _MD.options, env))
    words = [_INLINE_TEXT.renderInlineAsText(t.children or [], _MD.options, env) for t in tokens
             if t.type == "inline"]
    return Rendered(html, " ".join(w for w in words if w))
