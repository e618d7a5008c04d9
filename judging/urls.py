from __future__ import annotations

from django.urls import path

from judging import views

urlpatterns = [
    path("judging/", views.run_list, name="judging_runs"),
    path("judging/start/", views.run_start, name="judging_start"),
    path("judging/runs/<int:pk>/", views.run_detail, name="judging_run"),
    path("judging/runs/<int:pk>/cancel/", views.run_cancel, name="judging_cancel"),
    path("judging/runs/<int:pk>/resume/", views.run_resume, name="judging_resume"),
    path("judging/runs/<int:pk>/swap/", views.run_swap, name="judging_swap"),
    path(
        "judging/runs/<int:pk>/report/recompute/",
        views.run_report_recompute,
        name="judging_report_recompute",
    ),
    path(
        "judging/runs/<int:pk>/contradictions/",
        views.run_contradictions,
        name="judging_contradictions",
    ),
]
