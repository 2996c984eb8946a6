"""What a browser really sends when a page on another site, or a page that rebound its own
name to 127.0.0.1, talks to the bridge: the headers Chrome puts on each kind of request."""

from __future__ import annotations

CHROME = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/131.0.0.0 Safari/537.36")
EVIL = "https://evil.example"


def rebound_fetch(port: int, *, method: str = "GET") -> dict[str, str]:
    """`fetch("/v1/requests")` from http://attacker.example:PORT after its DNS answer turned
    into 127.0.0.1: same-origin as far as the browser knows (an Origin only on writes)."""
    headers = {"Host": f"attacker.example:{port}", "User-Agent": CHROME, "Accept": "*/*",
               "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty",
               "Referer": f"http://attacker.example:{port}/"}
    if method != "GET":
        headers["Origin"] = f"http://attacker.example:{port}"
    return headers


def cross_site_form(port: int, enctype: str) -> dict[str, str]:
    """`<form method=post action="http://127.0.0.1:PORT/v1/requests" enctype=...>` submitted on
    https://evil.example."""
    return {"Host": f"127.0.0.1:{port}", "User-Agent": CHROME, "Origin": EVIL, "Content-Type": enctype,
            "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document",
            "Sec-Fetch-User": "?1", "Referer": EVIL + "/"}


def no_cors_fetch(port: int) -> dict[str, str]:
    """`fetch("http://127.0.0.1:PORT/v1/requests/ID/cancel", {method: "POST", mode: "no-cors"})`
    on https://evil.example: no body, so no Content-Type, and no preflight."""
    return {"Host": f"127.0.0.1:{port}", "User-Agent": CHROME, "Origin": EVIL, "Accept": "*/*",
            "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "empty",
            "Referer": EVIL + "/"}


def same_origin_fetch(port: int) -> dict[str, str]:
    """A page the bridge itself served, posting JSON back to it."""
    return {"Host": f"127.0.0.1:{port}", "User-Agent": CHROME, "Origin": f"http://127.0.0.1:{port}",
            "Content-Type": "application/json", "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors",
            "Sec-Fetch-Dest": "empty"}


#: a text/plain form whose one field is named so that the body reads as JSON
#: (`name=value` with name `{"title":"pwned","questions":[{"prompt":"?"}],"x":"` and value `"}`)
TEXT_PLAIN_JSON = b'{"title":"pwned","questions":[{"prompt":"?"}],"x":"="}'
