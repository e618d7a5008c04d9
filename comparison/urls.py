from __future__ import annotations

from django.urls import path

from comparison import views

urlpatterns = [
    path("comparison/rankings/", views.rankings_page, name="comparison_rankings"),
    path(
        "comparison/rankings/recompute/",
        views.rankings_recompute,
        name="comparison_rankings_recompute",
    ),
    path(
        "comparison/rankings/download.xlsx",
        views.rankings_download,
        {"fmt": "xlsx"},
        name="comparison_rankings_xlsx",
    ),
    path(
        "comparison/rankings/download.parquet.zip",
        views.rankings_download,
        {"fmt": "parquet"},
        name="comparison_rankings_parquet",
    ),
]
