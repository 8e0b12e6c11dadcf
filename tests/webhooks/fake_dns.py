"""A stand-in for public DNS in the URL-safety tests: DNS is the thing under test, so `socket.getaddrinfo` is
replaced in-process for a few test names (everything else resolves as usual)."""

import socket
from dataclasses import dataclass, field

PUBLIC_ADDRESS = "93.184.215.14"  # a global address; nothing in the tests may ever connect to it successfully


@dataclass
class FakeDns:
    """`answers[name]`: what the name resolves to, one entry per lookup (the last repeats): an address, or a tuple
    of addresses answered together (none: the name does not exist); `lookups` counts the lookups of each name."""

    answers: dict[str, list[str | tuple[str, ...]]] = field(default_factory=dict)
    lookups: dict[str, int] = field(default_factory=dict)

    def install(self, monkeypatch) -> "FakeDns":
        real = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):
            name = host.decode() if isinstance(host, bytes) else host
            if name not in self.answers:
                return real(host, port, *args, **kwargs)
            count = self.lookups.get(name, 0)
            self.lookups[name] = count + 1
            queue = self.answers[name]
            answer = queue[min(count, len(queue) - 1)]
            if not answer:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return [
                (
                    socket.AF_INET6 if ":" in address else socket.AF_INET,
                    socket.SOCK_STREAM,
                    socket.IPPROTO_TCP,
                    "",
                    (address, port or 0),
                )
                for address in ((answer,) if isinstance(answer, str) else answer)
            ]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        return self
