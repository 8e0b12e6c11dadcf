from django.urls import path

from .views import CoreUserViewSet

users = CoreUserViewSet.as_view({"get": "list", "post": "create", "put": "replace"})
user = CoreUserViewSet.as_view({"get": "retrieve", "delete": "destroy"})

urlpatterns = [
    path("users", users, name="coreuser-list"),
    path("users/<str:pk>", user, name="coreuser-detail"),
]
