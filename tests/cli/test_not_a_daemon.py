"""Something other than the daemon answers at the URL (another web server's HTML 404 page):
the CLI says so in one line and exits 3, instead of printing the whole page."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli.helpers import cli

PAGE = b"<!DOCTYPE html>\n<html>\n<head><title>404 Not Found</title></head>\n<body>\n<h1>Not Found</h1>\n" + \
    b"<p>The requested URL was not found on this server.</p>\n" * 20 + b"</body>\n</html>\n"


class Other(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_html_page_where_the_daemon_should_be_is_one_line_and_exit_3(other_server: str, tmp_path: Path) -> None:
    run = cli("list", "--url", other_server, cwd=tmp_path)
    assert run.code == 3, run
    assert run.err.strip() == f"{other_server}: this is not a hitl-bridge daemon (got 404 text/html)"
    assert "<html>" not in run.err and run.out == ""
