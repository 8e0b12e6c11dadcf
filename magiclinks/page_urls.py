"""End-user pages, included at `/links/`."""

from django.urls import path

from . import pages

urlpatterns = [
    path("oauth/callback", pages.oauth_callback, name="magiclink-oauth-callback"),
    path("<str:token>", pages.link_page, name="magiclink-page"),
    path("<str:token>/connect/<str:provider>", pages.link_connect, name="magiclink-connect"),
    path("<str:token>/disconnect", pages.link_disconnect, name="magiclink-disconnect"),
    path("<str:token>/upload", pages.link_upload, name="magiclink-upload"),
    path("<str:token>/batches/<uuid:batch_id>", pages.batch_page, name="magiclink-batch"),
    path("<str:token>/batches/<uuid:batch_id>/status", pages.batch_status, name="magiclink-batch-status"),
]
