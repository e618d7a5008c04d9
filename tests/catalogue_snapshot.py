"""The catalogue (taxonomy and default panels) kept across the flushes of the test database.

A transactional test ends with a flush of every table, and a few modules flush on their own; the
tests after it would each reload the catalogue (seconds) inside their rolled-back transaction.
Instead the rows the catalogue loader wrote are copied out once per test database (PostgreSQL's
COPY, binary) and copied back right after every flush (the flush command's post_migrate signal),
in milliseconds. Content types and permissions are left to Django, which recreates them after a
flush with new ids; no catalogue table refers to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.core.management.color import no_style
from django.db import connections, transaction
from django.db.models import Model
from django.db.models.signals import post_migrate

from panels.defaults import ensure_default_panels
from taxonomy.models import Criterion
from taxonomy.services import load_pollux

# Recreated by Django itself after a flush (contenttypes' and auth's post_migrate handlers).
_DJANGO_OWN = {"django_content_type", "auth_permission"}


def load_catalogue() -> None:
    """The slow path: the real loader (idempotent)."""
    if not Criterion.objects.exists():
        load_pollux()
    ensure_default_panels()


@dataclass
class CatalogueSnapshot:
    using: str = "default"
    tables: dict[str, bytes] = field(default_factory=dict)
    models: list[type[Model]] = field(default_factory=list)

    def take(self) -> None:
        """Copy out every table that holds rows now (call it on a database holding only the
        catalogue: right after it was created and loaded)."""
        connection = connections[self.using]
        self.tables.clear()
        self.models.clear()
        with connection.cursor() as cursor:
            for model in apps.get_models(include_auto_created=True):
                table = model._meta.db_table
                if not model._meta.managed or model._meta.proxy or table in _DJANGO_OWN:
                    continue
                cursor.execute(f'SELECT EXISTS (SELECT 1 FROM "{table}")')  # noqa: S608
                if not cursor.fetchone()[0]:
                    continue
                with cursor.cursor.copy(f'COPY "{table}" TO STDOUT (FORMAT BINARY)') as copy:
                    self.tables[table] = b"".join(bytes(block) for block in copy)
                self.models.append(model)

    def restore(self) -> None:
        """Copy the rows back into the emptied tables, and move the id sequences past them."""
        connection = connections[self.using]
        with transaction.atomic(using=self.using), connection.cursor() as cursor:
            # Django's foreign keys on PostgreSQL are DEFERRABLE INITIALLY DEFERRED: the tables
            # may be filled in any order within the transaction.
            for table, data in self.tables.items():
                with cursor.cursor.copy(f'COPY "{table}" FROM STDIN (FORMAT BINARY)') as copy:
                    copy.write(data)
            for statement in connection.ops.sequence_reset_sql(no_style(), self.models):
                cursor.execute(statement)


_snapshot = CatalogueSnapshot()


def _after_flush(sender: Any, using: str = "default", **kwargs: Any) -> None:
    if using != _snapshot.using:
        return
    if Criterion.objects.using(using).exists():
        return  # not a flush (a migrate of a database that keeps its rows)
    if _snapshot.tables and connections[using].vendor == "postgresql":
        _snapshot.restore()
    else:
        load_catalogue()


def keep_catalogue_across_flushes() -> None:
    """Load the catalogue into the fresh test database, copy it out, and restore it after each
    flush from now on."""
    load_catalogue()
    if connections[_snapshot.using].vendor == "postgresql":
        _snapshot.take()
    # Once per flush: post_migrate is sent for every app, the taxonomy app's is enough.
    post_migrate.connect(
        _after_flush,
        sender=apps.get_app_config("taxonomy"),
        weak=False,
        dispatch_uid="tests.catalogue_snapshot",
    )
