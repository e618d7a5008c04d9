from __future__ import annotations

from django.urls import path

from panels import views

urlpatterns = [
    path("console/", views.console, name="console"),
]
