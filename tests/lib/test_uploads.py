"""upload_spooled: the upload in a temporary file named by its suffix, removed on every exit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from lib.uploads import upload_spooled, upload_write


class BrokenUpload(SimpleUploadedFile):
    """An upload whose second chunk cannot be read (a client gone mid-transfer)."""

    def chunks(self, chunk_size: Any = None) -> Iterator[bytes]:
        yield b"instruction,answer\n"
        raise OSError("connection reset")


def test_the_upload_is_written_under_its_suffix_and_removed_after_the_block() -> None:
    upload = SimpleUploadedFile("Ответы.CSV", b"instruction,answer\na,b\n")
    with upload_spooled(upload) as path:
        assert path.name == "upload.csv"
        assert path.read_bytes() == b"instruction,answer\na,b\n"
    assert not path.exists() and not path.parent.exists()


def test_bytes_take_the_suffix_of_the_name_given() -> None:
    with upload_spooled(b"PK", "refs.XLSX") as path:
        assert path.name == "upload.xlsx" and path.read_bytes() == b"PK"
    assert not path.parent.exists()


def test_the_temporary_file_is_removed_when_the_block_raises() -> None:
    upload = SimpleUploadedFile("a.jsonl", b"{}\n")
    seen: list[Path] = []
    with pytest.raises(RuntimeError, match="refused"), upload_spooled(upload) as path:
        seen.append(path)
        raise RuntimeError("refused")
    assert seen and not seen[0].exists() and not seen[0].parent.exists()


def test_the_temporary_file_is_removed_when_the_upload_cannot_be_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Spooled under tmp_path, to see that nothing of the failed write is left there.
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    broken = BrokenUpload("a.csv", b"")
    with pytest.raises(OSError, match="connection reset"), upload_spooled(broken):
        pass
    assert list(tmp_path.iterdir()) == []


def test_upload_write_writes_every_chunk(tmp_path: Path) -> None:
    body = bytes(range(256)) * 20_000  # several chunks
    upload = SimpleUploadedFile("big.parquet", body)
    upload_write(upload, tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == body
