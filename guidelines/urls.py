from __future__ import annotations

from django.urls import path

from guidelines import views

urlpatterns = [
    path("guidelines/panels/<int:pk>/", views.panel_page, name="guidelines_panel"),
    path("console/panels/<int:pk>/guidelines/", views.manage_page, name="guidelines_manage"),
    path("console/panels/<int:pk>/guidelines/edit/", views.edit_page, name="guidelines_edit"),
    path(
        "console/panels/<int:pk>/guidelines/<int:guideline_id>/history/",
        views.history_page,
        name="guidelines_history",
    ),
    path(
        "console/panels/<int:pk>/guidelines/versions/<int:version_id>/",
        views.version_page,
        name="guidelines_version",
    ),
]
