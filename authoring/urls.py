from __future__ import annotations

from django.urls import path

from authoring import views

urlpatterns = [
    path("writing/", views.home, name="authoring_home"),
    path("writing/campaigns/new/", views.campaign_create, name="authoring_campaign_create"),
    path("writing/campaigns/<int:pk>/", views.dashboard, name="authoring_dashboard"),
    path("writing/campaigns/<int:pk>/plan/", views.plan_edit, name="authoring_plan"),
    path("writing/campaigns/<int:pk>/take/", views.slot_take, name="authoring_take"),
    path(
        "writing/campaigns/<int:pk>/instructions.<str:fmt>",
        views.export,
        name="authoring_export",
    ),
    path("writing/slots/<int:pk>/", views.slot_page, name="authoring_slot"),
    path("writing/slots/<int:pk>/save/", views.slot_save, name="authoring_save"),
    path("writing/slots/<int:pk>/submit/", views.slot_submit, name="authoring_submit"),
    path("writing/slots/<int:pk>/release/", views.slot_release, name="authoring_release"),
    path("writing/slots/<int:pk>/review/", views.slot_review, name="authoring_review"),
    path("writing/slots/<int:pk>/edit/", views.slot_edit, name="authoring_edit"),
    path("writing/slots/<int:pk>/recheck/", views.slot_recheck, name="authoring_recheck"),
    path(
        "writing/slots/<int:pk>/originality/",
        views.slot_originality,
        name="authoring_originality",
    ),
    path(
        "writing/slots/<int:pk>/revisions/<int:number>/",
        views.revision_diff,
        name="authoring_diff",
    ),
    path("writing/corpora/", views.corpora, name="authoring_corpora"),
    path("writing/baseline/<int:pk>/", views.baseline_answer, name="authoring_baseline"),
    path(
        "writing/panels/<int:pk>/baseline/",
        views.baseline_sample,
        name="authoring_baseline_sample",
    ),
]
