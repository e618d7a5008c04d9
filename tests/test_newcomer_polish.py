"""Small things a newcomer notices (issue #11, item 21): favicon, offline API docs, admin names,
checkboxes inside their labels, no CDN anywhere."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from http import HTTPStatus
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.forms import Form
from django.test import Client
from django.urls import reverse
from django.utils import translation

from dataset.views import DatasetJobForm
from quality.forms import ExamForm
from tests.conftest import Personas

ROOT = Path(settings.BASE_DIR)
OUR_APPS = {
    "taxonomy",
    "jobs",
    "panels",
    "material",
    "work",
    "quality",
    "dataset",
    "judging",
    "console",
    "comparison",
}
# Any absolute http(s) URL that a page would load a script, a style or a font from.
CDN = re.compile(
    r"""(?:src|href)\s*=\s*["'](?:https?:)?//|cdn\.|jsdelivr|unpkg|cdnjs|googleapis""", re.I
)


@pytest.mark.django_db
def test_the_favicon_is_served(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == HTTPStatus.OK
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
    login = client.get(reverse("login")).content.decode()
    assert 'rel="icon"' in login


@pytest.mark.django_db
def test_the_api_docs_load_only_local_assets(personas: Personas, client: Client) -> None:
    client.force_login(personas.admin)
    response = client.get(reverse("api-docs"))
    assert response.status_code == HTTPStatus.OK
    html = response.content.decode()
    assert not CDN.search(html), CDN.search(html)
    assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+\.(?:js|css|png))["']""", html)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets), assets
    for asset in assets:
        assert asset.startswith(settings.STATIC_URL) or asset.startswith("/" + settings.STATIC_URL)
        assert client.get(asset).status_code == HTTPStatus.OK, asset


def test_no_template_loads_anything_from_a_cdn() -> None:
    templates = [
        p
        for base in [ROOT / "templates", *(ROOT / app / "templates" for app in OUR_APPS)]
        for p in base.rglob("*.html")
    ]
    assert len(templates) > 20
    offenders = [str(p.relative_to(ROOT)) for p in templates if CDN.search(p.read_text())]
    assert offenders == []


def test_every_admin_model_has_a_plural_name_in_both_languages() -> None:
    checked = 0
    for model in admin.site._registry:
        if model._meta.app_label not in OUR_APPS:
            continue
        checked += 1
        assert "verbose_name_plural" in model._meta.original_attrs, model._meta.label
        with translation.override("ru"):
            names = (str(model._meta.verbose_name), str(model._meta.verbose_name_plural))
            assert not any(re.search("[A-Za-z]", n) for n in names), (model._meta.label, names)
    assert checked >= 10
    with translation.override("en"):
        batch = apps.get_model("judging", "JudgeBatch")._meta.verbose_name_plural
        assert batch == "judge batches"


class _Checkboxes(HTMLParser):
    """Each checkbox and the label it sits in (None when outside any label)."""

    def __init__(self) -> None:
        super().__init__()
        self.label_for: list[str | None] = []
        self.found: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "label":
            self.label_for.append(a.get("for") or "")
        elif tag == "input" and a.get("type") == "checkbox":
            self.found.append((a.get("id") or "", self.label_for[-1] if self.label_for else None))

    def handle_endtag(self, tag: str) -> None:
        if tag == "label" and self.label_for:
            self.label_for.pop()


@pytest.mark.django_db
@pytest.mark.parametrize("form_class", [DatasetJobForm, ExamForm])
@pytest.mark.parametrize("layout", ["as_p", "as_div"])
def test_checkboxes_sit_inside_their_own_label(form_class: type[Form], layout: str) -> None:
    parser = _Checkboxes()
    parser.feed(str(getattr(form_class(), layout)()))
    assert parser.found, "the form has checkboxes"
    for box_id, label_for in parser.found:
        assert label_for is not None, f"{box_id} is outside any label"
        assert label_for in ("", box_id), (box_id, label_for)
