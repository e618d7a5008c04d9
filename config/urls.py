from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config import views
from participants.forms import LoginForm

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(authentication_form=LoginForm),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("work.urls")),
    path("", include("material.urls")),
    path("", include("guidelines.urls")),
    path("", include("dataset.urls")),
    path("", include("console.urls")),
    path("", include("quality.urls")),
    path("", include("judging.urls")),
    path("", include("comparison.urls")),
    path("", include("markup.urls")),
    path("", include("leaderboards.urls")),
    path("", include("submissions.urls")),
    path("", include("authoring.urls")),
    path("", include("generation.urls")),
    path("", include("discussion.urls")),
]
