"""The README's "Try it" walked in real Chromium, one test per kind of work (issue #29).

Each test seeds the demo as `./scripts/demo` does (tests/test_demo.py), then walks the README's
flow for every persona it names (the expert `anna`, `supervisor`, `admin`, `participant`, the
anonymous visitor), visiting each page in Russian and in English (the language cookie the
site's switch sets) and taking a full-page screenshot of each into the test's tmp_path as
`<kind>-<persona>-<lang>-<step>.png`.

Breadth, not depth: the pages' own browser tests go into each page in detail. A walk fails on
what a newcomer would meet on the way: an HTTP error or an error page, untranslated interface
words on a Russian page (tests/test_russian_pages.py's checker), raw keys in visible text, a
form the platform pre-filled refused when sent back unchanged, the work's material out of view
while working, a work page without its progress line, and a work page that cannot be completed
with the keys its own key help (`?`) lists.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from authoring.models import Campaign, Slot, SlotState
from demo.demo_data import (
    DEMO_ADMIN,
    DEMO_EXPERT,
    DEMO_PASSWORD,
    DEMO_PRACTICE_TITLE,
    DEMO_SUPERVISOR,
)
from demo.demo_leaderboard import DEMO_BOARD, DEMO_CLOSED_BOARD
from demo.demo_markup import DEMO_PARTICIPANT
from demo.demo_material import DEMO_MODELS
from demo.demo_pairs import DEMO_PAIRS_PANEL
from markup.models import Markup
from panels.models import Panel
from submissions.models import State, Submission
from tests.browser.conftest import login
from tests.crawl import Page
from tests.test_demo import demo_settings, seed  # noqa: F401 -- a fixture, used by name
from tests.test_russian_pages import QUOTED, SNAKE, russian_checker
from tests.waiting import wait_until
from work.models import Assignment, AssignmentKind, AssignmentStatus

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LANGS = ("ru", "en")
ANONYMOUS = "anonymous"
OPEN = [AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS]
# What Django or the server shows when a view breaks, whatever the status line says.
ERROR_PAGE = re.compile(r"Traceback \(most recent call last\)|Server Error \(500\)|<h1>Not Found")
# What the Russian checker takes for a defect and is not: "из 6 среди" (a preposition after a
# count, not a noun in the plural), a demo login shown as who did something ("(participant)").
NOT_FINDINGS = re.compile(r"plural '\d+ среди'|English message '(\w+)' in '.*\(\1\)")
GOOD = "Ответ соответствует критерию без замечаний."
# How much of an element's box lies inside the viewport (px, vertically and horizontally).
IN_VIEW = """el => {
  const r = el.getBoundingClientRect();
  const h = Math.min(r.bottom, innerHeight) - Math.max(r.top, 0);
  const w = Math.min(r.right, innerWidth) - Math.max(r.left, 0);
  return Math.min(h, w);
}"""


class Walk:
    """One kind's walk: who is logged in, in which language, and every finding on the way."""

    def __init__(self, page: Any, base: str, tmp_path: Path, kind: str) -> None:
        self.page, self.base, self.tmp, self.kind = page, base, tmp_path, kind
        self.persona, self.lang = ANONYMOUS, "ru"
        self.findings: list[str] = []
        self.shots: list[Path] = []
        self._russian = russian_checker()
        page.on("response", self._on_response)

    def _where(self) -> str:
        return f"{self.kind}/{self.persona}/{self.lang}"

    def _on_response(self, response: Any) -> None:
        request = response.request
        status = response.status
        if status >= 500 or (
            status >= 400 and request.resource_type in {"document", "fetch", "xhr"}
        ):
            self.findings.append(f"{self._where()}: HTTP {status} {request.method} {response.url}")

    def as_(self, persona: str) -> None:
        self.page.context.clear_cookies()
        self.persona = persona
        if persona != ANONYMOUS:
            login(self.page, self.base, persona, DEMO_PASSWORD)

    def speak(self, lang: str) -> None:
        """The language the site's switch (templates/base.html, set_language) keeps: its cookie."""
        self.lang = lang
        self.page.context.add_cookies(
            [{"name": "django_language", "value": lang, "url": self.base}]
        )

    def visit(self, path: str, step: str, lang: str) -> None:
        self.speak(lang)
        target = f"{self.base}{path}"
        if self.page.url == target:  # the same URL with a #fragment would not load again
            self.page.reload()
        else:
            self.page.goto(target)
        self.page.wait_for_load_state("networkidle")
        self.check(step)

    def visit_both(self, path: str, step: str) -> None:
        for lang in LANGS:
            self.visit(path, step, lang)

    def check(self, step: str, *, full_page: bool = True) -> None:
        """The page in view now: the findings a newcomer would see, and its screenshot."""
        page = self.page
        url = page.url.removeprefix(self.base)
        html = page.content()
        where = f"{self._where()} {step} {url}"
        if ERROR_PAGE.search(html):
            self.findings.append(f"{where}: an error page")
        shown = page.evaluate("document.documentElement.lang")
        if shown != self.lang:
            self.findings.append(f"{where}: the page is in {shown!r}")
        parsed = Page()
        parsed.feed(html)
        if self.lang == "ru":
            found = self._russian(url, parsed.texts)
            self.findings += [f"{where}: {f}" for f in found if not NOT_FINDINGS.search(f)]
        else:
            for text in parsed.texts:
                for match in SNAKE.finditer(QUOTED.sub("«»", text)):
                    self.findings.append(f"{where}: snake_case {match.group(0)!r} in {text!r}")
        shot = self.tmp / f"{self.kind}-{self.persona}-{self.lang}-{step}.png"
        page.screenshot(path=str(shot), full_page=full_page)
        self.shots.append(shot)

    def keyhelp(self, step: str) -> str:
        """Opens the page's key help with `?` and returns what it lists (then closes it)."""
        dialog = self.page.locator("dialog#keyhelp")
        self.page.keyboard.press("Shift+Slash")
        try:
            dialog.wait_for(state="visible", timeout=2000)
        except PlaywrightTimeout:
            focused = self.page.evaluate("document.activeElement.outerHTML.slice(0, 80)")
            self.findings.append(f"{self._where()} {step}: '?' opens no key help ({focused})")
            # The page's own "? all keys" link, to read the list all the same.
            self.page.locator("[data-keyhelp-open]").first.click()
            dialog.wait_for(state="visible")
        listed = str(dialog.inner_text())
        self.check(f"{step}-keys", full_page=False)
        self.page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
        return listed

    def in_view(self, selector: str) -> float:
        return float(self.page.locator(selector).evaluate(IN_VIEW))

    def focus_by_tab(self, selector: str, limit: int = 40) -> None:
        """Presses Tab until `selector` has the focus (the keyboard's way there)."""
        for _ in range(limit):
            if self.page.locator(selector).evaluate("el => el === document.activeElement"):
                return
            self.page.keyboard.press("Tab")
        raise AssertionError(f"{self._where()}: Tab never reaches {selector}")

    def done(self) -> None:
        assert self.shots
        unique = list(dict.fromkeys(self.findings))
        assert not unique, f"{len(unique)} findings:\n" + "\n".join(unique)


@pytest.fixture
def demo(demo_settings: Any) -> Any:  # noqa: F811 -- the imported fixture
    seed()
    return demo_settings


@pytest.fixture
def walk_of(page: Any, live_server: Any, tmp_path: Path) -> Iterator[Any]:
    def make(kind: str) -> Walk:
        page.set_viewport_size({"width": 1280, "height": 800})
        return Walk(page, live_server.url, tmp_path, kind)

    yield make


def _open_work(*, pairs: bool) -> list[Assignment]:
    """Anna's open work of one kind, one assignment per answer or pair, in the queue's order."""
    rows = Assignment.objects.filter(
        expert__user__username=DEMO_EXPERT,
        kind=AssignmentKind.WORK,
        status__in=OPEN,
        pair__isnull=not pairs,
    ).order_by("pk")
    seen: set[Any] = set()
    unique = []
    for row in rows:
        item = row.pair_id if pairs else row.answer_id
        if item not in seen:
            seen.add(item)
            unique.append(row)
    return unique


def _supervised_panel(key: str | None = None) -> Panel:
    panels = Panel.objects.filter(supervisors__username=DEMO_SUPERVISOR.username)
    panel = panels.filter(key=key).first() if key else panels.order_by("pk").first()
    assert panel is not None
    return panel


def test_rubric_scoring_walk(demo: Any, walk_of: Any) -> None:
    walk = walk_of("rubric")
    page = walk.page
    work = _open_work(pairs=False)
    assert len(work) >= 2

    # anna scores answers by keyboard from her queue: one in Russian, the next in English.
    walk.as_(DEMO_EXPERT)
    for lang, assignment in zip(LANGS, work, strict=False):
        walk.visit("/queue/", "queue", lang)
        walk.visit(f"/assignments/{assignment.pk}/", "answer", lang)
        progress = page.locator("#scoring-progress")
        assert re.fullmatch(r"0 (из|of) \d+ \w+", progress.inner_text().strip()), lang
        listed = walk.keyhelp("answer")
        assert "Ctrl" in listed and "Alt" in listed, listed
        blocks = page.locator("fieldset.criterion")
        n = blocks.count()
        for i in range(n):
            block = blocks.nth(i)
            top = block.get_attribute("data-top")
            page.keyboard.press("0" if block.get_attribute("data-group") == "critical" else top)
            page.keyboard.type(GOOD)
            if i < n - 1:
                page.keyboard.press("Alt+ArrowDown")
        # On the last criterion the answer is still in view, and so is the count.
        assert walk.in_view("#answer-text") > 100, lang
        assert walk.in_view("fieldset.criterion:last-of-type") > 50, lang
        assert walk.in_view("#scoring-progress") > 5, lang
        assert re.match(rf"{n} (из|of) {n}\b", progress.inner_text().strip()), lang
        walk.check("last-criterion", full_page=False)
        page.keyboard.press("Control+Enter")
        page.wait_for_url(lambda url, pk=assignment.pk: f"/assignments/{pk}/" not in url)
        assignment.refresh_from_db()
        assert assignment.status == AssignmentStatus.SUBMITTED, lang
    # ... and takes the practice exam: its first item is a scoring page of its own.
    walk.visit_both("/exams/", "exams")
    practice = page.locator("section", has_text=DEMO_PRACTICE_TITLE)
    practice.locator("button.start-exam").first.click()
    page.wait_for_url("**/assignments/*/")
    walk.check("practice")
    assert page.locator("fieldset.criterion").count() and page.locator("#scoring-progress").count()
    walk.visit(page.url.removeprefix(walk.base), "practice", "ru")

    # supervisor: the console, the panel's progress and agreement, review, the data browser.
    walk.as_(DEMO_SUPERVISOR.username)
    panel = _supervised_panel(work[0].panel.key)
    walk.visit_both("/console/", "console")
    walk.visit_both(f"/console/panels/{panel.pk}/", "panel")
    walk.visit_both(f"/console/panels/{panel.pk}/review-queues/", "review-queues")
    opened = page.locator("a.open").first
    if opened.count():
        review = str(opened.get_attribute("href"))
        walk.visit_both(review, "review")
    walk.visit_both("/console/browse/", "browser")

    # admin: import and export, judges.
    walk.as_(DEMO_ADMIN.username)
    for path, step in (("/import/", "import"), ("/dataset/", "dataset"), ("/judging/", "judges")):
        walk.visit_both(path, step)
    walk.done()


def test_side_by_side_walk(demo: Any, walk_of: Any) -> None:
    walk = walk_of("compare")
    page = walk.page
    pairs = _open_work(pairs=True)
    assert len(pairs) >= 2

    # anna compares pairs: by keys only, the two answers in view on criterion 8.
    walk.as_(DEMO_EXPERT)
    for lang, assignment in zip(LANGS, pairs, strict=False):
        walk.visit(f"/assignments/{assignment.pk}/", "pair", lang)
        progress = page.locator("#compare-progress")
        assert re.fullmatch(r"(Размечено|Labelled) 0 (из|of) 11", progress.inner_text().strip())
        listed = walk.keyhelp("pair")
        assert "Ctrl" in listed and "J" in listed, listed
        for _ in range(7):
            page.keyboard.press("1")
        active = page.evaluate(
            "() => Array.from(document.querySelectorAll('fieldset.criterion'))"
            ".indexOf(document.activeElement.closest('fieldset.criterion'))"
        )
        assert active == 7, (lang, active)  # the eighth criterion
        assert walk.in_view("#response-a") > 50 and walk.in_view("#response-b") > 50, lang
        walk.check("criterion-8", full_page=False)
        for _ in range(4):
            page.keyboard.press("1")
        page.wait_for_function("document.getElementById('progress-done').textContent === '11'")
        page.keyboard.press("Control+Enter")
        page.wait_for_url(lambda url, pk=assignment.pk: f"/assignments/{pk}/" not in url)
        assignment.refresh_from_db()
        assert assignment.status == AssignmentStatus.SUBMITTED, lang

    # supervisor: the panel's side-by-side agreement in the console.
    walk.as_(DEMO_SUPERVISOR.username)
    panel = _supervised_panel(DEMO_PAIRS_PANEL)
    for lang in LANGS:
        walk.visit(f"/console/panels/{panel.pk}/", "panel", lang)
        assert page.locator("#pair-agreement").is_visible()

    # admin: the pairs' import, then the rankings recomputed with the numbers as pre-filled.
    walk.as_(DEMO_ADMIN.username)
    walk.visit_both("/import/pairs/", "import-pairs")
    for lang in LANGS:
        walk.visit("/comparison/rankings/", "rankings", lang)
        assert all(m.name in page.content() for m in DEMO_MODELS)
        form = page.locator("form[action$='/rankings/recompute/']")
        form.locator("summary").click()
        values = form.locator("input[inputmode=decimal]").evaluate_all(
            "els => els.map(el => el.value)"
        )
        assert values and (lang == "en" or any("," in v for v in values)), values
        form.locator("button.primary").click()
        page.wait_for_load_state("networkidle")
        walk.check("rankings-recomputed")
        assert page.url.endswith("/comparison/rankings/"), page.url
        refused = page.locator("p.error")
        assert not refused.count(), refused.all_inner_texts()
    walk.done()


def test_span_markup_walk(demo: Any, walk_of: Any) -> None:
    walk = walk_of("spans")
    page = walk.page
    drafts = list(
        Markup.objects.filter(expert__user__username=DEMO_EXPERT, status="draft").order_by("pk")
    )
    assert len(drafts) >= 2

    # anna marks spans in two essays, one per language, by keys only.
    walk.as_(DEMO_EXPERT)
    for lang, markup in zip(LANGS, drafts, strict=False):
        walk.visit("/markup/work/", "texts", lang)
        walk.visit(f"/markup/work/{markup.pk}/", "essay", lang)
        listed = walk.keyhelp("essay")
        assert "Tab" in listed and "Enter" in listed, listed
        titles = page.locator("#markup-criteria .criterion-title").all_inner_texts()
        assert titles and all(t.strip() for t in titles), titles
        page.locator("#markup-criteria-card").wait_for()
        walk.focus_by_tab("#markup-text")
        for _ in range(9):  # to «Подъезжая» / the ninth word
            page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        page.keyboard.type("Г.деепр")
        page.keyboard.press("Enter")
        page.wait_for_selector("#fragment-list li")
        walk.focus_by_tab("#markup-text")
        rows = page.locator("#markup-criteria tbody tr")
        for i in range(rows.count()):
            row = rows.nth(i)
            name = row.get_attribute("data-criterion")
            walk.focus_by_tab(f"select.criterion-score[data-name='{name}']", limit=5)
            page.keyboard.press("ArrowDown")  # "—" to the first score
            walk.focus_by_tab(f"textarea.criterion-rationale[data-name='{name}']", limit=3)
            page.keyboard.type("Оценка по критерию обоснована разметкой.")
        assert page.locator("#criteria-scored").inner_text() == str(rows.count()), lang
        walk.check("scored", full_page=False)
        walk.focus_by_tab("#markup-submit")
        page.keyboard.press("Enter")
        page.wait_for_url(lambda url, pk=markup.pk: f"/markup/work/{pk}/" not in url)

        def submitted(markup: Markup = markup) -> bool:
            markup.refresh_from_db()
            return bool(markup.status == "submitted")

        wait_until(submitted, 10, f"the {lang} markup submitted")
        page.wait_for_load_state("networkidle")
        walk.check("submitted")

    # supervisor: the markups and their comparison; admin: import and the contest's board.
    walk.as_(DEMO_SUPERVISOR.username)
    walk.visit_both("/markup/texts/", "texts")
    compare = page.locator("a[href*='/compare/']").first
    assert compare.count()
    walk.visit_both(str(compare.get_attribute("href")), "compare")
    walk.as_(DEMO_ADMIN.username)
    for path, step in (
        ("/markup/texts/", "texts"),
        ("/markup/import/", "import"),
        ("/markup/leaderboard/", "leaderboard"),
    ):
        walk.visit_both(path, step)
    # participant: his system's runs and the contest's board.
    walk.as_(DEMO_PARTICIPANT.username)
    walk.visit_both("/markup/runs/", "runs")
    walk.visit_both("/markup/leaderboard/", "leaderboard")
    walk.done()


def test_writing_the_benchmark_walk(demo: Any, walk_of: Any) -> None:
    walk = walk_of("writing")
    page = walk.page
    to_review = Slot.objects.get(state=SlotState.SUBMITTED)
    to_judge = Slot.objects.get(state=SlotState.ORIGINALITY)

    # anna returns egor's instruction with a comment, then takes a slot, writes and submits.
    walk.as_(DEMO_EXPERT)
    walk.visit_both("/writing/", "home")
    assert page.locator(f"#review-queue a[href$='/writing/slots/{to_review.pk}/']").count()
    walk.visit(f"/writing/slots/{to_review.pk}/", "review", "en")
    walk.visit(f"/writing/slots/{to_review.pk}/", "review", "ru")
    page.fill("#review-form textarea[name=comment]", "Уточните объём ответа и его адресата.")
    page.click("#review-form button[value=return]")
    page.wait_for_load_state("networkidle")
    walk.check("returned")
    to_review.refresh_from_db()
    assert to_review.state == SlotState.RETURNED
    walk.speak("en")
    page.goto(f"{walk.base}/writing/")
    page.locator("[id^=open-slots] button").first.click()
    page.wait_for_url("**/writing/slots/*/")
    walk.check("slot")
    page.select_option("#f-style", index=1)
    # The draft autosaves a second after the last change; submitted before that, the page's
    # pending save still goes out on unload and is refused (409) behind the submission.
    with page.expect_response(lambda response: response.url.endswith("/save/")):
        page.fill("#f-text", "Перепишите объявление о собрании жильцов в официальном стиле.")
    page.click("#authoring-form button[type=submit]")
    page.wait_for_selector("#instruction-text")
    walk.check("submitted")
    walk.visit(page.url.removeprefix(walk.base), "submitted", "ru")

    # supervisor: the originality verdict, then the campaign's dashboard.
    walk.as_(DEMO_SUPERVISOR.username)
    walk.visit_both("/writing/", "home")
    assert page.locator(f"#originality-queue a[href$='/writing/slots/{to_judge.pk}/']").count()
    walk.visit(f"/writing/slots/{to_judge.pk}/", "originality", "en")
    walk.visit(f"/writing/slots/{to_judge.pk}/", "originality", "ru")
    page.click("#originality-form button[value=original]")
    page.wait_for_load_state("networkidle")
    walk.check("accepted")
    to_judge.refresh_from_db()
    assert to_judge.state == SlotState.ACCEPTED
    campaign = Campaign.objects.get()
    walk.visit_both(f"/writing/campaigns/{campaign.pk}/", "dashboard")

    # admin: the generation pages are reachable from the navigation.
    walk.as_(DEMO_ADMIN.username)
    walk.visit_both("/writing/", "home")
    for lang in LANGS:
        walk.speak(lang)
        page.goto(f"{walk.base}/")
        page.locator("header nav a[href='/generation/']").click()
        page.wait_for_url("**/generation/")
        walk.check("generation")
    walk.done()


@pytest.fixture
def judge_server(demo_settings: Any) -> Iterator[None]:  # noqa: F811
    """The demo board's judge: the local test server ./scripts/demo starts."""
    from demo.judge_server import serve
    from judging.backends import clear_cache

    server = serve(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    demo_settings.DEMO_JUDGE_URL = f"http://127.0.0.1:{server.server_address[1]}/v1"
    clear_cache()
    yield
    server.shutdown()
    server.server_close()
    clear_cache()


def test_submissions_walk(judge_server: None, demo: Any, walk_of: Any) -> None:
    from authoring.services import originality_verdict

    walk = walk_of("submissions")
    page = walk.page
    example = Path(demo.DEMO_DIR) / "submission-example.jsonl"
    assert example.exists()
    # The README's order: the writing walk-through accepted an instruction first.
    supervisor = get_user_model().objects.get(username=DEMO_SUPERVISOR.username)
    slot = Slot.objects.get(state=SlotState.ORIGINALITY)
    originality_verdict(slot=slot, verdict="original", comment="", user=supervisor)

    # participant: uploads the seed's example file, reads his private score, asks to publish.
    walk.as_(DEMO_PARTICIPANT.username)
    assert page.url.endswith("/submissions/"), page.url  # an approved participant lands there
    walk.visit_both("/submissions/", "list")
    walk.visit(f"/submissions/new/{DEMO_BOARD}/", "upload", "en")
    walk.visit(f"/submissions/new/{DEMO_BOARD}/", "upload", "ru")
    page.set_input_files("input[name=file]", str(example))
    page.fill("input[name=model_name]", "Demo participant LM")
    page.fill("input[name=model_version]", "0.1")
    page.fill("input[name=parameters]", "1B")
    page.fill("textarea[name=inference_settings]", '{"temperature": 0, "max_new_tokens": 1024}')
    page.fill("input[name=gpus]", "none (CPU)")
    page.fill("textarea[name=logs]", "demo")
    page.click("#submission-form button")
    page.wait_for_load_state("networkidle")
    walk.check("uploaded")
    # Issue #30: the board's item set must not grow with the accepted instruction.
    refused = page.locator("#upload-errors")
    assert not refused.count(), refused.all_inner_texts()
    page.wait_for_url("**/submissions/*/")
    submission = Submission.objects.get(model_name="Demo participant LM")
    wait_until(
        lambda: Submission.objects.get(pk=submission.pk).state == State.SCORED, 30, "the score"
    )
    mine = f"/submissions/{submission.pk}/"
    for lang in LANGS:
        walk.visit(mine, "score", lang)
        assert page.locator("#submission-score").is_visible()
    page.click("#request-publication")
    page.wait_for_load_state("networkidle")
    walk.check("requested")

    # The closed test (issue #30): no inputs to download; he gives the demo's test server as
    # his model's endpoint and reads his private score, never the inputs or the answers.
    walk.visit(f"/submissions/new/{DEMO_CLOSED_BOARD}/", "closed", "ru")
    walk.visit(f"/submissions/new/{DEMO_CLOSED_BOARD}/", "closed", "en")
    assert not page.locator("a[href*='/submissions/inputs/']").count()
    page.fill("input[name=model_name]", "Demo endpoint LM")
    page.fill("input[name=model_version]", "0.1")
    page.fill("input[name=parameters]", "1B")
    page.fill("input[name=endpoint]", demo.DEMO_JUDGE_URL)
    page.fill("input[name=endpoint_model]", "demo")
    page.fill("input[name=api_key]", "sk-demo-walk-KEY")
    page.click("#submission-form button")
    page.wait_for_url("**/submissions/*/")
    closed = Submission.objects.get(model_name="Demo endpoint LM")
    wait_until(
        lambda: Submission.objects.get(pk=closed.pk).state == State.SCORED, 30, "the closed score"
    )
    for lang in LANGS:
        walk.visit(f"/submissions/{closed.pk}/", "closed-score", lang)
        assert page.locator("#submission-score").is_visible()
        assert page.locator("#generation-report").is_visible()
        assert "sk-demo-walk-KEY" not in page.content()

    # admin approves the publication (the decision form as pre-filled).
    walk.as_(DEMO_ADMIN.username)
    walk.visit_both("/submissions/", "list")
    walk.visit(f"/submissions/{submission.pk}/", "decide", "en")
    walk.visit(f"/submissions/{submission.pk}/", "decide", "ru")
    page.click("#submission-admin form[action$='/decide/'] button")
    page.wait_for_load_state("networkidle")
    walk.check("decided")
    submission.refresh_from_db()
    assert submission.state == State.PUBLISHED, submission.state

    # anonymous: the public leaderboard, the published model among the judge's rows.
    walk.as_(ANONYMOUS)
    walk.visit_both("/leaderboards/", "leaderboards")
    walk.visit_both(f"/leaderboards/{DEMO_BOARD}/", "board")
    assert all(m.name in page.content() for m in DEMO_MODELS)
    walk.visit_both(
        f"/leaderboards/{DEMO_BOARD}/?source=judge:{submission.judge_config_id}", "judge-board"
    )
    assert "Demo participant LM" in page.content()
    walk.done()
