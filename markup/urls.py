from __future__ import annotations

from django.urls import path

from markup import views, views_work

urlpatterns = [
    path("markup/texts/", views.text_list, name="markup_texts"),
    path("markup/texts/<int:pk>/compare/", views.text_compare, name="markup_compare"),
    path("markup/assign/", views_work.assign_texts, name="markup_assign"),
    path("markup/work/", views_work.work_queue, name="markup_work"),
    path("markup/work/<int:pk>/", views_work.markup_page, name="markup_work_page"),
    path("markup/work/<int:pk>/draft/", views_work.markup_draft, name="markup_work_draft"),
    path("markup/work/<int:pk>/submit/", views_work.markup_submit, name="markup_work_submit"),
]
