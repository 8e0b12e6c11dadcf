"""A body sent without a Content-Length (`Transfer-Encoding: chunked`) to POST, PUT or PATCH is refused with 411
`lengthRequired` before any view, and nothing is written; a GET so framed answers as usual. Django read such a body
as empty: a field's JSON became "geometry: This field is required.", an upload "no file". Real gunicorn on loopback;
the embedded server's case is in test_embedded_server."""

import http.client
import json
import urllib.request
from urllib.parse import urlsplit

from tests.api.raw_http import send_chunked

FIELD = {
    "id": "north-40",
    "geometry": {"type": "Polygon", "coordinates": [[[-93.6, 42.0], [-93.59, 42.0], [-93.59, 42.01], [-93.6, 42.0]]]},
}


def _get(base: str, path: str, token: str):
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_chunked_body_is_411_and_writes_nothing(gunicorn_server):
    from platform_site.api.authentication import token_issue
    from tests.factories import CoreUserFactory, OwnerFactory

    base, _name = gunicorn_server
    owner = OwnerFactory()
    core_user = CoreUserFactory(owner=owner)
    token = token_issue(owner)
    auth = {"Authorization": f"Bearer {token}"}
    body = json.dumps(FIELD).encode()
    fields = f"/services/fields/api/users/{core_user.id}/fields"

    status, problem = send_chunked(base, fields, [body[:30], body[30:]], auth | {"Content-Type": "application/json"})
    assert (status, problem["errorKey"], problem["status"]) == (411, "lengthRequired", 411), problem
    assert "Content-Length" in problem["detail"]
    assert _get(base, "/services/fields/api/fields", token) == []

    upload = b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\nPK\x05\x06' + bytes(18)
    status, problem = send_chunked(
        base,
        f"/services/operations/api/batch?coreUserId={core_user.id}&provider=Other",
        [upload, b"\r\n--b--\r\n"],
        auth | {"Content-Type": "multipart/form-data; boundary=b"},
    )
    assert (status, problem["errorKey"]) == (411, "lengthRequired"), problem
    assert _get(base, "/services/operations/api/batch", token) == []

    # The same body with its length is taken
    request = urllib.request.Request(
        base + fields, data=body, headers=auth | {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
    assert [field["id"] for field in _get(base, "/services/fields/api/fields", token)] == ["north-40"]

    # A method that reads no body answers as usual, whatever framing an (empty) body came in
    status, listed = send_chunked(base, "/services/fields/api/fields", [], auth, method="GET")
    assert (status, [field["id"] for field in listed]) == (200, ["north-40"])


def test_a_body_whose_client_stops_sending_is_408_and_writes_nothing(gunicorn_server):
    """A client that closes its side of the connection before its Content-Length (it gave up mid-body): gunicorn
    hands the bytes that came as the whole body, and they were judged as one (a 400 JSON parse error, an upload's
    "no file"). The embedded server's case is in test_embedded_read_timeout."""
    import socket

    from platform_site.api.authentication import token_issue
    from tests.factories import CoreUserFactory, OwnerFactory

    base, _name = gunicorn_server
    owner = OwnerFactory()
    core_user = CoreUserFactory(owner=owner)
    token = token_issue(owner)
    body = json.dumps(FIELD).encode()
    fields = f"/services/fields/api/users/{core_user.id}/fields"
    address = urlsplit(base)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        head = (
            f"POST {fields} HTTP/1.1\r\nHost: {address.netloc}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body[:40])
        sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock)
        response.begin()
        problem = json.loads(response.read())
    assert (response.status, problem["errorKey"]) == (408, "requestTimeout"), problem
    assert _get(base, "/services/fields/api/fields", token) == []
