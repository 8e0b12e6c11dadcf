"""A real HTTP server on loopback that records what it receives: the webhook receiver of the tests."""

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """`statuses`: the status codes to answer, one per request (the last repeats); `hang`: seconds to
    sleep before answering (longer than the client timeout = a receiver that never answers); `answer`: the body
    of every answer (default `answered <status>`); `headers`: more headers of every answer; `on_request`: called with
    each request as it arrives."""

    statuses: list[int] = field(default_factory=lambda: [200])
    hang: float = 0.0
    answer: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    received: list[ReceivedRequest] = field(default_factory=list)
    url: str = ""
    on_request: Callable[[ReceivedRequest], None] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_status(self) -> int:
        with self._lock:
            return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedRequest]:
        """Wait until at least `count` requests arrived (or time out) and return them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.received) < count:
            time.sleep(0.02)
        return list(self.received)

    def events(self) -> list[dict]:
        import json

        return [json.loads(r.body) for r in self.received]


def serve_on_loopback(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    """A real HTTP server on a free loopback port, serving in a daemon thread; returns it and its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def start_receiver(receiver: Receiver) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            request = ReceivedRequest(self.path, {k: v for k, v in self.headers.items()}, body)
            if receiver.on_request is not None:
                receiver.on_request(request)
            receiver.received.append(request)
            if receiver.hang:
                time.sleep(receiver.hang)
            status = receiver.next_status()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            for name, value in receiver.headers.items():
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(receiver.answer if receiver.answer is not None else f"answered {status}".encode())
            except OSError:
                pass

        def log_message(self, *args):
            pass

    server, base_url = serve_on_loopback(Handler)
    receiver.url = f"{base_url}/hook"
    return server


def unused_port() -> int:
    """A loopback port nobody listens on (the system's pick, released at once): for a server to start on, or for a
    call that must be refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
