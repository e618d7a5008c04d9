"""Uploaded files on disk: written chunk by chunk to a path, or spooled to a temporary file that
is deleted on leaving its block.

The readers of every import open a path (Parquet and XLSX need to seek, CSV and JSON lines are
streamed), so an upload, held by Django in memory or in its own temporary file, is first written
out. The temporary file keeps the upload's lower-cased suffix: the readers choose the format by
it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.files.uploadedfile import UploadedFile


def upload_write(upload: UploadedFile, target: Path) -> None:
    """Write the upload to `target` chunk by chunk (a large upload is never held whole)."""
    with target.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)


@contextmanager
def upload_spooled(upload: UploadedFile | bytes, name: str | None = None) -> Iterator[Path]:
    """The upload (or bytes held in memory) in a temporary file, removed with its folder on
    every exit from the block, an exception included.

    The file is "upload" plus the lower-cased suffix of `name` (by default the upload's own
    name), so a reader can tell the format; the user's file name is not used as a path.
    """
    if name is None:
        name = (upload.name or "") if isinstance(upload, UploadedFile) else ""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("upload" + Path(name).suffix.lower())
        if isinstance(upload, bytes):
            path.write_bytes(upload)
        else:
            upload_write(upload, path)
        yield path
