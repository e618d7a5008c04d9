"""Judge pages: who sees what, starting and cancelling runs, progress, metrics, drill-down."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from judging import services
from judging.models import JudgeConfig, JudgeReport, JudgeRun, RunStatus
from tests.conftest import PASSWORD
from tests.judging.conftest import ScriptedBackend, result

pytestmark = pytest.mark.django_db


def login(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def judged_run(
    material: Any, judge_config: JudgeConfig, django_capture_on_commit_callbacks: Any
) -> JudgeRun:
    m = material(n_answers=2)
    m.score(m.triple(0, "repeats"), 2, 2, 2, rationale="Повторов нет совсем.")
    m.score(m.triple(0, "grammar"), 1, 1, 2)
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    backend = ScriptedBackend(lambda item: result(1))
    # The report is computed when the run finishes (a task queued on commit; eager in tests).
    with django_capture_on_commit_callbacks(execute=True):
        return services.run_execute_inline(run=run, backend_factory=lambda r: backend)


def test_experts_never_see_judge_pages(personas: Any, judged_run: JudgeRun) -> None:
    client = login(personas.expert_a.user)
    assert client.get(reverse("judging_runs")).status_code == HTTPStatus.FORBIDDEN
    assert client.get(reverse("judging_start")).status_code == HTTPStatus.FORBIDDEN
    page = client.get(reverse("judging_run", args=[judged_run.pk]))
    assert page.status_code == HTTPStatus.NOT_FOUND
    drill = client.get(reverse("judging_contradictions", args=[judged_run.pk]))
    assert drill.status_code == HTTPStatus.NOT_FOUND


def test_anonymous_visitors_are_sent_to_login(judged_run: JudgeRun) -> None:
    response = Client().get(reverse("judging_run", args=[judged_run.pk]))
    assert response.status_code == HTTPStatus.FOUND
    assert reverse("login") in response["Location"]


def test_a_supervisor_sees_runs_of_their_panel_only(personas: Any, judged_run: JudgeRun) -> None:
    own = login(personas.supervisor_a)
    assert own.get(reverse("judging_run", args=[judged_run.pk])).status_code == HTTPStatus.OK
    assert (
        f'href="{reverse("judging_run", args=[judged_run.pk])}"'
        in own.get(reverse("judging_runs")).content.decode()
    )
    other = login(personas.supervisor_b)
    page = other.get(reverse("judging_run", args=[judged_run.pk]))
    assert page.status_code == HTTPStatus.NOT_FOUND
    listing = other.get(reverse("judging_runs")).content.decode()
    assert reverse("judging_run", args=[judged_run.pk]) not in listing
    cancel = other.post(reverse("judging_cancel", args=[judged_run.pk]))
    assert cancel.status_code == HTTPStatus.NOT_FOUND


def test_the_run_page_shows_progress_metrics_and_the_confusion_picture(
    personas: Any, judged_run: JudgeRun
) -> None:
    page = login(personas.admin).get(
        reverse("judging_run", args=[judged_run.pk]), HTTP_ACCEPT_LANGUAGE="en"
    )
    html = page.content.decode()
    assert page.status_code == HTTPStatus.OK
    assert '<strong class="done">6</strong>' in html
    # MAE vs mode: |1-2| + |1-1| over 2 triples.
    assert '<td class="mae-mode">0.500</td>' in html
    assert "<svg" in html and "experts 2, judge 1: 1" in html


def test_progress_is_a_partial_for_htmx_polling(personas: Any, judged_run: JudgeRun) -> None:
    client = login(personas.admin)
    response = client.get(reverse("judging_run", args=[judged_run.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert 'id="progress"' in html and "<svg" not in html and "<html" not in html


def test_the_drill_down_puts_expert_rationales_beside_the_judge(
    personas: Any, judged_run: JudgeRun
) -> None:
    html = (
        login(personas.supervisor_a)
        .get(reverse("judging_contradictions", args=[judged_run.pk]))
        .content.decode()
    )
    assert html.count('class="card contradiction"') == 1
    assert "Повторов нет совсем." in html and "Ответ в целом корректен." in html


def test_an_admin_starts_and_cancels_a_run_from_the_ui(
    personas: Any, material: Any, judge_config: JudgeConfig
) -> None:
    m = material(n_answers=1)
    client = login(personas.admin)
    response = client.post(
        reverse("judging_start"), {"config": judge_config.pk, "model": m.answers[0].model_id}
    )
    run = JudgeRun.objects.get()
    assert response.status_code == HTTPStatus.FOUND
    assert (run.total, run.scope, run.created_by) == (
        3,
        {"model": m.answers[0].model_id},
        personas.admin,
    )
    client.post(reverse("judging_cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.cancelled


def test_a_supervisor_must_scope_a_run_to_one_of_their_panels(
    personas: Any, material: Any, judge_config: JudgeConfig
) -> None:
    material(n_answers=1)
    client = login(personas.supervisor_a)
    refused = client.post(
        reverse("judging_start"), {"config": judge_config.pk, "panel": personas.panel_b.pk}
    )
    assert refused.status_code == HTTPStatus.OK and not JudgeRun.objects.exists()
    no_scope = client.post(reverse("judging_start"), {"config": judge_config.pk, "all": "on"})
    assert no_scope.status_code == HTTPStatus.OK and not JudgeRun.objects.exists()
    client.post(reverse("judging_start"), {"config": judge_config.pk, "panel": personas.panel_a.pk})
    assert JudgeRun.objects.get().scope == {"panel": personas.panel_a.pk}


def test_editing_a_configuration_in_the_admin_creates_a_new_version(
    personas: Any, judged_run: JudgeRun, judge_config: JudgeConfig
) -> None:
    client = login(personas.admin)
    url = reverse("admin:judging_judgeconfig_change", args=[judge_config.pk])
    response = client.post(
        url,
        {
            "name": "tiny",
            "backend": "transformers",
            "model_path": "/models/qwen",
            "endpoint": "",
            "endpoint_model": "",
            "api_key_env": "",
            "model_family": "giga",
            "prompt_template": judge_config.prompt_template,
            "decoding": '{"do_sample": false, "max_new_tokens": 256}',
            "batch_size": 2,
        },
    )
    assert response.status_code == HTTPStatus.FOUND
    versions = list(JudgeConfig.objects.filter(name="tiny").order_by("version"))
    assert [(c.version, c.model_path, c.max_new_tokens) for c in versions] == [
        (1, "", 1024),
        (2, "/models/qwen", 256),
    ]
    # The run and its estimates still point at the version they were made with.
    assert set(judged_run.estimates.values_list("config__version", flat=True)) == {1}


def test_the_run_page_shows_the_parse_failure_rate(
    personas: Any, material: Any, judge_config: JudgeConfig
) -> None:
    """Issue #11, item 16: failures as a share of the judged triples, per run."""
    m = material(n_answers=2)  # 6 triples
    failing = {t.pk for t in m.triples()[:3]}
    run = services.run_create(config=judge_config, scope={"panel": m.panel.pk}, enqueue=False)
    backend = ScriptedBackend(
        lambda item: (
            "[FEEDBACK] Хм. [RESULT] 1-2 [END]" if int(item.item_id) in failing else result(0)
        )
    )
    run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    assert (run.done, run.parse_failures) == (6, 3)
    assert run.parse_failure_rate == pytest.approx(0.5)
    page = login(personas.supervisor_a).get(reverse("judging_run", args=[run.pk]))
    assert '<span class="failure-rate">50%</span>' in page.content.decode()


def test_the_drill_down_reads_only_the_stored_report(
    personas: Any, judged_run: JudgeRun, django_capture_on_commit_callbacks: Any
) -> None:
    """Before a report is stored the page computes nothing itself: it says "computing", asks for
    one computation and offers the recompute button; once stored, it lists the contradiction."""
    JudgeReport.objects.filter(run=judged_run).delete()
    client = login(personas.supervisor_a)
    url = reverse("judging_contradictions", args=[judged_run.pk])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        html = client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert 'class="report-computing"' in html and 'class="card contradiction"' not in html
    assert reverse("judging_report_recompute", args=[judged_run.pk]) in html
    assert "contradicts no unanimous panel" not in html
    assert len(callbacks) == 1
    callbacks[0]()  # the computation runs (eager in tests) and stores the report
    html = client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert html.count('class="card contradiction"') == 1
    assert 'class="report-computing"' not in html
