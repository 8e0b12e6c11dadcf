"""The project's routes plus three floors, each answering `[]` after reading the body:
- `floor/<coreUserId>`: a core-user-scoped DRF endpoint (bearer authentication, the core-user check, body parsing
  and rendering; nothing of the fields app): what any `/users/{coreUserId}/...` request costs;
- `floor/django`: a plain Django view (the handler, middleware and URL routing; no DRF, no authentication);
- `floor/wsgi`: answered by the WSGI application before Django (the server, sockets and HTTP parsing alone).

`urlpatterns` serves as a ROOT_URLCONF for Django's test client; `application` is the same for gunicorn
(`bench._floor:application`). Used by bench/fields_intersects.py for the floor of any request.
"""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.urls import include, path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402
from rest_framework.response import Response  # noqa: E402

from platform_site.api.viewsets import CoreUserScopedViewSet  # noqa: E402
from platform_site.wsgi import Handler  # noqa: E402


class FloorViewSet(CoreUserScopedViewSet):
    def floor(self, request, coreUserId=None):
        request.data  # noqa: B018 (parse the body, as the endpoint does)
        return Response([])


@csrf_exempt
def django_floor(request):
    request.body  # noqa: B018
    return HttpResponse(b"[]", content_type="application/json")


urlpatterns = [
    path("floor/django", django_floor),
    path("floor/<str:coreUserId>", FloorViewSet.as_view({"post": "floor"})),
    path("", include(settings.ROOT_URLCONF)),
]


class _Handler(Handler):
    def __call__(self, environ, start_response):
        if environ["PATH_INFO"] == "/floor/wsgi":
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "2")])
            return [b"[]"]
        return super().__call__(environ, start_response)

    def get_response(self, request):
        request.urlconf = __name__
        return super().get_response(request)


application = _Handler()
