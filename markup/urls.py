from __future__ import annotations

from django.urls import path

from markup import views

urlpatterns = [
    path("markup/texts/", views.text_list, name="markup_texts"),
    path("markup/texts/<int:pk>/compare/", views.text_compare, name="markup_compare"),
]
