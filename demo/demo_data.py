"""The demo's people and their seeding for `manage.py seed_demo`: accounts, panels, material.

People are hand-written here; the fictional models, instructions and answers are in
:mod:`demo.demo_material`. `demo_seed()` writes all of it idempotently: rows are found by
username, (name, version) or external_id, so a second run creates nothing (and leaves rows
seeded earlier as they are, even if a text has changed in between).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from demo.demo_guidelines import demo_guidelines_ensure
from demo.demo_material import (
    DEMO_INSTRUCTIONS,
    DEMO_MODELS,
    answer_external_id,
    instruction_external_id,
    text_hash,
)
from material.models import Answer, Instruction, LanguageModel
from panels.models import Expert, Membership, Panel
from quality.control import control_reference_criteria
from quality.exams import ReferenceInput, exam_create, exam_item_add, exam_references_set
from quality.models import Exam, ExamMode
from taxonomy.models import Task

# Fixed on purpose: the demo prints it and the README names it. seed_demo refuses to run under
# production settings unless forced, so these accounts never appear there by accident.
DEMO_PASSWORD = "pollux-demo"  # noqa: S105 -- a published demo password, see above
# The expert the README and the banner suggest logging in as: member of the panels that score
# every answer (Crowd: critical and subjective; Editing: general), so her queue is never empty.
DEMO_EXPERT = "anna"
DEMO_SOURCE = "Pollux Studio demo"


@dataclass(frozen=True)
class DemoPerson:
    username: str
    first_name: str
    last_name: str
    panels: tuple[str, ...] = ()
    profile: dict[str, Any] = field(default_factory=dict)


DEMO_ADMIN = DemoPerson("admin", "Ирина", "Кузнецова")
DEMO_SUPERVISOR = DemoPerson(
    "supervisor", "Сергей", "Павлов", panels=("crowd", "editing", "science", "literature")
)
# Every panel has at least two members, so domain and task criteria (overlap 2) can be covered;
# all six sit in Crowd, so critical criteria (overlap 5) can be too.
DEMO_EXPERTS: tuple[DemoPerson, ...] = (
    DemoPerson(
        "anna",
        "Анна",
        "Соколова",
        panels=("crowd", "editing", "literature", "character", "translation"),
        profile={
            "education": "Высшее, МГУ им. М. В. Ломоносова, филологический факультет",
            "field_of_expertise": "русский язык, литературное редактирование",
            "profession": "литературный редактор",
            "llm_experience_years": 2,
            "region": "Москва",
            "languages": "русский, английский",
        },
    ),
    DemoPerson(
        "boris",
        "Борис",
        "Лебедев",
        panels=("crowd", "science", "stem", "qa", "code"),
        profile={
            "education": "Кандидат физико-математических наук, МФТИ",
            "field_of_expertise": "общая физика, методика преподавания",
            "profession": "доцент кафедры физики",
            "llm_experience_years": 3,
            "region": "Долгопрудный",
            "languages": "русский, английский",
        },
    ),
    DemoPerson(
        "vera",
        "Вера",
        "Никитина",
        panels=("crowd", "editing", "law", "journalism"),
        profile={
            "education": "Высшее юридическое, СПбГУ",
            "field_of_expertise": "гражданское и договорное право",
            "profession": "юрист по договорной работе",
            "llm_experience_years": 1,
            "region": "Санкт-Петербург",
            "languages": "русский, английский",
        },
    ),
    DemoPerson(
        "grigory",
        "Григорий",
        "Орлов",
        panels=("crowd", "code", "stem", "science"),
        profile={
            "education": "Высшее, ИТМО, прикладная математика и информатика",
            "field_of_expertise": "разработка на Python и C++, анализ данных",
            "profession": "ведущий разработчик",
            "llm_experience_years": 4,
            "region": "Новосибирск",
            "languages": "русский, английский",
        },
    ),
    DemoPerson(
        "daria",
        "Дарья",
        "Морозова",
        panels=("crowd", "translation", "literature", "law"),
        profile={
            "education": "Высшее, МГЛУ, переводческий факультет",
            "field_of_expertise": "письменный перевод с английского, юридический перевод",
            "profession": "переводчик",
            "llm_experience_years": 2,
            "region": "Казань",
            "languages": "русский, английский, немецкий",
        },
    ),
    DemoPerson(
        "egor",
        "Егор",
        "Волков",
        panels=("crowd", "editing", "qa", "journalism", "character"),
        profile={
            "education": "Высшее, УрФУ, факультет журналистики",
            "field_of_expertise": "журналистика, проверка фактов",
            "profession": "редактор отдела проверки фактов",
            "llm_experience_years": 3,
            "region": "Екатеринбург",
            "languages": "русский, английский",
        },
    ),
)


@dataclass
class DemoReport:
    created: dict[str, int] = field(default_factory=dict)
    answer_ids: list[int] = field(default_factory=list)

    def add(self, model: str, n: int) -> None:
        if n:
            self.created[model] = self.created.get(model, 0) + n


def demo_user_ensure(person: DemoPerson, report: DemoReport, **flags: Any) -> Any:
    """Create the account with the demo password; an existing one keeps the password it has."""
    user_model = get_user_model()
    user = user_model.objects.filter(username=person.username).first()
    if user is None:
        user = user_model.objects.create_user(
            username=person.username,
            password=DEMO_PASSWORD,
            email=f"{person.username}@demo.pollux.invalid",
            first_name=person.first_name,
            last_name=person.last_name,
            **flags,
        )
        report.add("User", 1)
    return user


@transaction.atomic
def demo_people_ensure(report: DemoReport) -> None:
    """Admin, supervisor and experts with their panels (the panels must exist)."""
    panels = {panel.key: panel for panel in Panel.objects.all()}
    demo_user_ensure(DEMO_ADMIN, report, is_staff=True, is_superuser=True)
    supervisor = demo_user_ensure(DEMO_SUPERVISOR, report)
    # add() skips pairs already present, so rerunning adds nothing.
    for key in DEMO_SUPERVISOR.panels:
        panels[key].supervisors.add(supervisor)
    report.add("GuidelineVersion", demo_guidelines_ensure(supervisor))

    memberships = []
    for person in DEMO_EXPERTS:
        user = demo_user_ensure(person, report)
        expert, created = Expert.objects.get_or_create(user=user, defaults=person.profile)
        report.add("Expert", int(created))
        memberships += [Membership(expert=expert, panel=panels[key]) for key in person.panels]
    before = Membership.objects.count()
    Membership.objects.bulk_create(memberships, ignore_conflicts=True)
    report.add("Membership", Membership.objects.count() - before)


@transaction.atomic
def demo_material_ensure(report: DemoReport) -> None:
    """Models, instructions and answers, in bulk, found again by their natural keys."""
    before = LanguageModel.objects.count()
    LanguageModel.objects.bulk_create(
        [LanguageModel(name=m.name, version=m.version, provider=m.provider) for m in DEMO_MODELS],
        ignore_conflicts=True,
    )
    report.add("LanguageModel", LanguageModel.objects.count() - before)
    by_name = {(lm.name, lm.version): lm for lm in LanguageModel.objects.all()}
    models = {m.key: by_name[(m.name, m.version)] for m in DEMO_MODELS}

    paths = {item.task_path for item in DEMO_INSTRUCTIONS}
    tasks = {t.path: t for t in Task.objects.filter(is_leaf=True, path__in=paths)}
    missing = paths - tasks.keys()
    if missing:
        raise LookupError(f"catalogue leaves not found (is POLLUX loaded?): {sorted(missing)}")

    wanted = [instruction_external_id(item) for item in DEMO_INSTRUCTIONS]
    existing = set(
        Instruction.objects.filter(external_id__in=wanted).values_list("external_id", flat=True)
    )
    new_instructions = [
        Instruction(
            external_id=instruction_external_id(item),
            text=item.text,
            reference_answer=item.reference,
            task=tasks[item.task_path],
            style=tasks[item.task_path].style,
            complexity=item.complexity,
            author="Pollux Studio",
            source=DEMO_SOURCE,
        )
        for item in DEMO_INSTRUCTIONS
        if instruction_external_id(item) not in existing
    ]
    Instruction.objects.bulk_create(new_instructions)
    report.add("Instruction", len(new_instructions))
    instructions = dict(
        Instruction.objects.filter(external_id__in=wanted).values_list("external_id", "id")
    )

    wanted_answers = [
        answer_external_id(item, key) for item in DEMO_INSTRUCTIONS for key in item.answers
    ]
    existing = set(
        Answer.objects.filter(external_id__in=wanted_answers).values_list("external_id", flat=True)
    )
    new_answers = [
        Answer(
            external_id=answer_external_id(item, key),
            instruction_id=instructions[instruction_external_id(item)],
            model=models[key],
            text=text,
            text_hash=text_hash(text),
            generation_meta={"temperature": 0.7, "max_new_tokens": 1024, "demo": True},
        )
        for item in DEMO_INSTRUCTIONS
        for key, text in item.answers.items()
        if answer_external_id(item, key) not in existing
    ]
    Answer.objects.bulk_create(new_answers)
    report.add("Answer", len(new_answers))
    report.answer_ids = list(
        Answer.objects.filter(external_id__in=wanted_answers)
        .order_by("id")
        .values_list("id", flat=True)
    )


DEMO_PRACTICE_TITLE = "Тренировка перед экзаменом"
# Panels of the login expert (anna), so a newcomer finds the practice exam in her list.
DEMO_PRACTICE_PANELS = ("literature", "editing", "crowd")


def demo_practice_ensure(report: DemoReport) -> None:
    """A practice exam (training before the exam) of one demo panel: one demo answer it scores,
    with a reference score and an explanation on each of its criteria. Found again by title."""
    if Exam.objects.filter(title=DEMO_PRACTICE_TITLE).exists():
        return
    supervisor = get_user_model().objects.filter(username=DEMO_SUPERVISOR.username).first()
    answers = list(Answer.objects.filter(pk__in=report.answer_ids).order_by("id"))
    for key in DEMO_PRACTICE_PANELS:
        panel = Panel.objects.filter(key=key).first()
        if panel is None:
            continue
        for answer in answers:
            criteria = [
                c for c in control_reference_criteria(panel=panel, answer=answer) if c.rubric
            ]
            if criteria:
                _practice_create(panel, answer, criteria, supervisor)
                report.add("Exam", 1)
                return


def _practice_create(panel: Panel, answer: Answer, criteria: list[Any], user: Any) -> None:
    exam = exam_create(
        panel=panel, title=DEMO_PRACTICE_TITLE, user=user, mode=ExamMode.PRACTICE, is_active=True
    )
    exam, item = exam_item_add(exam=exam, answer=answer, user=user)
    rows = []
    for criterion in criteria:
        values = criterion.rubric.values
        # A critical gate's top value is the violation: the clean answer has none.
        score = values[0] if criterion.group == "critical" else values[-1]
        why = (
            f"Нарушения «{criterion.name_ru}» в ответе нет, поэтому {score}."
            if criterion.group == "critical"
            else f"Ответ полностью соответствует критерию «{criterion.name_ru}», поэтому {score}."
        )
        rows.append(ReferenceInput(item.scored_answer_id, criterion.pk, score, comment=why))
    exam_references_set(exam=exam, rows=rows, user=user)


def demo_seed() -> DemoReport:
    """People and material of the demo; the catalogue and panels must be loaded first."""
    report = DemoReport()
    demo_people_ensure(report)
    demo_material_ensure(report)
    demo_practice_ensure(report)
    return report
