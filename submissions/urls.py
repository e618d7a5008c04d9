from __future__ import annotations

from django.urls import path

from submissions import views

urlpatterns = [
    path("submissions/", views.submission_list, name="submissions"),
    path("submissions/new/<slug:slug>/", views.submission_new, name="submission_new"),
    path(
        "submissions/inputs/<slug:slug>.<str:fmt>",
        views.inputs_download,
        name="submission_inputs",
    ),
    path("submissions/<int:pk>/", views.submission_page, name="submission"),
    path("submissions/<int:pk>/request/", views.submission_request, name="submission_request"),
    path("submissions/<int:pk>/decide/", views.submission_decide, name="submission_decide"),
    path("submissions/<int:pk>/rescore/", views.submission_rescore, name="submission_rescore"),
    path("submissions/<int:pk>/cancel/", views.submission_cancel, name="submission_cancel"),
    path("submissions/<int:pk>/send/", views.submission_send, name="submission_send"),
    path("participants/register/", views.participant_register, name="participant_register"),
    path("participants/", views.participant_list, name="participants"),
    path("participants/<int:pk>/approve/", views.participant_approve, name="participant_approve"),
]
