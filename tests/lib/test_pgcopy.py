"""lib.pgcopy on a table of its own: rows written by COPY read back equal, columns from _meta."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from django.db import IntegrityError, connection, models
from django.test.utils import isolate_apps

from lib import pgcopy
from lib.pgcopy import CopyColumnsError, ThreadedCopyWriter, copy_model_rows, next_ids

NOW = datetime(2026, 11, 26, 12, 30, 15, 123456, tzinfo=UTC)


@pytest.fixture
def sample(db: Any) -> Iterator[Any]:
    """A model with every column type the writer encodes, its table made in the test's
    transaction (rolled back with it)."""
    with isolate_apps():  # a registry of its own: no migration, no app

        class Sample(models.Model):  # noqa: DJ008 (a test table, never displayed)
            big = models.BigIntegerField()
            small = models.PositiveSmallIntegerField()
            number = models.IntegerField(default=7)
            ratio = models.FloatField(null=True)
            flag = models.BooleanField(default=False)
            label = models.CharField(max_length=40)
            body = models.TextField()
            data = models.JSONField(default=dict)
            note = models.TextField(null=True)  # noqa: DJ001 (NULL text is what is tested)
            seen_at = models.DateTimeField(null=True)
            created_at = models.DateTimeField(auto_now_add=True)

            class Meta:
                app_label = "lib_tests"

        with connection.schema_editor() as editor:
            editor.create_model(Sample)
        yield Sample


def _rows(model: type[models.Model]) -> list[tuple[Any, ...]]:
    names = [f.attname for f in model._meta.concrete_fields]
    return list(model._default_manager.order_by("pk").values_list(*names))


VALUES: dict[str, Any] = {
    "big": np.array([1, -(2**62), 2**40], dtype=np.int64),
    "small": np.array([0, 5, 32767], dtype=np.int64),
    "ratio": np.array([0.5, -1e300, 3.0]),
    "flag": np.array([True, False, True]),
    "label": ["a", "", "Ёжик в тумане 🦔"],
    "body": np.array(["x" * 300, "строка\nс переводом", "tab\there"]),
}


@pytest.mark.parametrize("method", pgcopy.METHODS)
def test_rows_written_by_copy_read_back_equal(sample: Any, method: str) -> None:
    with connection.cursor() as cursor:
        copy_model_rows(cursor, sample, 3, VALUES, now=NOW, method=method)
    rows = sample._default_manager.order_by("pk")
    assert [r.big for r in rows] == [1, -(2**62), 2**40]
    assert [r.small for r in rows] == [0, 5, 32767]
    assert [r.ratio for r in rows] == [0.5, -1e300, 3.0]
    assert [r.flag for r in rows] == [True, False, True]
    assert [r.label for r in rows] == ["a", "", "Ёжик в тумане 🦔"]
    assert [r.body for r in rows] == ["x" * 300, "строка\nс переводом", "tab\there"]
    # Left out: defaults (the same in every row), NULL where nullable, "now" for auto_now_add.
    assert {(r.number, r.note, r.seen_at, r.created_at) for r in rows} == {(7, None, None, NOW)}
    assert [r.data for r in rows] == [{}, {}, {}]
    assert len({r.pk for r in rows}) == 3  # ids from the table's identity


def test_both_encodings_write_the_same_table(sample: Any) -> None:
    given = {**VALUES, "data": {"k": ["v", 1]}, "note": "same", "seen_at": NOW, "number": -3}
    tables = []
    for method in pgcopy.METHODS:
        with connection.cursor() as cursor:
            copy_model_rows(cursor, sample, 3, given, now=NOW, method=method)
        tables.append([row[1:] for row in _rows(sample)])
        sample._default_manager.all().delete()
    assert tables[0] == tables[1]
    assert tables[0][0][5:] == ("a", "x" * 300, {"k": ["v", 1]}, "same", NOW, NOW)


def test_per_row_timestamps_and_scalars_of_numpy_types(sample: Any) -> None:
    moments = [NOW, datetime(2000, 1, 1, tzinfo=UTC), datetime(1999, 12, 31, 23, 59, tzinfo=UTC)]
    with connection.cursor() as cursor:
        copy_model_rows(
            cursor,
            sample,
            3,
            {**VALUES, "seen_at": moments, "number": np.int64(11), "flag": True},
            now=NOW,
        )
    rows = _rows(sample)
    assert [r[10] for r in rows] == moments
    assert {(r[3], r[5]) for r in rows} == {(11, True)}


@pytest.mark.parametrize("method", pgcopy.METHODS)
def test_a_not_null_field_left_out_fails_before_anything_is_sent(sample: Any, method: str) -> None:
    given = {k: v for k, v in VALUES.items() if k not in ("label", "small")}
    with connection.cursor() as cursor, pytest.raises(CopyColumnsError) as error:
        copy_model_rows(cursor, sample, 3, given, method=method)
    assert str(error.value) == "Sample: NOT NULL fields without a value or default: small, label"
    # Nothing reached the server: the transaction is still usable.
    assert sample._default_manager.count() == 0


def test_an_unknown_field_is_refused(sample: Any) -> None:
    with connection.cursor() as cursor, pytest.raises(CopyColumnsError, match=r"\['colour'\]"):
        copy_model_rows(cursor, sample, 3, {**VALUES, "colour": "red"})


def test_a_new_column_is_picked_up_from_meta(sample: Any) -> None:
    """The column list follows _meta: a field added with a default needs no change here."""
    extra: models.SmallIntegerField[int, int] = models.SmallIntegerField(default=42)
    extra.contribute_to_class(sample, "extra")
    with connection.schema_editor() as editor:
        editor.add_field(sample, extra)
    try:
        with connection.cursor() as cursor:
            copy_model_rows(cursor, sample, 3, VALUES, now=NOW)
        assert list(sample._default_manager.values_list("extra", flat=True)) == [42, 42, 42]
    finally:
        sample._meta.local_fields.remove(extra)
        sample._meta._expire_cache()


def test_ids_drawn_ahead_are_written_as_given(sample: Any) -> None:
    with connection.cursor() as cursor:
        ids = next_ids(cursor, sample, 3)
        copy_model_rows(cursor, sample, 3, {**VALUES, "id": np.array(ids)[::-1]}, now=NOW)
    assert len(set(ids)) == 3
    assert [r[0] for r in _rows(sample)] == sorted(ids)
    assert sample._default_manager.get(pk=ids[-1]).big == 1


def test_an_empty_copy_writes_nothing(sample: Any) -> None:
    empty = {k: np.asarray(v)[:0] for k, v in VALUES.items()}
    with connection.cursor() as cursor:
        copy_model_rows(cursor, sample, 0, empty)
    assert sample._default_manager.count() == 0


class _Writer(ThreadedCopyWriter[int]):
    thread_name = "lib-test-copy"

    def __init__(self, model: type[models.Model]) -> None:
        self.model = model
        super().__init__()

    def write(self, cursor: Any, chunk: int) -> None:
        values = {**VALUES, "big": np.full(3, chunk)}
        if chunk < 0:
            values["id"] = 1  # the same id three times: the primary key refuses
        copy_model_rows(cursor, self.model, 3, values, now=NOW)


def test_the_threaded_writer_writes_every_chunk_in_the_callers_transaction(
    sample: Any,
) -> None:
    interval = sys.getswitchinterval()
    writer = _Writer(sample)
    for chunk in range(4):
        writer.put(chunk)
    writer.close()
    assert sys.getswitchinterval() == interval
    assert sorted(set(sample._default_manager.values_list("big", flat=True))) == [0, 1, 2, 3]
    assert sample._default_manager.count() == 12


def test_an_error_in_the_writer_thread_reaches_the_caller(sample: Any) -> None:
    interval = sys.getswitchinterval()
    writer = _Writer(sample)
    writer.put(-1)
    with pytest.raises(IntegrityError):
        writer.close()
    assert sys.getswitchinterval() == interval
    assert not [t for t in threading.enumerate() if t.name == "lib-test-copy"]
