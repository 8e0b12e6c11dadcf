"""Refuse URLs we fetch ourselves (webhook deliveries, provider token requests) that point into our own network
(loopback, private, link-local...), unless the deployment allows it (`WEBHOOK_ALLOW_PRIVATE_URLS`, the embedded
default).

Two rules make the check mean something:
- The host we check is the host the HTTP client connects to. URLs that parsers read differently (a backslash,
  user-info, a percent-encoded host) are refused outright, and the host is taken from urllib3's parser, which
  requests uses.
- The address we check is the address we connect to. `safe_session` resolves the host once, checks every address
  and gives a requests session whose connections go to those vetted addresses only (the Host header, TLS SNI and
  the certificate check still use the host name), so a DNS answer that changes between check and connect
  (DNS rebinding) cannot lead us into our network.
"""

import ipaddress
import logging
import socket
import threading
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.exceptions import ValidationError
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, LocationParseError, NewConnectionError
from urllib3.util import connection, parse_url

logger = logging.getLogger(__name__)


class UnsafeUrl(Exception):
    """The URL may not be fetched by us; the message says why, to whoever sent the URL. `detail` may say more, for
    the platform's operators only (the admin's forms, the logs)."""

    def __init__(self, message: str, *, detail: str | None = None):
        super().__init__(message)
        self.detail = detail or message


# What an API client is told of a host refused for its addresses. Naming them (or telling a name that does not
# resolve from one that resolves inside) would let any tenant map our internal DNS through the checks.
NOT_PUBLIC = "The URL's host must resolve to public internet addresses only."


def url_host(url: str) -> tuple[str, int | None]:
    """The (lower-case) host and port requests will connect to for `url`; `UnsafeUrl` when the URL is ambiguous:
    a backslash, spaces or control characters, user-info (`user:password@`, never needed in a URL we call), a
    percent-encoded host, or a host or port that urllib3 and the standard library read differently."""
    if any(c == "\\" or c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise UnsafeUrl("The URL may not contain backslashes, spaces or control characters.")
    try:
        parsed, split = parse_url(url), urlsplit(url)
        split_port = split.port
    except (LocationParseError, ValueError) as exc:
        raise UnsafeUrl("The URL cannot be read.") from exc
    if parsed.scheme not in ("http", "https"):
        raise UnsafeUrl("The URL must be http or https.")
    if parsed.auth is not None or "@" in split.netloc:
        raise UnsafeUrl("The URL may not contain a user name or password.")
    if "%" in split.netloc:
        raise UnsafeUrl("The URL's host may not be percent-encoded.")
    host = (parsed.host or "").strip("[]").lower()
    if not host:
        raise UnsafeUrl("The URL has no host.")
    split_host = split.hostname or ""
    # An international name is IDNA-encoded by urllib3 only; the host we check is urllib3's either way.
    if (host != split_host and split_host.isascii()) or parsed.port != split_port:
        raise UnsafeUrl("The URL's host is ambiguous.")
    if parsed.port == 0:  # (requests leaves `:0` out, and connects to the scheme's port instead of the one checked)
        raise UnsafeUrl("The URL's port must be from 1 to 65535.")
    return host, parsed.port


def resolve_public(url: str) -> tuple[str, ...]:
    """The addresses the URL's host resolves to, each checked public; `UnsafeUrl` if one is not (or the URL is
    ambiguous, see `url_host`). With private URLs allowed nothing is resolved and `()` is returned."""
    return _resolve(url)[1]


def validate_public_url(url: str) -> None:
    """`resolve_public` as a form validator (the admin's URL fields): a refused URL is a form error saying why, in
    full (the operators may know their network)."""
    try:
        resolve_public(url)
    except UnsafeUrl as exc:
        raise ValidationError(exc.detail, code="unsafe_url") from None


def _resolve(url: str) -> tuple[str, tuple[str, ...]]:
    """`url`'s host (`url_host`) and its checked public addresses (`resolve_public`)."""
    host, _ = url_host(url)
    if settings.WEBHOOK_ALLOW_PRIVATE_URLS:
        return host, ()
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise _not_public(f"The host '{host}' does not resolve.") from exc
    addresses = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if not _public(address):
            raise _not_public(f"The host '{host}' resolves to a non-public address ({address}).")
        # A mapped address is connected to as the IPv4 address it is; the others as given (NAT64 needs its prefix).
        addresses.append(str(getattr(address, "ipv4_mapped", None) or address))
    return host, tuple(dict.fromkeys(addresses))


def _not_public(detail: str) -> UnsafeUrl:
    logger.info("URL refused: %s", detail)  # (the client is told `NOT_PUBLIC` only)
    return UnsafeUrl(NOT_PUBLIC, detail=detail)


# IPv6 forms that carry an IPv4 address in their last 32 bits: the IPv4 address is where a connection goes (through
# a NAT64 gateway, or the host's own stack), so it decides. `::ffff:a.b.c.d` (mapped) is the standard library's.
_IPV4_IN_LAST_32_BITS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "64:ff9b::/96",  # NAT64, well-known prefix (RFC 6052)
        "::ffff:0:0:0/96",  # IPv4-translated (RFC 2765)
        "::/96",  # IPv4-compatible (deprecated, RFC 4291)
    )
)
# Not global, though Python 3.11 says they are: local-use NAT64 (RFC 8215) and deprecated site-local (RFC 3879).
_NOT_GLOBAL_IPV6 = tuple(ipaddress.ip_network(n) for n in ("64:ff9b:1::/48", "fec0::/10"))


def _embedded_ipv4(address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64, translated, compatible, 6to4), else None."""
    if address.version != 6:
        return None
    if address.ipv4_mapped or address.sixtofour:
        return address.ipv4_mapped or address.sixtofour
    if any(address in network for network in _IPV4_IN_LAST_32_BITS):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _public(address) -> bool:
    """A global unicast address, judged by the IPv4 address it carries if it carries one (`64:ff9b::a9fe:a9fe` is
    the cloud metadata address 169.254.169.254 behind NAT64)."""
    if address.version == 6 and any(address in network for network in _NOT_GLOBAL_IPV6):
        return False
    address = _embedded_ipv4(address) or address
    return address.is_global and not address.is_multicast


def safe_session(url: str, *, deadline: float | None = None) -> "DeadlineSession":
    """A requests session for calling `url`, after `resolve_public(url)`. Unless private URLs are allowed, its
    connections go only to `url`'s host and only to the addresses just checked (no second DNS lookup); a
    connection to any other host (a proxy from the environment, say) is refused. With a `deadline` (seconds), its
    connections are shut once that long has passed. Close it after use."""
    host, addresses = _resolve(url)
    return _session(deadline, host if addresses else None, addresses)


def deadline_session(deadline: float) -> "DeadlineSession":
    """A requests session for a URL the deployment configured (no address checks, proxies from the environment
    as usual) whose connections are shut once `deadline` seconds have passed. Close it after use."""
    return _session(deadline, None, ())


def _session(deadline: float | None, host: str | None, addresses: tuple[str, ...]) -> "DeadlineSession":
    session = DeadlineSession(deadline)
    adapter = _PinnedAdapter(host, addresses, session.sockets)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class DeadlineSession(requests.Session):
    """A session that shuts every connection it opened once `deadline` seconds have passed since it was made.
    Timeouts bound each read only: a server sending its answer a byte at a time, each within the read timeout,
    held a call for as long as it liked (and a webhook delivery's lease ran out under it: posted twice).
    `expired` tells a call's failure came from the deadline."""

    def __init__(self, deadline: float | None):
        super().__init__()
        self.sockets: list = []  # (connection, its plain socket): TLS wraps the plain one into `connection.sock`
        self.expired = False
        self._timer = None
        if deadline is not None:
            self._timer = threading.Timer(deadline, self._expire)
            self._timer.daemon = True
            self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        for conn, plain in list(self.sockets):
            # The TLS socket once the handshake is done (it took over the plain one), the plain one before.
            for sock in (getattr(conn, "sock", None), plain):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                    break
                except (AttributeError, OSError):
                    continue

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        super().close()


class _PinnedAdapter(HTTPAdapter):
    """A transport adapter whose connection pools connect `host` to the vetted `addresses` instead of resolving
    it again (`host` None: private URLs are allowed, nothing is pinned), and record each socket they open in
    `sockets`. Everything else (Host header, SNI, certificate verification, timeouts) is urllib3's own."""

    def __init__(self, host: str | None, addresses: tuple[str, ...], sockets: list | None = None):
        self.pinned_host, self.pinned_addresses = host, addresses
        self.sockets = [] if sockets is None else sockets
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        pin = {"pinned_host": self.pinned_host, "pinned_addresses": self.pinned_addresses, "sockets": self.sockets}
        http = type("PinnedHTTPConnection", (_PinnedConnectionMixin, HTTPConnection), pin)
        https = type("PinnedHTTPSConnection", (_PinnedConnectionMixin, HTTPSConnection), pin)
        self.pool_classes = {
            "http": type("PinnedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http}),
            "https": type("PinnedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https}),
        }
        self.poolmanager.pool_classes_by_scheme = self.pool_classes

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        if self.pinned_host is not None:
            # A proxy would look the host up itself, after our check: refuse rather than call through it.
            raise requests.exceptions.ProxyError(f"Calls to checked URLs do not go through proxies ({proxy}).")
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            # Private URLs allowed, a proxy from the environment: its connections are recorded too, so the
            # session's deadline cuts a proxy that answers a byte at a time (or a tunnel it opens so).
            manager.pool_classes_by_scheme = self.pool_classes
        return manager


class _PinnedConnectionMixin:
    """Replaces urllib3's `HTTPConnection._new_conn` (resolve `host`, connect): connects to the pinned addresses,
    in order, with the same socket options and the same exceptions; records the socket for its session."""

    pinned_host: str | None
    pinned_addresses: tuple[str, ...]
    sockets: list

    def _new_conn(self):
        sock = super()._new_conn() if self.pinned_host is None else self._pinned_conn()
        self.sockets.append((self, sock))
        return sock

    def _pinned_conn(self):
        if self.host.lower() != self.pinned_host.rstrip("."):
            raise NewConnectionError(
                self, f"Refused to connect to '{self.host}': only '{self.pinned_host}' was checked."
            )
        error = None
        for address in self.pinned_addresses:
            try:
                return connection.create_connection(
                    (address, self.port), self.timeout, source_address=self.source_address,
                    socket_options=self.socket_options,
                )  # fmt: skip
            except TimeoutError as exc:
                error = ConnectTimeoutError(self, f"Connection to {self.host} ({address}) timed out.")
                error.__cause__ = exc
            except OSError as exc:
                error = NewConnectionError(self, f"Failed to establish a new connection to {address}: {exc}")
                error.__cause__ = exc
            error.address = address  # said with the failure (`platform_site.outbound.connection_failure`)
        raise error
