"""400, 403, 404 and 500 answer with the site's own page, in both languages, with a way on."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import SuspiciousOperation
from django.test import Client, RequestFactory
from django.urls import reverse
from django.views import defaults

from tests.conftest import Personas

pytestmark = pytest.mark.django_db

TITLES = {
    "ru": {400: "Некорректный запрос", 403: "Доступ запрещён", 404: "Страница не найдена"},
    "en": {400: "Bad request", 403: "Access denied", 404: "Page not found"},
}


@pytest.mark.parametrize("language", ["ru", "en"])
def test_404_and_403_are_the_sites_pages_with_a_way_on(personas: Personas, language: str) -> None:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(personas.expert_a.user)
    missing = client.get("/no/such/page/")
    html = missing.content.decode()
    assert missing.status_code == 404
    assert TITLES[language][404] in html and 'data-status="404"' in html
    assert f'href="{reverse("home")}"' in html and "/no/such/page/" in html
    forbidden = client.get(reverse("console"))
    html = forbidden.content.decode()
    assert forbidden.status_code == 403
    assert TITLES[language][403] in html and 'class="topbar"' in html
    anonymous = Client(HTTP_ACCEPT_LANGUAGE=language).get("/no/such/page/")
    assert reverse("login") in anonymous.content.decode()


@pytest.mark.parametrize("language", ["ru", "en"])
def test_400_is_the_sites_page(language: str, settings: Any) -> None:
    from django.contrib.auth.models import AnonymousUser
    from django.utils import translation

    request = RequestFactory().get("/x/")
    request.user = AnonymousUser()
    with translation.override(language):
        response = defaults.bad_request(request, SuspiciousOperation("forged"))
    html = response.content.decode()
    assert response.status_code == 400
    assert TITLES[language][400] in html and "forged" not in html


def test_500_is_a_plain_page_in_both_languages() -> None:
    request = RequestFactory().get("/x/")
    response = defaults.server_error(request)
    html = response.content.decode()
    assert response.status_code == 500
    assert "Ошибка сервера" in html and "Server error" in html and 'href="/"' in html
