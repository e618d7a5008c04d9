"""The POLLUX task taxonomy and criteria catalogue, with versioned rubrics."""

from __future__ import annotations

from django.db import models
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _


class BilingualMixin:
    """Picks the Russian or English text for the active language."""

    def _pick(self, field: str) -> str:
        lang = (get_language() or "ru")[:2]
        ru = getattr(self, f"{field}_ru", "")
        en = getattr(self, f"{field}_en", "")
        if lang == "en":
            return en or ru
        return ru or en

    @property
    def name(self) -> str:
        return self._pick("name")

    @property
    def desc(self) -> str:
        return self._pick("desc")


class FunctionalStyle(BilingualMixin, models.Model):
    """The instruction's functional style (POLLUX "domain"): scientific, official, literary..."""

    key = models.SlugField(max_length=64, unique=True)
    name_en = models.CharField(max_length=128, unique=True)
    name_ru = models.CharField(max_length=128)

    class Meta:
        verbose_name = _("functional style")
        verbose_name_plural = _("functional styles")
        ordering = ["name_en"]

    def __str__(self) -> str:
        return self.name_en


class TaskGroup(BilingualMixin, models.Model):
    name_en = models.CharField(max_length=200, unique=True)
    name_ru = models.CharField(max_length=200)
    desc_en = models.TextField(blank=True)
    desc_ru = models.TextField(blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        verbose_name = _("task group")
        verbose_name_plural = _("task groups")
        ordering = ["position"]

    def __str__(self) -> str:
        return self.name_en


class Complexity(models.TextChoices):
    EASY = "easy", _("easy")
    MEDIUM = "medium", _("medium")
    HARD = "hard", _("hard")


class Task(BilingualMixin, models.Model):
    """A node of the task tree: a task (level 0) or a subtask (levels 1 and 2).

    Only leaves carry criteria, complexity definitions and the functional style.
    """

    group = models.ForeignKey(TaskGroup, on_delete=models.PROTECT, related_name="tasks")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    level = models.PositiveSmallIntegerField(default=0)
    # "Group / Task / Subtask" in English: the stable natural key of the node.
    path = models.CharField(max_length=600, unique=True)
    name_en = models.CharField(max_length=200)
    name_ru = models.CharField(max_length=200)
    desc_en = models.TextField(blank=True)
    desc_ru = models.TextField(blank=True)
    is_leaf = models.BooleanField(default=False)
    style = models.ForeignKey(
        FunctionalStyle, null=True, blank=True, on_delete=models.PROTECT, related_name="tasks"
    )
    has_gold = models.BooleanField(default=False)
    # {"easy": {"en": ..., "ru": ...}, ...}: what makes an instruction of that level.
    complexity = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    criteria: models.ManyToManyField[Criterion, TaskCriterion] = models.ManyToManyField(
        "Criterion", through="TaskCriterion", related_name="tasks", blank=True
    )

    class Meta:
        verbose_name = _("task")
        verbose_name_plural = _("tasks")
        ordering = ["position"]

    def __str__(self) -> str:
        return self.path

    def display_path(self) -> str:
        """The path in the active language (the stored `path` is the English natural key)."""
        return " / ".join([self.group.name, *(node.name for node in self.lineage())])

    def lineage(self) -> list[Task]:
        """[task, subtask1, subtask2] from the top task down to this node."""
        nodes: list[Task] = []
        node: Task | None = self
        while node is not None:
            nodes.append(node)
            node = node.parent
        return list(reversed(nodes))


class CriterionGroup(models.TextChoices):
    CRITICAL = "critical", _("Critical")
    GENERAL = "general", _("General")
    SUBJECTIVE = "subjective", _("Subjective")
    DOMAIN = "domain", _("Domain-specific")
    TASK = "task", _("Task-specific")


# Order in which criterion groups are shown and scored: critical gates first (POLLUX protocol).
GROUP_ORDER = [
    CriterionGroup.CRITICAL,
    CriterionGroup.GENERAL,
    CriterionGroup.DOMAIN,
    CriterionGroup.TASK,
    CriterionGroup.SUBJECTIVE,
]

CATALOGUE_GROUPS = {
    "Critical": CriterionGroup.CRITICAL,
    "Fine-grained": CriterionGroup.GENERAL,
    "General": CriterionGroup.GENERAL,
    "Subjective": CriterionGroup.SUBJECTIVE,
    "Domain-specific": CriterionGroup.DOMAIN,
    "Task-specific": CriterionGroup.TASK,
}


class Criterion(BilingualMixin, models.Model):
    key = models.CharField(max_length=100, unique=True)
    # The id without the "__N" variant suffix: variants share a name but bind elsewhere.
    base_key = models.CharField(max_length=100, db_index=True)
    name_en = models.TextField()
    name_ru = models.TextField()
    desc_en = models.TextField(blank=True)
    desc_ru = models.TextField(blank=True)
    group = models.CharField(max_length=16, choices=CriterionGroup.choices)
    style = models.ForeignKey(
        FunctionalStyle, null=True, blank=True, on_delete=models.PROTECT, related_name="criteria"
    )
    task_name = models.CharField(max_length=200, blank=True)
    subtask1_name = models.CharField(max_length=200, blank=True)
    # What sets the criterion apart from others of its name (a style, a part of the task tree);
    # "" when its name is its own. Filled by the catalogue loader (taxonomy.naming).
    context_en = models.CharField(max_length=400, blank=True, default="")
    context_ru = models.CharField(max_length=400, blank=True, default="")
    allows_na = models.BooleanField(default=False)
    rubric = models.ForeignKey(
        "Rubric", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Overrides the group's overlap for this criterion (POLLUX lets a criterion need more votes).
    overlap_override = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        verbose_name = _("criterion")
        verbose_name_plural = _("criteria")
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key

    @property
    def is_critical(self) -> bool:
        return self.group == CriterionGroup.CRITICAL

    @property
    def display_name(self) -> str:
        """The criterion as every page names it: its name in the active language, and what sets
        it apart where other criteria have the same name ("Правильность ответа — SQL")."""
        context = self._pick("context")
        return f"{self.name} — {context}" if context else self.name


class BestEnd(models.TextChoices):
    """Which end of a scale is the best score (the one a one-word rationale may justify)."""

    HIGHEST = "highest", _("the highest score")
    # The critical gates: 0 is "no violation", 1 stops the answer.
    LOWEST = "lowest", _("the lowest score")


def best_of(values: list[int], best_end: str) -> int:
    """The best of a scale's values given its best end (one home for Lookups and the page)."""
    return min(values) if best_end == BestEnd.LOWEST else max(values)


class Rubric(models.Model):
    """One version of a criterion's scale. Estimates point at the version they were given under."""

    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="rubrics")
    version = models.PositiveIntegerField()
    # [{"value": 0, "en": "...", "ru": "..."}, ...] in scale order.
    levels = models.JSONField()
    content_hash = models.CharField(max_length=64)
    # Set by the catalogue loader: the lowest for critical criteria, the highest otherwise.
    best_end = models.CharField(max_length=8, choices=BestEnd.choices, default=BestEnd.HIGHEST)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("rubric")
        verbose_name_plural = _("rubrics")
        ordering = ["criterion", "version"]
        constraints = [
            models.UniqueConstraint(fields=["criterion", "version"], name="rubric_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.criterion_id} v{self.version}"

    @property
    def values(self) -> list[int]:
        return [int(level["value"]) for level in self.levels]

    @property
    def max_value(self) -> int:
        return max(self.values)

    @property
    def best_value(self) -> int:
        """The best score of the scale (0 "no violation" for the critical gates)."""
        return best_of(self.values, self.best_end)

    def level_text(self, value: int) -> str:
        lang = (get_language() or "ru")[:2]
        for level in self.levels:
            if int(level["value"]) == value:
                return str(level.get(lang) or level.get("ru") or level.get("en") or "")
        return ""

    def prompt_text(self) -> str:
        """The rubric as the POLLUX judge prompt writes it: one level per paragraph, in Russian."""
        return "\n\n".join(
            f"{level['value']}: {level.get('ru') or level.get('en')}" for level in self.levels
        )


class TaskCriterion(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE)
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT)
    position = models.PositiveSmallIntegerField()

    class Meta:
        verbose_name = _("task criterion")
        verbose_name_plural = _("task criteria")
        ordering = ["task", "position"]
        constraints = [
            models.UniqueConstraint(fields=["task", "criterion"], name="task_criterion_unique")
        ]

    def __str__(self) -> str:
        return f"{self.task_id}:{self.criterion_id}"


class ComparisonCriterion(BilingualMixin, models.Model):
    """One criterion of a side-by-side (pairwise) criteria set, e.g. REPA's ten errors + Overall.

    A set is versioned like the POLLUX catalogue: a changed set is a new version (new rows),
    never an edit of a released one, so old labels keep the wording they were given under.
    Loaded from `taxonomy/data/<set>_criteria_v<N>.json` by `taxonomy.services`.
    """

    criteria_set = models.SlugField(max_length=64)
    version = models.PositiveSmallIntegerField()
    key = models.SlugField(max_length=64)
    position = models.PositiveSmallIntegerField()
    name_en = models.CharField(max_length=200)
    name_ru = models.CharField(max_length=200)
    question_en = models.TextField()
    question_ru = models.TextField()
    judge_en = models.TextField()
    judge_ru = models.TextField()

    class Meta:
        verbose_name = _("comparison criterion")
        verbose_name_plural = _("comparison criteria")
        ordering = ["criteria_set", "version", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["criteria_set", "version", "key"], name="comparison_criterion_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.criteria_set} v{self.version} {self.key}"

    @property
    def question(self) -> str:
        return self._pick("question")

    @property
    def display_name(self) -> str:
        """As `Criterion.display_name`: the names of one criteria set are distinct."""
        return self.name
