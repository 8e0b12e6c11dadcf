"""The project's routes plus `floor/<coreUserId>`: a core-user-scoped endpoint that parses the body and answers
`[]` (bearer authentication, the core-user check, body parsing and rendering; nothing of the fields app).

`urlpatterns` serves as a ROOT_URLCONF for Django's test client; `application` is the same for gunicorn
(`bench._floor:application`). Used by bench/fields_intersects.py for the floor of any request.
"""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.urls import include, path  # noqa: E402
from rest_framework.response import Response  # noqa: E402

from platform_site.api.viewsets import CoreUserScopedViewSet  # noqa: E402


class FloorViewSet(CoreUserScopedViewSet):
    def floor(self, request, coreUserId=None):
        request.data  # noqa: B018 (parse the body, as the endpoint does)
        return Response([])


urlpatterns = [
    path("floor/<str:coreUserId>", FloorViewSet.as_view({"post": "floor"})),
    path("", include(settings.ROOT_URLCONF)),
]


class _Handler(WSGIHandler):
    def get_response(self, request):
        request.urlconf = __name__
        return super().get_response(request)


application = _Handler()
