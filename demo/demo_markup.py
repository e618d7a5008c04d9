"""The demo's span markups (ПРО//ЧТЕНИЕ «Грамматика»): three short school-essay paragraphs
written for the demo, with grammar and speech errors, each marked up by two demo experts and by
a made-up algorithm, so that /markup/texts/ and its comparison pages have something to show.

Offsets are found with str.find in the text (never typed by hand). Idempotent: a text is found
again by its external id, and a markup by its text and author; only what is missing is added.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from demo.demo_data import DEMO_EXPERTS, DemoPerson, DemoReport, demo_user_ensure
from markup import contest
from markup.models import Markup, MarkupSample, MarkupSampleText, MarkupSource, MarkupText
from markup.services import markup_store
from markup.work import markup_assign
from panels.models import Expert, Panel
from participants.models import Participant
from protocol.markup_format import MarkupDocument, default_meta
from protocol.markup_json import to_json
from protocol.spans import Fragment

DEMO_MARKUP_SYSTEM = "Pollux baseline"
# The contest JSON's «Тест» of the demo texts (their uuid is generated and their year is the
# seeding's, as for any text stored without them: markup.models.MarkupText).
DEMO_MARKUP_TEST = "Pollux Studio: демо"


@dataclass(frozen=True)
class Mark:
    """A fragment by its quoted text (the `nth` occurrence, 0 the first)."""

    quote: str
    code: str
    subtype: str = ""
    comment: str = ""
    correction: str = ""
    group: str = "error"
    nth: int = 0


@dataclass(frozen=True)
class DemoText:
    key: str
    subject: str
    theme: str
    text: str
    experts: tuple[tuple[Mark, ...], tuple[Mark, ...]]
    algorithm: tuple[Mark, ...]


DEMO_TEXTS: tuple[DemoText, ...] = (
    DemoText(
        "markup-winter",
        "rus",
        "Мой любимый сезон",
        "Больше всего я люблю зиму. Зимой мы с друзьями катаемся на лыжах и играем в снежки. "
        "Когда я прихожу домой, у меня красные щёки, и мама наливает мне горячий чай. "
        "Читая книгу у окна, снег медленно падал на двор. Мне нравится смотреть на снег, "
        "потому что снег очень красивый и снег блестит на солнце. Одеваю тёплую шапку и иду "
        "гулять. Зима — это самое лучшее время года, я согласен с этим на все сто процентов.",
        (
            (
                Mark("Читая книгу у окна, снег медленно падал на двор", "Г.деепр"),
                Mark("снег очень красивый и снег блестит", "Р.повтор"),
                Mark("Одеваю", "Р.оним", "пар", correction="Надеваю"),
                Mark("самое лучшее", "Р.лишн", "плеон", correction="лучшее"),
            ),
            (
                Mark("Читая книгу у окна, снег медленно падал на двор", "Г.деепр"),
                Mark("снег очень красивый и снег блестит на солнце", "Р.повтор"),
                Mark("Одеваю", "Р.оним", "пар", correction="Надеваю"),
                Mark("на все сто процентов", "Р.стил", "стил"),
            ),
        ),
        (
            Mark("Читая книгу у окна", "Г.деепр"),
            Mark("Одеваю", "Р.знач", correction="Надеваю"),
            Mark("самое лучшее", "Р.лишн", "плеон", correction="лучшее"),
        ),
    ),
    DemoText(
        "markup-library",
        "rus",
        "Зачем нужны библиотеки",
        "Многие считают, что библиотеки сегодня не нужны, ведь всё можно найти в интернете. "
        "Я не согласен с этой точкой зрения. Во-первых, в библиотеке есть книги, которых нет "
        "в сети. Во-вторых, библиотека — это место, где можно спокойно заниматься и никто не "
        "мешает. Согласно расписанию, библиотека работает до восьми, благодаря чего я успеваю "
        "после кружка. Библиотекарь всегда помогает подобрать нужную литературу и даёт "
        "полезные советы. Таким образом, библиотеки играют большую значимость в нашей жизни.",
        (
            (
                Mark("благодаря чего", "Г.упр", "упр", correction="благодаря чему"),
                Mark("играют большую значимость", "Р.сочет", correction="имеют большое значение"),
            ),
            (
                Mark("благодаря чего", "Г.упр", "упр", correction="благодаря чему"),
                Mark("играют большую значимость", "Р.сочет", correction="играют большую роль"),
                Mark("где можно спокойно заниматься и никто не мешает", "Г.однор"),
            ),
        ),
        (
            Mark("благодаря чего", "Г.упр", "упр", correction="благодаря чему"),
            Mark("большую значимость", "Р.сочет"),
            Mark("Библиотекарь", "Р.повтор"),
        ),
    ),
    DemoText(
        "markup-onegin",
        "lit",
        "Образ Татьяны в романе «Евгений Онегин»",
        "Татьяна Ларина является любимой героиней Пушкина. Она отличается от своей сестры "
        "Ольги тем, что она задумчивая и любит читать романы. Когда Татьяна пишет письмо "
        "Онегину, она проявляет смелость, ведь девушки тогда не писали первыми. В конце романа "
        "Татьяна становится светской дамой, но она остаётся верной своему мужу, хотя и любит "
        "Онегина. Автор показывает нам, что Татьяна это идеал русской женщины, который "
        "сохранила свою душу.",
        (
            (
                Mark(
                    "Когда Татьяна пишет письмо Онегину, она проявляет смелость, ведь девушки "
                    "тогда не писали первыми",
                    "АРГУМЕНТ",
                    group="meaning",
                ),
                Mark("который", "ИСП", correction="которая"),
                Mark("она задумчивая", "Р.мест"),
            ),
            (
                Mark(
                    "Когда Татьяна пишет письмо Онегину, она проявляет смелость",
                    "АРГУМЕНТ",
                    group="meaning",
                ),
                Mark("который", "ИСП", correction="которая"),
                Mark("Татьяна это идеал", "ИСП", correction="Татьяна — это идеал"),
            ),
        ),
        (
            Mark("который", "ИСП", correction="которая"),
            Mark("она остаётся", "Р.мест"),
        ),
    ),
)


def _fragment(text: str, mark: Mark) -> Fragment:
    start = -1
    for _ in range(mark.nth + 1):
        start = text.find(mark.quote, start + 1)
    if start < 0:
        raise ValueError(f"demo markup: {mark.quote!r} is not in the text")
    return Fragment(
        start=start,
        end=start + len(mark.quote),
        code=mark.code,
        subtype=mark.subtype,
        comment=mark.comment,
        correction=mark.correction,
        group=mark.group,
    )


def demo_document(item: DemoText, marks: tuple[Mark, ...], author: str) -> MarkupDocument:
    meta = default_meta()
    meta.update(
        id=text_external_id(item),
        subject=item.subject,
        theme=item.theme,
        expert=author,
        test=DEMO_MARKUP_TEST,
    )
    return MarkupDocument(item.text, [_fragment(item.text, m) for m in marks], meta)


def text_external_id(item: DemoText) -> str:
    return f"demo-{item.key}"


@transaction.atomic
def demo_markup_ensure(report: DemoReport) -> None:
    """The demo texts and their markups (the demo experts must exist)."""
    people = [Expert.objects.get(user__username=person.username) for person in DEMO_EXPERTS[:2]]
    for item in DEMO_TEXTS:
        authors: list[tuple[str, str, Expert | None, tuple[Mark, ...]]] = [
            (MarkupSource.EXPERT, expert.pseudonym, expert, marks)
            for expert, marks in zip(people, item.experts, strict=True)
        ]
        authors.append((MarkupSource.ALGORITHM, DEMO_MARKUP_SYSTEM, None, item.algorithm))
        for source, author, expert, marks in authors:
            exists = Markup.objects.filter(
                text__external_id=text_external_id(item), author=author, source=source
            ).exists()
            if exists:
                continue
            markup_store(
                demo_document(item, marks, author), source=source, author=author, expert=expert
            )
            report.add("Markup", 1)
    # The shipped expert markups count as asked by the Editing panel (markup.rules: a supervisor
    # reads his panels' markups only, so the demo supervisor sees them; the system's is the
    # admin's). Asked again on every seed: a database seeded before keeps no panel-less ones.
    Markup.objects.filter(
        text__external_id__in=[text_external_id(item) for item in DEMO_TEXTS],
        source=MarkupSource.EXPERT,
        panel__isnull=True,
    ).update(panel=Panel.objects.get(key=DEMO_WORK_PANEL))


# Texts for the demo experts to mark up themselves (markup.work): no markups shipped, two
# independent markups asked of the Editing panel's experts on every seed.
DEMO_WORK_TEXTS: tuple[tuple[str, str, str], ...] = (
    (
        "demo-work-dacha",
        "Лето на даче",
        "Каждое лето мы ездим на дачу к бабушке. Подъезжая к деревне, у меня всегда поднимается "
        "настроение. Бабушка выращивает огурцы, помидоры и клубнику, а также она очень любит "
        "цветов. Вечером мы сидим на веранде и пьём чай с вареньем, которое бабушка сварила "
        "своими руками. Мне нравится лето, потому что летом можно отдохнуть и летом тепло.",
    ),
    (
        "demo-work-museum",
        "Поход в музей",
        "В прошлую субботу наш класс ходил в краеведческий музей. Экскурсовод рассказывала о "
        "истории нашего города очень интересно и увлекательно. Больше всего мне запомнились "
        "старинные монеты, которых нашли при раскопках. Выйдя из музея, пошёл дождь, и мы "
        "побежали к автобусу. Я считаю, что такие экскурсии очень важные для школьников.",
    ),
)
DEMO_WORK_PANEL = "editing"


@transaction.atomic
def demo_markup_work_ensure(report: DemoReport) -> int:
    """The demo's markup work: its texts, each assigned to two experts of the Editing panel
    (the first demo expert among them). Returns how many markups were assigned now."""
    ids = []
    for key, theme, text in DEMO_WORK_TEXTS:
        stored, created = MarkupText.objects.get_or_create(
            external_id=key,
            defaults={
                "text": text,
                "subject": "rus",
                "meta": {"theme": theme},
                "test": DEMO_MARKUP_TEST,
            },
        )
        if created:
            report.add("MarkupText", 1)
        ids.append(stored.pk)
    panel = Panel.objects.get(key=DEMO_WORK_PANEL)
    return markup_assign(panel, text_ids=ids).created


DEMO_PARTICIPANT = DemoPerson("participant", "Команда", "Орфограф")
DEMO_SAMPLE = "Демо: сочинения (pull)"
DEMO_SYSTEM = "Orfograf 0.1"


@transaction.atomic
def demo_contest_ensure(report: DemoReport) -> str:
    """The markup contest of the demo: a participant account, a sample of the three marked
    texts, and his system's run over it (the demo algorithm's markups sent through the session
    rules), so the leaderboard and "My markup runs" have something to show."""
    user = demo_user_ensure(DEMO_PARTICIPANT, report)
    participant, created = Participant.objects.get_or_create(
        user=user, defaults={"organisation": "Орфограф", "approved": True}
    )
    if created:
        report.add("Participant", 1)
    sample, created = MarkupSample.objects.get_or_create(
        name=DEMO_SAMPLE, defaults={"deadline_s": 24 * 3600}
    )
    if created:
        for position, item in enumerate(DEMO_TEXTS):
            text = MarkupText.objects.get(external_id=text_external_id(item))
            MarkupSampleText.objects.create(sample=sample, text=text, position=position)
    if sample.runs.filter(participant=participant).exists():
        return "already present"
    run = contest.run_open(participant, sample, DEMO_SYSTEM)
    by_text = {text_external_id(item): item for item in DEMO_TEXTS}
    while (released := contest.run_next(run).item) is not None:
        demo = by_text[released.text.external_id]
        document = demo_document(demo, demo.algorithm, DEMO_SYSTEM)
        selections = to_json(document)["selections"]
        contest.run_submit(run, released.text_id, {"selections": selections})
    contest.run_close(run)
    return "a run of 3 texts"
