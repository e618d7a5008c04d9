from __future__ import annotations

from django.urls import path

from generation import views

urlpatterns = [
    path("generation/", views.runs, name="generation_runs"),
    path("generation/configs/new/", views.config_create, name="generation_config_create"),
    path("generation/runs/new/", views.run_create, name="generation_run_create"),
    path("generation/runs/<int:pk>/", views.run_page, name="generation_run"),
    path("generation/runs/<int:pk>/cancel/", views.run_cancel, name="generation_run_cancel"),
    path("generation/runs/<int:pk>/resume/", views.run_resume, name="generation_run_resume"),
]
