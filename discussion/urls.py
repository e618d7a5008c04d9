from __future__ import annotations

from django.urls import path

from discussion import views

urlpatterns = [
    path("discussion/", views.thread_list, name="discussion_threads"),
    path(
        "discussion/assignments/<int:pk>/",
        views.assignment_thread,
        name="discussion_assignment",
    ),
    path("discussion/markups/<int:pk>/", views.markup_thread, name="discussion_markup"),
    path(
        "discussion/threads/<int:pk>/resolve/",
        views.thread_resolve,
        name="discussion_resolve",
    ),
]
