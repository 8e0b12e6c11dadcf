"""Root URLs: one prefix per service (spec supplement "Service prefixes")."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from platform_site.accounts.views import AuthenticateView
from platform_site.api import errors
from platform_site.api.health import HealthView
from platform_site.api.renderers import SchemaNegotiation

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/authenticate", AuthenticateView.as_view(), name="authenticate"),
    path("health", HealthView.as_view(), name="health"),
    path(
        "api/schema/",
        SpectacularAPIView.as_view(
            authentication_classes=[], permission_classes=[], content_negotiation_class=SchemaNegotiation
        ),
        name="schema",
    ),
    path(
        "api/docs/",
        # GET only: its HTML renderer has no page for OPTIONS (a 500).
        SpectacularSwaggerView.as_view(
            url_name="schema", authentication_classes=[], permission_classes=[], http_method_names=["get", "head"]
        ),
        name="swagger-ui",
    ),
    path("services/usermanagement/api/", include("platform_site.accounts.urls")),
    path("services/config/api/", include("configs.urls")),
    path("services/alerts/api/alerts/", include("webhooks.urls")),
    path("services/fields/api/", include("conversion.field_urls")),
    path("services/fields/api/", include("fields.urls")),
    path("services/beta/api/", include("assets.urls")),
    path("services/beta/api/", include("catalogs.urls")),
    path("services/operations/api/", include("conversion.urls")),
    path("services/operations/api/", include("operations.urls")),
    path("services/widgets/api/", include("magiclinks.urls")),
    path("links/", include("magiclinks.page_urls")),
]

if settings.DEBUG:
    urlpatterns.append(path("api-auth/", include("rest_framework.urls")))

# Any other URL is the problem document of `handler404`, in debug mode too (where Django answers its HTML page,
# listing every URL pattern, instead of calling the handler: `make run` runs in debug mode). The admin answers its
# own unknown URLs.
urlpatterns.append(re_path(r"^", csrf_exempt(errors.handler404)))

handler400 = "platform_site.api.errors.handler400"
handler404 = "platform_site.api.errors.handler404"
handler500 = "platform_site.api.errors.handler500"
