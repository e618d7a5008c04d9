"""Shared personas and material (in the spirit of healthchecks' hc/test.py).

Personas: an expert in panel A (science), an expert in panel B (literature), a supervisor of each
panel, an admin, and the anonymous visitor. Panel A and B are real POLLUX panels.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from material.models import Answer, Instruction, LanguageModel
from panels.defaults import ensure_default_panels
from panels.models import Expert, Membership, Panel
from taxonomy.models import Criterion, FunctionalStyle, Rubric, Task
from taxonomy.services import load_pollux
from tests.catalogue_snapshot import keep_catalogue_across_flushes
from work.models import Triple

PASSWORD = "correct-horse-battery"

# Under pytest-xdist each worker gets its share of the cores: PyTorch (the judge tests, and the
# judge servers they start, which inherit the environment) would otherwise size its thread pool to
# the whole machine in every worker, and the workers' spinning threads slow each other several
# times over. Set before anything imports torch.
_XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _XDIST_WORKERS > 1:
    _threads = str(max(1, (os.cpu_count() or 1) // _XDIST_WORKERS))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, _threads)

# Markers whose tests take minutes (a real browser, Celery worker, model weights, a stack of its
# own, a load run): each of them also counts as `slow`, so `./scripts/test --quick` (pytest
# -m "not slow") leaves them all out while plain `./scripts/test`, as CI runs it, keeps them.
SLOW_MARKERS = ("browser", "celery", "judge", "faults", "load")


def pytest_configure(config: pytest.Config) -> None:
    # Registered here rather than in pyproject.toml: .venv's install stamp hashes that file.
    config.addinivalue_line(
        "markers", "slow: minutes rather than seconds; left out by ./scripts/test --quick"
    )


# Tests that share something a worker holds once (`--dist loadgroup` keeps a group on one
# pytest-xdist worker): the private fault stack (tests/faults/stack.py) that the load smoke uses
# too, and the real model weights loaded once per worker.
XDIST_GROUPS = {"faults": "stack", "load": "stack", "judge": "weights"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(name) for name in SLOW_MARKERS):
            item.add_marker(pytest.mark.slow)
        group = next(
            (g for marker, g in XDIST_GROUPS.items() if item.get_closest_marker(marker)), None
        )
        if group and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: Any, django_db_blocker: Any) -> None:
    """Load the catalogue once per test database, so each test does not pay for it, and put it
    back after every flush (tests/catalogue_snapshot.py)."""
    with django_db_blocker.unblock():
        keep_catalogue_across_flushes()


@pytest.fixture(autouse=True)
def _fresh_caches() -> None:
    """Each test starts with empty caches. The process caches are keyed by row ids (a leaderboard
    page and a snapshot's data by the snapshot's, a judge backend by its configuration's), and a
    flush that resets the sequences hands the same ids to a later test's rows: what an earlier
    test cached in the same process would be served for them."""
    from django.core.cache import cache

    from judging.backends import clear_cache as clear_judge_backends
    from leaderboards.selectors import _CACHE as SNAPSHOT_DATA
    from leaderboards.views import _BODIES

    cache.clear()
    _BODIES.clear()  # rendered leaderboard pages, by snapshot id
    SNAPSHOT_DATA.clear()  # snapshots' data, by snapshot id
    clear_judge_backends()  # judge backends, by judge configuration id


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Each test starts in the settings' language: a request or a seed that activated Russian in
    this thread would otherwise leave it to the next test (Django's translation state is
    per thread, and the test client's requests run in the test's)."""
    from django.conf import settings
    from django.utils import translation

    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.deactivate()


@pytest.fixture(scope="session")
def stack() -> Iterator[Any]:
    """A private stack (tests/faults/stack.py: PostgreSQL, Redis, gunicorn, a Celery worker),
    started once per worker for the fault tests and the load smoke (one xdist group: "stack").
    Each test works under a prefix of its own, and leaves every service running."""
    from tests.faults.stack import running_stack

    with running_stack("pollux-stack-") as s:
        yield s


@pytest.fixture
def catalogue(db: Any) -> None:
    """The real POLLUX catalogue and panels (loaded once per database; a no-op afterwards)."""
    if not Criterion.objects.exists():
        load_pollux()
    ensure_default_panels()


def make_user(username: str, **extra: Any) -> User:
    user = get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)
    return user


def make_expert(username: str, *panels: Panel, qualified: bool = True) -> Expert:
    expert = Expert.objects.create(user=make_user(username), profession="linguist")
    for panel in panels:
        Membership.objects.create(expert=expert, panel=panel, qualified=qualified)
    return expert


@dataclass
class Personas:
    panel_a: Panel
    panel_b: Panel
    expert_a: Expert
    expert_b: Expert
    supervisor_a: User
    supervisor_b: User
    admin: User


@pytest.fixture
def personas(catalogue: None) -> Personas:
    return make_personas()


def make_personas() -> Personas:
    panel_a = Panel.objects.get(key="science")
    panel_b = Panel.objects.get(key="literature")
    supervisor_a = make_user("sup_a")
    supervisor_b = make_user("sup_b")
    panel_a.supervisors.add(supervisor_a)
    panel_b.supervisors.add(supervisor_b)
    return Personas(
        panel_a=panel_a,
        panel_b=panel_b,
        expert_a=make_expert("expert_a", panel_a),
        expert_b=make_expert("expert_b", panel_b),
        supervisor_a=supervisor_a,
        supervisor_b=supervisor_b,
        admin=make_user("admin", is_staff=True, is_superuser=True),
    )


def leaf(path_suffix: str) -> Task:
    """A catalogue leaf by the end of its English path, e.g. 'Extract / Scientific text'."""
    return Task.objects.get(is_leaf=True, path__endswith=path_suffix)


@pytest.fixture
def make_answer(catalogue: None) -> Callable[..., Answer]:
    counter = {"n": 0}

    def _make(
        task: str = "Original Text Generation / Scientific text / Academic text",
        style: str | None = None,
        text: str = "Ответ модели: краткое изложение статьи о фотосинтезе.",
        model: str = "GigaChat",
        reference: str = "",
    ) -> Answer:
        counter["n"] += 1
        node = leaf(task) if " / " in task else Task.objects.get(is_leaf=True, name_en=task)
        style_obj = FunctionalStyle.objects.get(key=style) if style else node.style
        instruction = Instruction.objects.create(
            external_id=f"i-{counter['n']}-{task[:20]}",
            text=f"Напишите аннотацию научной статьи №{counter['n']}.",
            reference_answer=reference,
            task=node,
            style=style_obj,
            complexity="medium",
        )
        lm, _ = LanguageModel.objects.get_or_create(name=model, version="1")
        return Answer.objects.create(
            instruction=instruction, model=lm, text=text, text_hash=f"h{counter['n']}"
        )

    return _make


# A rubric (pointwise) triple's criterion and rubric, narrowed: the fields are nullable because
# a side-by-side triple has neither (work.Triple's check constraint triple_fields_of_kind).


def rubric_of(triple: Triple) -> Rubric:
    assert triple.rubric is not None, f"triple {triple.pk} is not a rubric triple"
    return triple.rubric


def criterion_of(triple: Triple) -> Criterion:
    assert triple.criterion is not None, f"triple {triple.pk} is not a rubric triple"
    return triple.criterion


def criterion_id_of(triple: Triple) -> int:
    assert triple.criterion_id is not None, f"triple {triple.pk} is not a rubric triple"
    return triple.criterion_id
