"""A real OAuth 2.0 authorization server on loopback (http.server in a thread) for the magic link tests:
`/authorize` shows a consent page whose "Allow" / "Deny" links redirect back with `code` and `state` (or
`error`), `/token` exchanges codes (client authenticated by HTTP Basic, PKCE S256 checked) and refresh
tokens. `fail_token` makes every token request fail with `invalid_grant`; `expires_in` is what the token
answers say (any JSON value, even NaN or Infinity)."""

import base64
import hashlib
import html
import json
import secrets
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

from tests.receiver import serve_on_loopback


@dataclass
class OAuthServer:
    client_id: str = "test-client"
    client_secret: str = "test-client-secret"
    fail_token: bool = False
    fail_description: str = "The grant was revoked."
    expires_in: object = 3600
    answer_extra: dict = field(default_factory=dict)  # keys that replace or add to a good token answer
    raw_answer: bytes | None = None  # sent as the body of a good token answer instead of its JSON
    good_status: int = 200  # the HTTP status a good token answer is sent with
    base_url: str = ""
    codes: dict[str, dict] = field(default_factory=dict)
    refresh_tokens: set[str] = field(default_factory=set)
    token_requests: list[dict] = field(default_factory=list)
    authorize_requests: list[dict] = field(default_factory=list)

    @property
    def authorize_url(self) -> str:
        return f"{self.base_url}/authorize"

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token"

    def issue_code(self, params: dict[str, str]) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = params
        return code

    def token_answer(self, form: dict[str, str], authorization: str) -> tuple[int, dict]:
        self.token_requests.append(form)
        if _basic_credentials(authorization) != (self.client_id, self.client_secret):
            return 401, {"error": "invalid_client"}
        if self.fail_token:
            return 400, {"error": "invalid_grant", "error_description": self.fail_description}
        if form.get("grant_type") == "authorization_code":
            params = self.codes.pop(form.get("code", ""), None)
            if params is None or params.get("redirect_uri") != form.get("redirect_uri"):
                return 400, {"error": "invalid_grant", "error_description": "Unknown code."}
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if challenge != params.get("code_challenge"):
                return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed."}
        elif form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return 400, {"error": "invalid_grant", "error_description": "Unknown refresh token."}
        else:
            return 400, {"error": "unsupported_grant_type"}
        refresh = secrets.token_urlsafe(16)
        self.refresh_tokens.add(refresh)
        return 200, {
            "access_token": "access-" + secrets.token_urlsafe(16),
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": "files offline_access",
        } | self.answer_extra


def start_oauth_server(server_state: OAuthServer) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes, content_type: str, headers: dict | None = None):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 (http.server's naming)
            parts = urlsplit(self.path)
            params = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/authorize":
                server_state.authorize_requests.append(params)
                if params.get("client_id") != server_state.client_id or params.get("response_type") != "code":
                    self._send(400, b"bad authorization request", "text/plain")
                    return
                back = params["redirect_uri"]
                allow = f"{back}?{urlencode({'code': server_state.issue_code(params), 'state': params['state']})}"
                deny = f"{back}?{urlencode({'error': 'access_denied', 'state': params['state']})}"
                page = (
                    "<!doctype html><html lang='en'><head><title>Test provider sign-in</title></head><body>"
                    "<h1>Test provider</h1><p>Give the platform access to your files?</p>"
                    f"<a id='allow' href='{html.escape(allow)}'>Allow</a> "
                    f"<a id='deny' href='{html.escape(deny)}'>Deny</a></body></html>"
                )
                self._send(200, page.encode(), "text/html; charset=utf-8")
                return
            self._send(404, b"not found", "text/plain")

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if urlsplit(self.path).path != "/token":
                self._send(404, b"not found", "text/plain")
                return
            status, body = server_state.token_answer(form, self.headers.get("Authorization", ""))
            raw = server_state.raw_answer if status == 200 and server_state.raw_answer is not None else None
            status = server_state.good_status if status == 200 else status
            self._send(status, raw if raw is not None else json.dumps(body).encode(), "application/json")

        def log_message(self, *args):
            pass

    server, server_state.base_url = serve_on_loopback(Handler)
    return server


def _basic_credentials(authorization: str) -> tuple[str, str] | None:
    """The client id and secret of an HTTP Basic `Authorization`, each decoded as a form value (RFC 6749 section
    2.3.1, as an authorization server reads them); None for anything else."""
    scheme, _, encoded = authorization.partition(" ")
    try:
        user, colon, password = base64.b64decode(encoded, validate=True).decode("ascii").partition(":")
    except ValueError:
        return None
    return (unquote_plus(user), unquote_plus(password)) if scheme == "Basic" and colon else None
