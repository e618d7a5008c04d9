from __future__ import annotations

from django.urls import path

from leaderboards import views, views_versions

urlpatterns = [
    path("leaderboards/", views.board_list, name="leaderboards"),
    path("leaderboards/new/", views.board_create, name="leaderboard_create"),
    path("leaderboards/<slug:slug>/", views.board_page, name="leaderboard"),
    path(
        "leaderboards/<slug:slug>/models/<int:model>/", views.model_page, name="leaderboard_model"
    ),
    path("leaderboards/<slug:slug>/compare/", views.compare_page, name="leaderboard_compare"),
    path(
        "leaderboards/<slug:slug>/versions/",
        views_versions.versions_page,
        name="leaderboard_versions",
    ),
    path(
        "leaderboards/<slug:slug>/versions/cut/",
        views_versions.version_cut,
        name="leaderboard_version_cut",
    ),
    path("leaderboards/<slug:slug>/refresh/", views.board_refresh, name="leaderboard_refresh"),
    path(
        "leaderboards/<slug:slug>/submission-settings/",
        views.board_submission_settings,
        name="leaderboard_submission_settings",
    ),
    path(
        "leaderboards/<slug:slug>/visibility/",
        views.board_visibility,
        name="leaderboard_visibility",
    ),
]
