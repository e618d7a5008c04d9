"""The exam pages: the supervisor's under console/ (a panel's exams, an exam, an attempt), the
candidate's under exams/."""

from __future__ import annotations

from django.urls import path

from quality import views_exams

urlpatterns = [
    path("console/panels/<int:pk>/exams/", views_exams.exams_page, name="console_exams"),
    path("console/exams/<int:pk>/", views_exams.exam_page, name="console_exam"),
    path("console/exams/<int:pk>/items/", views_exams.exam_item_add, name="console_exam_item_add"),
    path(
        "console/exams/<int:pk>/pairs/", views_exams.exam_pairs_add, name="console_exam_pairs_add"
    ),
    path(
        "console/exams/<int:pk>/items/<int:answer_id>/remove/",
        views_exams.exam_item_remove,
        name="console_exam_item_remove",
    ),
    path(
        "console/exams/<int:pk>/references/",
        views_exams.exam_references,
        name="console_exam_references",
    ),
    path("console/exams/<int:pk>/import/", views_exams.exam_import, name="console_exam_import"),
    path("console/attempts/<int:pk>/", views_exams.attempt_page, name="console_attempt"),
    path("exams/", views_exams.my_exams, name="my_exams"),
    path("exams/<int:pk>/start/", views_exams.exam_start, name="exam_start"),
    path(
        "exams/attempts/<int:pk>/continue/",
        views_exams.attempt_continue,
        name="exam_attempt_continue",
    ),
    path(
        "exams/attempts/<int:pk>/items/<int:assignment_id>/feedback/",
        views_exams.practice_feedback,
        name="exam_practice_feedback",
    ),
    path(
        "exams/attempts/<int:pk>/result/",
        views_exams.attempt_result,
        name="exam_attempt_result",
    ),
]
