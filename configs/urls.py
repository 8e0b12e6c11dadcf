from django.urls import path

from .views import CoreUserConfigurationView, OwnerConfigurationView

urlpatterns = [
    path("configs", OwnerConfigurationView.as_view(), name="config-owner"),
    path("configs/<str:coreUserId>", CoreUserConfigurationView.as_view(), name="config-coreuser"),
]
