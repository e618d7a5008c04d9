from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from work import api, views, views_compare, views_rubric

router = SimpleRouter()
router.register("assignments", api.AssignmentViewSet, basename="api-assignment")

urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("queue/next/", views.queue_next, name="queue_next"),
    path("assignments/<int:pk>/", views.assignment_page, name="assignment"),
    path("assignments/<int:pk>/draft/", views_rubric.assignment_draft, name="assignment_draft"),
    path("assignments/<int:pk>/flag/", views_rubric.assignment_flag, name="assignment_flag"),
    path("assignments/<int:pk>/compare/", views_compare.compare_submit, name="compare_submit"),
    path("assignments/<int:pk>/compare/draft/", views_compare.compare_draft, name="compare_draft"),
    path(
        "assignments/<int:pk>/compare/refuse/", views_compare.compare_refuse, name="compare_refuse"
    ),
    path("api/", include(router.urls)),
]
