"""Downloads answer a client that asks for the media type they serve (`Accept: image/png`, as generated clients and
browsers send), not only one that accepts anything: DRF negotiated against JSON alone and answered 406."""

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from rest_framework.renderers import BrowsableAPIRenderer

from fields.services import field_create
from operations.models import Operation
from tests.operations.helpers import grid_box, grid_table, processed_file
from tests.tenancy import assert_problem

from .conftest import FILES_URL, zip_entries

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]  # operations are built on commit

OPS_URL = "/services/operations/api/operations"
BROWSER_IMAGE = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"


@pytest.fixture
def file(core_user):
    field_create(core_user=core_user, geometry=grid_box(), name="North")
    file = processed_file(core_user, grid_table())
    # The original of an uploaded file (a synthetic file has none).
    file.original_name = default_storage.save(f"originals/{file.pk}.zip", ContentFile(zip_entries({"a.txt": b"a"})))
    file.save(update_fields=["original_name"])
    return file


def _downloads(file) -> list[tuple[str, str, bytes]]:
    """(url, media type, first bytes) of every download of the file and of its operation."""
    operation = Operation.objects.get(files=file)
    return [
        (f"{FILES_URL}/{file.pk}/standardGeojson", "application/geo+json", b"{"),
        (f"{FILES_URL}/{file.pk}/rawGeojson", "application/geo+json", b"{"),
        (f"{FILES_URL}/{file.pk}/originalFile", "application/zip", b"PK"),
        (f"{FILES_URL}/{file.pk}/images/wetMassPerArea.png", "image/png", b"\x89PNG"),
        (f"{OPS_URL}/{operation.pk}/standardGeojson", "application/geo+json", b"{"),
        (f"{OPS_URL}/{operation.pk}/images/wetMassPerArea.png", "image/png", b"\x89PNG"),
    ]


def test_each_download_answers_its_own_media_type_and_any(api_client, file):
    for url, media_type, head in _downloads(file):
        accepts = [media_type, f"{media_type.split('/')[0]}/*", "*/*", None, "application/json"]
        if media_type == "image/png":
            accepts.append(BROWSER_IMAGE)
        for accept in accepts:
            response = api_client.get(url, **({"HTTP_ACCEPT": accept} if accept else {}))
            assert response.status_code == 200, (url, accept, response.content[:200])
            assert response["Content-Type"] == media_type
            assert b"".join(response.streaming_content).startswith(head)


def test_a_weight_of_0_refuses_a_media_type(api_client, file):
    """RFC 9110 section 12.4.2: a weight of 0 is "not acceptable". DRF read `q` as another parameter: it answered a
    PNG to `Accept: image/png;q=0`, JSON to `application/json;q=0`."""
    for url, media_type, _head in _downloads(file):
        for accept in (f"{media_type};q=0", f"*/*, {media_type};q=0", "*/*;q=0", f"{media_type.split('/')[0]}/*;q=0"):
            assert_problem(api_client.get(url, HTTP_ACCEPT=accept), 406, "notAcceptable")
        # A weight of 0 on something else refuses only that
        response = api_client.get(url, HTTP_ACCEPT=f"{media_type}, text/html;q=0")
        assert response.status_code == 200 and response["Content-Type"] == media_type
        # A more specific range above a refused wider one takes it
        response = api_client.get(url, HTTP_ACCEPT=f"*/*;q=0, {media_type};q=0.5")
        assert response.status_code == 200 and response["Content-Type"] == media_type
    users = "/services/usermanagement/api/users"
    for accept in ("application/json;q=0", "*/*;q=0", "*/*, application/json;q=0", "application/*;q=0"):
        assert_problem(api_client.get(users, HTTP_ACCEPT=accept), 406, "notAcceptable")
    for accept in ("application/json;q=0.1", "*/*;q=0, application/json", "text/html;q=0, */*"):
        response = api_client.get(users, HTTP_ACCEPT=accept)
        assert response.status_code == 200 and response["Content-Type"] == "application/json", accept


def test_a_missing_download_is_a_problem_whatever_the_client_accepts(api_client, file):
    for url, media_type in (
        (f"{FILES_URL}/{file.pk}/images/nothing.png", "image/png"),
        (f"{FILES_URL}/unknown/standardGeojson", "application/geo+json"),
        (f"{FILES_URL}/unknown/originalFile", "application/zip"),
    ):
        assert_problem(api_client.get(url, HTTP_ACCEPT=media_type), 404, "notFound")


def test_a_media_type_no_download_serves_is_406(api_client, file):
    for url, _media_type, _head in _downloads(file):
        assert_problem(api_client.get(url, HTTP_ACCEPT="text/csv"), 406, "notAcceptable")
    # JSON endpoints do not take a download's media type.
    assert_problem(api_client.get(f"{FILES_URL}/{file.pk}", HTTP_ACCEPT="image/png"), 406, "notAcceptable")


@pytest.mark.parametrize("debug", [False, True], ids=["production", "debug"])
def test_a_downloads_406_and_options_name_its_file_type(api_client, file, monkeypatch, debug):
    """Both named the view's renderer classes: "This answers application/json or text/html." for a PNG."""
    from conversion.views import FileViewSet
    from operations.views import OperationViewSet

    if debug:  # `make run` adds the browsable page
        for view in (FileViewSet, OperationViewSet):
            monkeypatch.setattr(view, "renderer_classes", [*view.renderer_classes, BrowsableAPIRenderer])
    for url, media_type, _head in _downloads(file):
        problem = assert_problem(api_client.get(url, HTTP_ACCEPT="text/csv"), 406, "notAcceptable")
        assert problem["detail"].endswith(f"This answers {media_type}."), (url, problem["detail"])
        options = api_client.options(url)
        assert options.status_code == 200 and options.json()["renders"] == [media_type], url
    record = f"{FILES_URL}/{file.pk}"
    problem = assert_problem(api_client.get(record, HTTP_ACCEPT="text/csv"), 406, "notAcceptable")
    answered = ["application/json", "text/html"] if debug else ["application/json"]
    assert problem["detail"].endswith(f"This answers {' or '.join(answered)}.")
    assert api_client.options(record).json()["renders"] == answered


def test_in_debug_mode_a_download_is_no_browsable_page(api_client, file, monkeypatch):
    """`make run` (DEBUG) adds DRF's browsable renderer, which took `Accept: text/html`: the file was answered."""
    from conversion.views import FileViewSet
    from operations.views import OperationViewSet

    for view in (FileViewSet, OperationViewSet):
        monkeypatch.setattr(view, "renderer_classes", [*view.renderer_classes, BrowsableAPIRenderer])
    for url, _media_type, _head in _downloads(file):
        assert_problem(api_client.get(url, HTTP_ACCEPT="text/html"), 406, "notAcceptable")
    # The records themselves keep their page
    page = api_client.get(f"{FILES_URL}/{file.pk}", HTTP_ACCEPT="text/html")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
