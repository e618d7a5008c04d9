from __future__ import annotations

from django.urls import path

from material import views as import_views
from material import views_pairs

urlpatterns = [
    path("import/", import_views.import_page, name="import_material"),
    path("import/<int:pk>/", import_views.import_job, name="import_job"),
    path("import/pairs/", views_pairs.pairs_page, name="material_pairs"),
    path("import/pairs/upload/", views_pairs.pairs_import_view, name="material_pairs_import"),
    path("import/pairs/make/", views_pairs.pairs_make_view, name="material_pairs_make"),
    path("import/pairs/jobs/<int:pk>/", views_pairs.pairs_job, name="material_pairs_job"),
]
