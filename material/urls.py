from __future__ import annotations

from django.urls import path

from material import views as import_views

urlpatterns = [
    path("import/", import_views.import_page, name="import_material"),
    path("import/<int:pk>/", import_views.import_job, name="import_job"),
]
