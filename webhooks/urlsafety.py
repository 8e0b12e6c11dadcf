"""Refuse webhook URLs that point into our own network (loopback, private, link-local...), unless
the deployment allows it (`WEBHOOK_ALLOW_PRIVATE_URLS`, the embedded default)."""

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings


class UnsafeUrl(Exception):
    """The URL may not receive webhook deliveries; the message says why."""


def resolve_public(url: str) -> None:
    """Raise `UnsafeUrl` unless every address the host resolves to is public (or private is allowed)."""
    host = urlsplit(url).hostname
    if not host:
        raise UnsafeUrl("The URL has no host.")
    if settings.WEBHOOK_ALLOW_PRIVATE_URLS:
        return
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeUrl(f"The host '{host}' does not resolve.") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if getattr(address, "ipv4_mapped", None):
            address = address.ipv4_mapped
        if not address.is_global or address.is_multicast:
            raise UnsafeUrl(f"The host '{host}' resolves to a non-public address ({address}).")
