from __future__ import annotations

from django.urls import path

from dataset import views as dataset_views

urlpatterns = [
    path("dataset/", dataset_views.dataset_page, name="dataset"),
    path("dataset/jobs/<int:pk>/", dataset_views.dataset_job, name="dataset-job"),
    path(
        "dataset/jobs/<int:pk>/download/",
        dataset_views.dataset_download,
        name="dataset-download",
    ),
]
