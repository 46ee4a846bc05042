"""Zip packages (Office files, EPUB) unpacked within a budget of bytes.

A package small on disk may unpack to gigabytes: one member of 900 MB of
repeated XML, or an EPUB whose spine lists one large chapter hundreds of
times. The budget (the parent's `unpacked_budget_bytes`, a multiple of the file's
size with a floor and a cap) counts the bytes the reader unpacks, each time it
unpacks them, so such a file is refused in a moment instead of holding a worker
until the time limit.
"""

import zipfile

from documents.ingestion.reader.protocol import Refusal, Request

BLOCK = 1024 * 1024
MB = 1024 * 1024


class Unpacking:
    """The bytes one reading has unpacked so far, against its budget."""

    def __init__(self, request: Request):
        self.budget = request.unpacked_budget_bytes
        self.used = 0

    def charge(self, size: int) -> None:
        """Count `size` more unpacked bytes; Refusal past the budget."""
        self.used += size
        if self.used > self.budget:
            raise Refusal(
                "too_large",
                "Reading the file would unpack more than "
                f"{_megabytes(self.budget)} from it; it looks like a zip bomb "
                "(a small file that unpacks to far more), so it is not read "
                "(settings UNPACKED_BYTES_PER_INPUT_BYTE, "
                "UNPACKED_MIN_BUDGET_BYTES, UNPACKED_MAX_BYTES).",
            )

    def read(self, archive: zipfile.ZipFile, member: str | zipfile.ZipInfo) -> bytes:
        """A member's bytes, counted block by block as they are unpacked."""
        blocks = []
        with archive.open(member) as handle:
            while block := handle.read(BLOCK):
                self.charge(len(block))
                blocks.append(block)
        return b"".join(blocks)

    def charge_every_member(self, path: str) -> None:
        """Count the unpacked size of every member the central directory lists
        (a name listed twice counts twice), for packages that libraries unpack
        themselves: zipfile never inflates a member past the size its entry
        states, and the Office libraries read each part once. Refuses an
        unreadable zip too."""
        with open_package(path) as archive:
            for info in archive.infolist():
                self.charge(info.file_size)


def open_package(path: str) -> zipfile.ZipFile:
    """The zip package at `path`; Refusal when its structure can't be read."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise Refusal(
            "corrupt",
            f"The file is corrupt or truncated: its zip structure can't be read "
            f"({exc}).",
        ) from None


def _megabytes(size: int) -> str:
    return f"{size / MB:.0f} MB" if size >= MB else f"{size:,} bytes"
