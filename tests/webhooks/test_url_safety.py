"""Webhook URLs into our own network stay refused however they are spelled (parser tricks), and a delivery
connects only to the address that was checked (DNS rebinding). Deliveries go to a real loopback receiver."""

import datetime
import socketserver
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
import requests
from django.utils import timezone

from platform_site.api.urlsafety import NOT_PUBLIC, DeadlineSession, _PinnedAdapter
from tests.tenancy import assert_problem
from webhooks.models import Delivery, DeliveryAttempt, Webhook
from webhooks.services import delivery_attempt

from .fake_dns import PUBLIC_ADDRESS, FakeDns

URL = "/services/alerts/api/alerts/webhooks"
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

# URLs whose host, as requests connects to it, is loopback (or that parsers read differently).
HIDDEN_PRIVATE_URLS = [
    "http://127.0.0.1:8113\\@example.com/ssrf",  # requests: 127.0.0.1; urlsplit: example.com
    "http://example.com\\@127.0.0.1/ssrf",
    "http://example.com\\/hook",
    "http://127.0.0.1:8113@example.com/ssrf",  # user-info
    "http://user:password@example.com/hook",
    "http://example.com@127.0.0.1/hook",
    "http://%31%32%37.0.0.1:8113/hook",  # percent-encoded host (urllib3 decodes it)
    "http://[::1]:8113/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://2130706433/hook",  # decimal IPv4
    "http://0x7f.1/hook",  # hex / short IPv4
    "http://0177.0.0.1/hook",  # octal IPv4
    "http://localhost./hook",
    " http://example.com/hook",  # whitespace around it (it was trimmed and stored)
    "http://example.com/hook\n",
    "http://example.com/hook\t",
]


@pytest.fixture
def dns(monkeypatch, settings):
    """Private URLs refused; example.com (and its subdomains used here) resolve to a public address."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    return FakeDns({"example.com": [PUBLIC_ADDRESS], "hooks.example.com": [PUBLIC_ADDRESS]}).install(monkeypatch)


def register(client, url):
    body = {"name": "ops", "url": url, "secret": "s3cret-s3cret-s3cret", "events": ["fieldCreated"]}
    return client.post(URL, body, format="json")


@pytest.mark.parametrize("url", HIDDEN_PRIVATE_URLS)
def test_urls_that_hide_a_private_host_are_refused(api_client, dns, url):
    body = assert_problem(register(api_client, url), 400)
    assert body["errorKey"] in ("webhookUrlNotAllowed", "validation"), body
    assert [e["field"] for e in body["fieldErrors"]] == ["url"]
    assert not Webhook.objects.exists()


def test_port_0_is_refused_where_requests_would_connect_to_another_port(api_client, dns):
    """`:0` passed the check and requests dropped it, so the call went to port 80 (or 443), not the port checked."""
    body = assert_problem(register(api_client, "http://example.com:0/hook"), 400, "webhookUrlNotAllowed")
    assert body["fieldErrors"] == [{"field": "url", "message": "The URL's port must be from 1 to 65535."}]
    application = {
        "provider": "ProviderA",
        "clientId": "cid",
        "clientSecret": "secret",
        "authorizeUrl": "https://example.com/authorize",
        "tokenUrl": "https://example.com:0/token",
        "scopes": ["files"],
    }
    problem = assert_problem(
        api_client.post("/services/widgets/api/provider-applications", application, format="json"), 400
    )
    assert [e["field"] for e in problem["fieldErrors"]] == ["tokenUrl"]
    assert register(api_client, "http://example.com:8080/hook").status_code == 201


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8113\\@example.com/ssrf", "http://127.0.0.1:8113@example.com/ssrf", "http://[::1]/x"]
)
def test_the_bypass_urls_get_the_url_not_allowed_problem(api_client, dns, url):
    body = assert_problem(register(api_client, url), 400, "webhookUrlNotAllowed")
    assert body["fieldErrors"][0]["field"] == "url"


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254, the cloud metadata address
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "::ffff:0:a00:1",  # IPv4-translated 10.0.0.1
        "::a00:1",  # IPv4-compatible 10.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "64:ff9b:1::a00:1",  # local-use NAT64
        "fec0::1",  # deprecated site-local
    ],
)
def test_ipv6_forms_of_a_private_address_are_refused(api_client, dns, monkeypatch, address):
    """Python calls them global: only `::ffff:a.b.c.d` was unwrapped. Behind a NAT64 gateway they reach the
    private IPv4 network, the metadata service first. Refused as literals and as a host name's DNS answer."""
    body = assert_problem(register(api_client, f"http://[{address}]/hook"), 400, "webhookUrlNotAllowed")
    assert body["detail"] == NOT_PUBLIC  # (refused for its address, not for its spelling)
    FakeDns({"nat64.example.com": [address]}).install(monkeypatch)
    assert_problem(register(api_client, "http://nat64.example.com/hook"), 400, "webhookUrlNotAllowed")
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("address", ["224.0.1.1", "233.252.0.1", "ff0e::1", "::ffff:224.0.1.1"])
def test_multicast_addresses_are_refused(api_client, dns, monkeypatch, address):
    """Global-scope multicast is "global" to Python, yet no webhook receiver: refused as literals and as a host
    name's DNS answer."""
    literal = f"[{address}]" if ":" in address else address
    assert_problem(register(api_client, f"http://{literal}/hook"), 400, "webhookUrlNotAllowed")
    FakeDns({"group.example.com": [address]}).install(monkeypatch)
    assert_problem(register(api_client, "http://group.example.com/hook"), 400, "webhookUrlNotAllowed")
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(
    "answer", [(PUBLIC_ADDRESS, "127.0.0.1"), ("10.0.0.7", PUBLIC_ADDRESS), (PUBLIC_ADDRESS, "93.184.215.15", "::1")]
)
def test_a_name_answering_a_public_and_a_private_address_at_once_is_refused(api_client, dns, answer):
    """Every address of the answer is checked, not the first: a connection may go to any of them."""
    dns.answers["mixed.example.com"] = [answer]
    body = assert_problem(register(api_client, "http://mixed.example.com/hook"), 400, "webhookUrlNotAllowed")
    assert body["detail"] == NOT_PUBLIC
    assert not Webhook.objects.exists()
    dns.answers["public.example.com"] = [(PUBLIC_ADDRESS, "93.184.215.15")]
    assert register(api_client, "http://public.example.com/hook").status_code == 201


def test_a_refused_host_tells_the_client_nothing_of_our_dns(api_client, dns):
    """A name that resolves inside, and to what, or one that does not resolve at all: one and the same answer,
    so a tenant cannot map our internal names through the check (the admin, for operators, says which)."""
    dns.answers["db.internal.example.com"] = ["10.1.2.3"]
    dns.answers["ghost.example.com"] = [()]
    details = set()
    for url in ("http://db.internal.example.com/hook", "http://ghost.example.com/hook", "http://localhost/hook"):
        body = assert_problem(register(api_client, url), 400, "webhookUrlNotAllowed")
        assert "10.1.2.3" not in str(body) and "127.0.0.1" not in str(body) and "resolve." not in str(body)
        details.add((body["detail"], str(body["fieldErrors"])))
    assert len(details) == 1
    assert not Webhook.objects.exists()


def test_ipv6_forms_of_a_public_address_are_accepted(api_client, dns):
    # NAT64 of 93.184.216.34 (a public address) and a global IPv6 address
    for url in ("http://[64:ff9b::5db8:d822]/hook", "http://[2606:2800:220:1:248:1893:25c8:1946]/hook"):
        assert register(api_client, url).status_code == 201, url
        Webhook.objects.all().delete()


def test_a_public_url_is_still_accepted(api_client, dns):
    assert register(api_client, "https://hooks.example.com:8443/in?x=1").status_code == 201


def test_an_international_host_name_is_checked_as_it_is_connected_to(api_client, dns):
    dns.answers["xn--bcher-kva.example"] = ["127.0.0.1"]
    assert_problem(register(api_client, "https://bücher.example/in"), 400, "webhookUrlNotAllowed")
    dns.answers["xn--bcher-kva.example"] = [PUBLIC_ADDRESS]
    assert register(api_client, "https://bücher.example/in").status_code == 201


def _pending_delivery(owner, url):
    webhook = Webhook.objects.create(owner=owner, name="stored", url=url, secret="s")
    return Delivery.objects.create(
        webhook=webhook, owner=owner, event="fieldCreated", body="{}", next_attempt_at=timezone.now()
    )


def test_a_stored_url_that_hides_a_private_host_is_refused_at_delivery(owner, dns, webhook_receiver):
    # Given a webhook stored before the rule (or by another path) whose URL reaches the receiver on loopback
    port = urlsplit(webhook_receiver.url).port
    delivery = _pending_delivery(owner, f"http://127.0.0.1:{port}\\@example.com/ssrf")
    # When it is delivered
    delivery_attempt(delivery.pk)
    # Then nothing reaches the loopback receiver and the attempt says why
    assert webhook_receiver.wait_for(1, timeout=0.3) == []
    [attempt] = DeliveryAttempt.objects.all()
    assert attempt.status_code is None and attempt.error.startswith("refused:"), attempt.error


def test_a_url_registered_while_allowed_and_refused_by_the_worker_is_logged_as_a_warning(
    owner, dns, webhook_receiver, caplog
):
    """The API took a loopback URL (WEBHOOK_ALLOW_PRIVATE_URLS=true there) and the delivery worker, started without
    it, refused every delivery: logged at INFO among receivers' failures, an operator alerting on warnings never
    saw it (a production try-out). The log names the address refused, for the operators; the attempt does not."""
    delivery = _pending_delivery(owner, webhook_receiver.url)
    with caplog.at_level("INFO", logger="webhooks.services"):
        delivery_attempt(delivery.pk)
    assert webhook_receiver.wait_for(1, timeout=0.3) == []
    [warning] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert f"webhook {delivery.webhook_id}: delivery {delivery.pk} refused by this worker" in warning.getMessage()
    assert "127.0.0.1" in warning.getMessage()
    [attempt] = DeliveryAttempt.objects.all()
    assert attempt.error.startswith("refused:") and "127.0.0.1" not in attempt.error, attempt.error


def test_a_delivery_connects_only_to_the_address_that_was_checked(owner, dns, settings, webhook_receiver):
    # Given a name that answers a public address to the check and loopback to any later lookup (rebinding)
    settings.WEBHOOK_TIMEOUT_SECONDS = 1
    port = urlsplit(webhook_receiver.url).port
    dns.answers["rebind.test"] = [PUBLIC_ADDRESS, "127.0.0.1"]
    delivery = _pending_delivery(owner, f"http://rebind.test:{port}/hook")
    # When it is delivered
    delivery_attempt(delivery.pk)
    # Then the name was looked up once, the connection went to the checked (public) address, not to loopback
    assert dns.lookups["rebind.test"] == 1
    assert webhook_receiver.wait_for(1, timeout=0.3) == []
    [attempt] = DeliveryAttempt.objects.all()
    assert attempt.status_code is None and PUBLIC_ADDRESS in attempt.error, attempt.error


def test_a_delivery_to_a_checked_url_never_goes_through_a_proxy(owner, dns, monkeypatch, webhook_receiver):
    """A proxy from the environment would look the host up itself, after our check (and reach what it likes)."""
    for name in ("http", "https", "all", "no"):
        monkeypatch.delenv(f"{name}_proxy", raising=False)
        monkeypatch.delenv(f"{name.upper()}_PROXY", raising=False)
    monkeypatch.setenv("HTTP_PROXY", webhook_receiver.url.removesuffix("/hook"))
    delivery = _pending_delivery(owner, "http://hooks.example.com/hook")
    delivery_attempt(delivery.pk)
    assert webhook_receiver.wait_for(1, timeout=0.3) == []  # the proxy heard nothing
    [attempt] = DeliveryAttempt.objects.all()
    assert attempt.status_code is None and "do not go through proxies" in attempt.error, attempt.error


def test_the_pinned_transport_keeps_the_host_name_and_refuses_other_hosts(monkeypatch, webhook_receiver):
    # A name that would resolve elsewhere: the pinned transport must not look it up at all.
    dns = FakeDns({"receiver.test": ["10.255.255.1"], "other.test": ["127.0.0.1"]}).install(monkeypatch)
    port = urlsplit(webhook_receiver.url).port
    with requests.Session() as session:
        session.mount("http://", _PinnedAdapter("receiver.test", ("127.0.0.1",)))
        assert session.post(f"http://receiver.test:{port}/pinned", data=b"{}", timeout=5).status_code == 200
        with pytest.raises(requests.ConnectionError):
            session.post(f"http://other.test:{port}/elsewhere", data=b"{}", timeout=5)
    [received] = webhook_receiver.wait_for(1)
    assert (received.path, received.headers["Host"]) == ("/pinned", f"receiver.test:{port}")
    assert dns.lookups == {}


def _self_signed(tmp_path, host: str):
    """A certificate for `host` (and its key) in PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_file), str(key_file)


def test_the_pinned_transport_checks_tls_against_the_host_name(monkeypatch, tmp_path):
    # Given an HTTPS server on loopback with a certificate for secure.test only
    cert_file, key_file = _self_signed(tmp_path, "secure.test")
    seen = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            seen["sni"], seen["host"] = self.connection.server_name, self.headers["Host"]
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    context.sni_callback = lambda sock, server_name, _context: setattr(sock, "server_name", server_name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    FakeDns({"secure.test": ["10.255.255.1"], "wrong.test": ["10.255.255.1"]}).install(monkeypatch)
    try:
        # When we connect to the vetted address for secure.test: SNI and the certificate check use the name
        with requests.Session() as session:
            session.mount("https://", _PinnedAdapter("secure.test", ("127.0.0.1",)))
            response = session.post(f"https://secure.test:{port}/x", data=b"{}", timeout=5, verify=cert_file)
        assert response.status_code == 204
        assert seen == {"sni": "secure.test", "host": f"secure.test:{port}"}
        # And a certificate that is not for the URL's host is refused, even at the vetted address
        with requests.Session() as session:
            session.mount("https://", _PinnedAdapter("wrong.test", ("127.0.0.1",)))
            with pytest.raises(requests.exceptions.SSLError):
                session.post(f"https://wrong.test:{port}/x", data=b"{}", timeout=5, verify=cert_file)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("tls", [False, True])
def test_a_call_past_its_deadline_is_cut_also_over_tls(monkeypatch, tmp_path, tls):
    """A server answering a byte at a time keeps each read within the timeout; the session's deadline cuts the
    call. Over TLS the socket to shut is the TLS one (the plain socket it wrapped is detached): it was not cut."""
    cert_file, key_file = _self_signed(tmp_path, "slow.test")

    class Trickle(socketserver.StreamRequestHandler):
        def handle(self):
            self.rfile.read1(65536)
            try:
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"." * 60 + b"\r\nContent-Length: 0\r\n\r\n":
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:  # cut by the client
                pass

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    if tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"{'https' if tls else 'http'}://slow.test:{server.server_address[1]}/hook"
    try:
        with DeadlineSession(deadline=0.5) as session:
            adapter = _PinnedAdapter("slow.test", ("127.0.0.1",), session.sockets)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            started = time.monotonic()
            with pytest.raises(requests.RequestException):
                session.post(url, data=b"{}", timeout=(2, 2), verify=cert_file)
            assert session.expired and time.monotonic() - started < 3  # the whole answer takes 8 s
    finally:
        server.shutdown()
        server.server_close()
