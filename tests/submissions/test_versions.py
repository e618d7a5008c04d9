"""Benchmark versions (issue #30 items 1–4): a published version is frozen against later
material, a submission to an older version is checked against that version's items and ranked
on its board only, an admin cuts a version with a computed changelog, and a bad version
parameter is a 4xx naming it."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from leaderboards.models import BoardVersion, VersionItem
from leaderboards.services import snapshot_store
from leaderboards.versions import NothingToCut, version_current, version_cut
from material.models import Answer, Instruction, LanguageModel
from submissions.models import State, Submission
from submissions.services import publication_decide, publication_request
from tests.conftest import Personas
from tests.submissions.test_submissions import Bench, _answers, _csv, _meta

pytestmark = pytest.mark.django_db(transaction=False)


def _inputs(b: Bench, version: int | None = None) -> bytes:
    url = reverse("submission_inputs", args=[b.board.slug, "jsonl"])
    response = b.client.get(url + (f"?version={version}" if version else ""))
    assert response.status_code == 200, response.content[:300]
    return response.content


def _items(version: BoardVersion) -> list[tuple[Any, ...]]:
    return list(
        VersionItem.objects.filter(version=version)
        .order_by("instruction_id")
        .values_list("instruction_id", "text", "reference_answer", "task_path", "criteria")
    )


def _later_material(b: Bench, make_answer: Any) -> Instruction:
    """What happens to the material after v1: a new instruction of the board's task type
    (as an accepted or imported one), answers imported, one deleted, a reference and a text
    edited."""
    new = make_answer(model="Later").instruction
    model, _created = LanguageModel.objects.get_or_create(name="Imported", version="2")
    for i in b.instructions:
        Answer.objects.create(instruction=i, model=model, text="новый ответ", text_hash=f"x{i.pk}")
    Answer.objects.filter(instruction=b.instructions[1], model__name="Base").delete()
    first = b.instructions[0]
    Instruction.objects.filter(pk=first.pk).update(
        reference_answer="Исправленный эталон", text=first.text + " (правка)"
    )
    return new


def test_a_published_version_is_unchanged_by_later_material(bench: Bench, make_answer: Any) -> None:
    v1 = version_current(bench.board)
    items, inputs = _items(v1), _inputs(bench)
    assert [row[0] for row in items] == [i.pk for i in bench.instructions]
    assert b"reference" not in inputs and "Эталонный".encode() not in inputs
    new = _later_material(bench, make_answer)
    v1.refresh_from_db()
    assert _items(v1) == items
    assert _inputs(bench) == inputs and _inputs(bench, 1) == inputs
    # The changes wait for the next version, named in its changelog.
    v2 = version_cut(bench.board, actor=None, note="Новая инструкция")
    assert v2.number == 2 and v2.changelog["added"] == [new.pk]
    assert v2.changelog["removed"] == [] and v2.changelog["rules"] == []
    assert v2.changelog["changed"] == [
        {"instruction": bench.instructions[0].pk, "fields": ["text", "reference_answer"]}
    ]
    assert _inputs(bench, 1) == inputs and _inputs(bench) != inputs
    with pytest.raises(NothingToCut):
        version_cut(bench.board, actor=None)


def _upload(b: Bench, content: bytes, version: int | None = None, **meta: Any) -> Any:
    upload = io.BytesIO(content)
    upload.name = "answers.csv"
    url = reverse("submission_new", args=[b.board.slug])
    if version is not None:
        url += f"?version={version}"
    return b.client.post(url, {"file": upload, **_meta(**meta)})


def test_a_submission_to_v1_after_v2_is_checked_against_v1_and_ranked_there_only(
    bench: Bench, make_answer: Any, django_capture_on_commit_callbacks: Any, personas: Personas
) -> None:
    version_current(bench.board)
    _later_material(bench, make_answer)
    version_cut(bench.board, actor=None)
    answers = _csv(_answers(bench, "v1-"))
    # v1's three items answered: the current version (four items) refuses the file...
    refused = _upload(bench, answers)
    assert refused.status_code == 422 and "have no answer" in refused.content.decode()
    # ...and v1 takes it, with its own judge and rules.
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload(bench, answers, version=1)
    assert response.status_code == 302, response.content.decode()[:2000]
    s = Submission.objects.get()
    assert s.version is not None and s.version.number == 1 and s.answers == 3
    assert s.state == State.SCORED, s.message
    assert s.result["version"] == 1
    publication_request(s, actor=bench.participant.user)
    publication_decide(s, approve=True, reason="", actor=personas.admin)
    one, two = BoardVersion.objects.order_by("number")
    assert str(s.model_id) in snapshot_store(bench.board, version=one, rounds=0).data["models"]
    assert str(s.model_id) not in snapshot_store(bench.board, version=two, rounds=0).data["models"]
    # The board names the version it ranks and offers the other.
    page = bench.client.get(reverse("leaderboard", args=[bench.board.slug]) + "?version=1")
    text = page.content.decode()
    assert page.status_code == 200 and "v1" in text and 'id="version-switch"' in text


def test_a_bad_version_parameter_is_named_and_an_unknown_one_is_not_found(bench: Bench) -> None:
    version_current(bench.board)
    for name, args in (
        ("submission_inputs", [bench.board.slug, "jsonl"]),
        ("submission_new", [bench.board.slug]),
        ("leaderboard", [bench.board.slug]),
    ):
        url = reverse(name, args=args)
        bad = bench.client.get(url + "?version=v1")
        assert bad.status_code == 400 and "version" in bad.content.decode(), name
        assert bench.client.get(url + "?version=9").status_code == 404, name


def test_an_admin_cuts_a_version_with_a_changelog_and_a_note(
    bench: Bench, make_answer: Any, personas: Personas
) -> None:
    version_current(bench.board)
    versions_url = reverse("leaderboard_versions", args=[bench.board.slug])
    cut_url = reverse("leaderboard_version_cut", args=[bench.board.slug])
    admin = Client()
    admin.force_login(personas.admin)
    assert 'id="version-draft-empty"' in admin.get(versions_url).content.decode()
    assert admin.post(cut_url, {"note": "ничего"}).status_code == 409
    new = make_answer(model="Later").instruction
    page = admin.get(versions_url).content.decode()
    assert f"#{new.pk}" in page and "Cut version v2" in page
    # A participant reads the versions, cuts none.
    participant_page = bench.client.get(versions_url).content.decode()
    assert "v1" in participant_page and 'id="version-cut"' not in participant_page
    assert bench.client.post(cut_url, {"note": "x"}).status_code == 403
    assert BoardVersion.objects.filter(leaderboard=bench.board).count() == 1
    too_long = admin.post(cut_url, {"note": "x" * 2001})
    assert too_long.status_code == 400 and "note" in too_long.content.decode()
    assert admin.post(cut_url, {"note": "Инструкция из авторского цикла"}).status_code == 302
    v2 = BoardVersion.objects.get(leaderboard=bench.board, number=2)
    assert v2.note == "Инструкция из авторского цикла" and v2.created_by == personas.admin
    assert v2.changelog["added"] == [new.pk]
    assert "Инструкция из авторского цикла" in admin.get(versions_url).content.decode()


def test_a_judge_change_is_the_next_versions_and_named_in_its_changelog(
    bench: Bench, personas: Personas
) -> None:
    from judging.services import config_save

    v1 = version_current(bench.board)
    other = config_save(name="another judge", backend="openai", endpoint=bench.server["url"])
    bench.board.judge_config = other
    bench.board.save(update_fields=["judge_config"])
    v1.refresh_from_db()
    assert v1.judge_config_id != other.pk
    v2 = version_cut(bench.board, actor=None)
    assert v2.changelog["rules"] == [
        {"setting": "judge_config_id", "old": v1.judge_config_id, "new": other.pk}
    ]
    assert v2.changelog["added"] == v2.changelog["changed"] == []
    # The page names the rule and the judges (not the stored field and ids).
    admin = Client()
    admin.force_login(personas.admin)
    page = admin.get(reverse("leaderboard_versions", args=[bench.board.slug])).content.decode()
    assert f"designated judge: {v1.judge_config} → {other}" in page
    assert "judge_config_id" not in page


def test_a_version_s_submissions_are_judged_on_its_frozen_instructions(
    bench: Bench, make_answer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from judging.prompts import build_items
    from work.models import Triple

    v1 = version_current(bench.board)
    frozen = dict(VersionItem.objects.filter(version=v1).values_list("instruction_id", "text"))
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload(bench, _csv(_answers(bench, "frozen-")))
    assert response.status_code == 302, response.content.decode()[:2000]
    s = Submission.objects.get()
    assert s.version == v1 and s.judge_config is not None
    # After the cut, the first instruction's text and reference are edited.
    _later_material(bench, make_answer)
    edited = Instruction.objects.get(pk=bench.instructions[0].pk)
    assert edited.text.endswith("(правка)") and edited.reference_answer == "Исправленный эталон"
    triples = list(
        Triple.objects.filter(answer__model=s.model, criterion__isnull=False).select_related(
            "answer__instruction", "criterion", "rubric"
        )
    )
    assert {t.answer.instruction_id for t in triples} == set(frozen)
    prompts = {
        t.answer.instruction_id: item.messages[-1]["content"]
        for t, item in zip(triples, build_items(s.judge_config, triples), strict=True)
    }
    first = prompts[edited.pk]
    assert frozen[edited.pk] in first and "(правка)" not in first
    assert "Исправленный эталон" not in first
    # The same instruction answered outside any submission is judged as it is now.
    model, _new = LanguageModel.objects.get_or_create(name="Outside", version="1")
    outside = Answer.objects.create(instruction=edited, model=model, text="ответ", text_hash="o1")
    triple = Triple.objects.create(
        answer=outside, panel=triples[0].panel, criterion=triples[0].criterion,
        rubric=triples[0].rubric, required_overlap=1,
    )  # fmt: skip
    triple = Triple.objects.select_related("answer__instruction", "criterion", "rubric").get(
        pk=triple.pk
    )
    now = build_items(s.judge_config, [triple])[0].messages[-1]["content"]
    assert "(правка)" in now and "Исправленный эталон" in now
