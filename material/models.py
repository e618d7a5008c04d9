"""Material under evaluation: instructions, the models that answered and their answers."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from taxonomy.models import Complexity, FunctionalStyle, Task


class Instruction(models.Model):
    external_id = models.CharField(max_length=128, unique=True, null=True, blank=True)
    text = models.TextField()
    reference_answer = models.TextField(blank=True)
    # The POLLUX leaf task, which decides the pointwise criteria. Empty for a query that came
    # only to be compared side by side (a REPA import has a query category, not a POLLUX
    # task): such an instruction gets no pointwise triples.
    task = models.ForeignKey(
        Task,
        on_delete=models.PROTECT,
        related_name="instructions",
        limit_choices_to={"is_leaf": True},
        null=True,
        blank=True,
    )
    style = models.ForeignKey(
        FunctionalStyle,
        on_delete=models.PROTECT,
        related_name="instructions",
        null=True,
        blank=True,
    )
    complexity = models.CharField(max_length=8, choices=Complexity.choices, blank=True)
    ethics_flag = models.BooleanField(default=False)
    author = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("instruction")
        verbose_name_plural = _("instructions")

    def __str__(self) -> str:
        return self.external_id or f"instruction {self.pk}"


class LanguageModel(models.Model):
    """The model that wrote an answer. Hidden from experts: scoring is blind."""

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, blank=True, default="")
    provider = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = _("model")
        verbose_name_plural = _("models")
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="language_model_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()


class Answer(models.Model):
    external_id = models.CharField(max_length=128, unique=True, null=True, blank=True)
    instruction = models.ForeignKey(Instruction, on_delete=models.CASCADE, related_name="answers")
    model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="answers")
    text = models.TextField()
    generation_meta = models.JSONField(default=dict, blank=True)
    # Text fingerprint: re-importing the same answer under no id finds it instead of duplicating.
    text_hash = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("answer")
        verbose_name_plural = _("answers")
        constraints = [
            models.UniqueConstraint(
                fields=["instruction", "model", "text_hash"], name="answer_natural_unique"
            )
        ]

    def __str__(self) -> str:
        return self.external_id or f"answer {self.pk}"


class AnswerPair(models.Model):
    """Two answers of different models to one instruction, compared side by side (REPA).

    The order is the pair's own: "A" is `answer_a`. What an expert sees is placed per
    assignment (work.Assignment.swapped), and labels are stored in this orientation.
    """

    external_id = models.CharField(max_length=128, unique=True, null=True, blank=True)
    instruction = models.ForeignKey(Instruction, on_delete=models.CASCADE, related_name="pairs")
    answer_a = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="pairs_as_a")
    answer_b = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="pairs_as_b")
    # REPA's query_category (one of nine query types) and where the pair came from.
    category = models.CharField(max_length=100, blank=True)
    source = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("answer pair")
        verbose_name_plural = _("answer pairs")
        constraints = [
            models.UniqueConstraint(fields=["answer_a", "answer_b"], name="answer_pair_unique"),
            models.CheckConstraint(
                condition=~models.Q(answer_a=models.F("answer_b")), name="answer_pair_distinct"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id or f"pair {self.pk}"
