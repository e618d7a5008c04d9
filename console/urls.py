from __future__ import annotations

from django.urls import path

from console import views, views_browser, views_flags, views_queues, views_review

urlpatterns = [
    path("console/", views.console, name="console"),
    path("console/browse/", views_browser.data_browser, name="console_browser"),
    path("console/browse/bulk/", views_browser.bulk_action, name="console_bulk"),
    path("console/panels/<int:pk>/pick/<slug:what>/", views_browser.picker, name="console_pick"),
    path("console/panels/<int:pk>/", views.panel_page, name="console_panel"),
    path("console/panels/<int:pk>/experts/", views.experts_table, name="console_experts"),
    path("console/panels/<int:pk>/plots/", views.plots_page, name="console_plots"),
    path("console/panels/<int:pk>/estimates/", views.estimates_page, name="console_estimates"),
    path(
        "console/panels/<int:pk>/experts/<int:expert_id>/pause/",
        views.expert_pause,
        name="console_expert_pause",
    ),
    path(
        "console/panels/<int:pk>/experts/<int:expert_id>/resume/",
        views.expert_resume,
        name="console_expert_resume",
    ),
    path(
        "console/panels/<int:pk>/experts/<int:expert_id>/reassign/",
        views.expert_reassign,
        name="console_expert_reassign",
    ),
    path("console/panels/<int:pk>/lock/", views.lock_batch, name="console_lock"),
    path("console/panels/<int:pk>/reopen/", views.triple_reopen, name="console_reopen"),
    path("console/panels/<int:pk>/build/", views.build, name="console_build"),
    path("console/panels/<int:pk>/route-pairs/", views.route_pairs, name="console_route_pairs"),
    path("console/panels/<int:pk>/stats/refresh/", views.stats_refresh, name="console_stats"),
    path("console/panels/<int:pk>/notices/read/", views.notices_read, name="console_notices_read"),
    path("console/panels/<int:pk>/control/", views.control_page, name="console_control"),
    path(
        "console/panels/<int:pk>/control/pairs/",
        views.control_pairs_add,
        name="console_control_pairs_add",
    ),
    path(
        "console/panels/<int:pk>/control/answers/<int:answer_id>/references/",
        views.control_references,
        name="console_control_references",
    ),
    path(
        "console/panels/<int:pk>/review-queues/",
        views_queues.review_queues,
        name="console_review_queues",
    ),
    path("console/panels/<int:pk>/flags/", views_flags.flags_page, name="console_flags"),
    path(
        "console/panels/<int:pk>/flags/<int:flag_id>/resolve/",
        views_flags.flag_resolve,
        name="console_flag_resolve",
    ),
    path(
        "console/panels/<int:pk>/answers/<int:answer_id>/review/",
        views_review.answer_review,
        name="console_answer_review",
    ),
    path(
        "console/panels/<int:pk>/estimates/<int:estimate_id>/return/",
        views_review.estimate_return,
        name="console_estimate_return",
    ),
    path(
        "console/panels/<int:pk>/estimates/<int:estimate_id>/accept/",
        views_review.estimate_accept,
        name="console_estimate_accept",
    ),
    path(
        "console/panels/<int:pk>/triples/<int:triple_id>/adjudicate/",
        views_review.triple_adjudicate,
        name="console_triple_adjudicate",
    ),
    path("console/jobs/<int:job_id>/", views.job_status, name="console_job"),
]
