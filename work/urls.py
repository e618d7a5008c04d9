from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from work import api, views

router = SimpleRouter()
router.register("assignments", api.AssignmentViewSet, basename="api-assignment")

urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("queue/next/", views.queue_next, name="queue_next"),
    path("assignments/<int:pk>/", views.assignment_page, name="assignment"),
    path("assignments/<int:pk>/draft/", views.assignment_draft, name="assignment_draft"),
    path("api/", include(router.urls)),
]
