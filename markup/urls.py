from __future__ import annotations

from django.urls import path

from markup import api, views, views_contest, views_files, views_work

urlpatterns = [
    path("markup/texts/", views.text_list, name="markup_texts"),
    path("markup/texts/<int:pk>/compare/", views.text_compare, name="markup_compare"),
    path("markup/import/", views_files.import_page, name="markup_import"),
    path("markup/export/<str:fmt>/", views_files.export, name="markup_export"),
    path("markup/assign/", views_work.assign_texts, name="markup_assign"),
    path("markup/work/", views_work.work_queue, name="markup_work"),
    path("markup/work/<int:pk>/", views_work.markup_page, name="markup_work_page"),
    path("markup/work/<int:pk>/draft/", views_work.markup_draft, name="markup_work_draft"),
    path("markup/work/<int:pk>/submit/", views_work.markup_submit, name="markup_work_submit"),
    path("markup/leaderboard/", views_contest.leaderboard, name="markup_leaderboard"),
    path("markup/runs/", views_contest.my_runs, name="markup_my_runs"),
    path("api/markup/samples/", api.samples, name="api_markup_samples"),
    path("api/markup/runs/", api.runs, name="api_markup_runs"),
    path("api/markup/runs/<int:pk>/", api.run_detail, name="api_markup_run"),
    path("api/markup/runs/<int:pk>/next/", api.run_next, name="api_markup_run_next"),
    path("api/markup/runs/<int:pk>/markups/", api.run_markup, name="api_markup_run_markup"),
    path("api/markup/runs/<int:pk>/close/", api.run_close, name="api_markup_run_close"),
]
