"""A loopback HTTP proxy that adds one header (the workspace's bearer token) to every
request and streams each answer back as it comes (server-sent events included).

The MCP conformance suite speaks to a server by URL alone; `nerve mcp --http` wants its
token. Everything else passes unchanged, ``Host`` and ``Origin`` too, so the server's own
checks (DNS-rebinding protection) still see what the suite sent.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}


class HeaderProxy:
    """Serves on ``http://127.0.0.1:PORT``; forwards to ``upstream`` with ``header`` added."""

    def __init__(self, upstream: str, header: tuple[str, str]) -> None:
        target = urlsplit(upstream)
        host, port = target.hostname or "127.0.0.1", target.port or 80
        extra = header

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                headers[extra[0]] = extra[1]
                conn = http.client.HTTPConnection(host, port, timeout=120)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    reply = conn.getresponse()
                    self._relay(reply)
                finally:
                    conn.close()

            def _relay(self, reply: http.client.HTTPResponse) -> None:
                self.send_response(reply.status, reply.reason)
                for key, value in reply.getheaders():
                    if key.lower() not in _HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    while chunk := reply.read1(1 << 16):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                except (http.client.IncompleteRead, OSError):
                    return  # a stream either side ended: so does this one
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_POST = do_DELETE = _forward

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{target.path}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HeaderProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
