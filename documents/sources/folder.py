"""A folder on the server, only under the roots the operator declares
(``SOURCE_FOLDERS``): a configuration names a path, and the path is resolved,
symlinks included, before it is compared with the roots."""

from __future__ import annotations

import mimetypes
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from documents.sources.base import (
    SIDECAR_MAX_BYTES,
    SIDECAR_SUFFIX,
    BoundedReader,
    Entry,
    EntryGone,
    EntryTooLarge,
    Skipped,
    Source,
    SourceConfigError,
    SourceError,
    parse_sidecar,
    too_large,
)


def resolve_folder(location: str, roots: list[Path]) -> Path:
    """The real path of ``location`` if it is an existing folder under one of
    ``roots``; SourceConfigError otherwise, so a form can never name another
    path (``..``, a symlink out, a relative path)."""
    if not roots:
        raise SourceConfigError(
            "No folders may be synced: the operator has declared no SOURCE_FOLDERS."
        )
    if not os.path.isabs(location):
        raise SourceConfigError(f"{location!r} is not an absolute path.")
    try:
        path = Path(location).resolve(strict=True)
    except (OSError, RuntimeError):
        raise SourceConfigError(f"{location} does not exist.") from None
    if not path.is_dir():
        raise SourceConfigError(f"{location} is not a folder.")
    for root in roots:
        real_root = root.resolve()
        if path == real_root or path.is_relative_to(real_root):
            return path
    raise SourceConfigError(
        f"{location} is not under a folder the operator declared in "
        f"SOURCE_FOLDERS ({', '.join(str(r) for r in roots)})."
    )


class FolderSource(Source):
    """Files under one folder; key = the path relative to it (``/``-joined),
    version = mtime_ns and size of the file and of its sidecar."""

    kind = "folder"

    def __init__(self, root: Path, *, max_bytes: int, recursive: bool = True):
        self.root = root
        self.max_bytes = max_bytes
        self.recursive = recursive

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, max_bytes: int) -> FolderSource:
        location = config.get("path")
        if not isinstance(location, str) or not location:
            raise SourceConfigError("A folder source needs a path.")
        roots = [Path(p) for p in settings.SOURCE_FOLDERS]
        return cls(
            resolve_folder(location, roots),
            max_bytes=max_bytes,
            recursive=bool(config.get("recursive", True)),
        )

    @classmethod
    def config_for(cls, location: str, **options: Any) -> dict[str, Any]:
        return {"path": location.strip()}

    @staticmethod
    def location_of(config: Mapping[str, Any]) -> str:
        return str(config.get("path", ""))

    def list(self, known: Mapping[str, str] | None = None) -> Iterator[Entry | Skipped]:
        root_id = self._root_identity()
        pending = [self.root]
        while pending:
            folder = pending.pop()
            try:
                children = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as exc:
                raise self._cut_short(folder, exc) from None
            names = {child.name for child in children}
            for child in children:
                if child.name.startswith("."):
                    continue
                try:
                    if child.is_dir(follow_symlinks=False):
                        if self.recursive:
                            pending.append(Path(child.path))
                        continue
                except OSError as exc:
                    raise self._cut_short(folder, exc) from None
                if child.name.endswith(SIDECAR_SUFFIX):
                    continue
                item = self._entry(
                    Path(child.path), child.name + SIDECAR_SUFFIX in names
                )
                if item is not None:
                    yield item
        # A snapshot of a folder that vanished or was swapped while it was read
        # is not "everything": the caller would take the rest as removed.
        if self._root_identity() != root_id:
            raise SourceError(
                f"The folder {self.root} disappeared or was replaced during the "
                "listing; the listing was cut short."
            )

    def same_content(self, old_version: str, new_version: str) -> bool:
        """The file's own mtime and size unchanged: only its sidecar moved."""
        old_file = old_version.partition("+")[0]
        return bool(old_file) and old_file == new_version.partition("+")[0]

    def open(self, entry: Entry) -> IO[bytes]:
        path = self._path(entry.key)
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise EntryGone(f"{entry.key} was removed since the listing.") from None
        if not real.is_relative_to(self.root):
            raise SourceError(f"{entry.key} now points outside {self.root}.")
        try:
            # Non-blocking, so a file swapped for a FIFO since the listing is
            # refused below instead of hanging the open.
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise EntryGone(f"{entry.key} was removed since the listing.") from None
        except OSError as exc:
            raise SourceError(f"{entry.key} cannot be read ({exc.strerror}).") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise SourceError(f"{entry.key} is no longer a regular file.")
        if info.st_size > self.max_bytes:
            os.close(fd)
            raise EntryTooLarge(too_large(entry.key, self.max_bytes))
        handle = os.fdopen(fd, "rb")
        return BoundedReader(handle, limit=self.max_bytes, name=entry.key)

    def _entry(self, path: Path, has_sidecar: bool) -> Entry | Skipped | None:
        key = path.relative_to(self.root).as_posix()
        try:
            real = path.resolve(strict=True)
            info = real.stat()
        except FileNotFoundError:
            return None
        except (OSError, RuntimeError) as exc:
            return Skipped(key, f"{key} cannot be read ({exc}).")
        if not real.is_relative_to(self.root):
            return Skipped(key, f"{key} is a link to a file outside {self.root}.")
        if not stat.S_ISREG(info.st_mode):
            return None
        version = f"{info.st_mtime_ns}-{info.st_size}"
        metadata: dict[str, Any] = {"path_segments": list(Path(key).parts[:-1])}
        if has_sidecar:
            sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
            try:
                side_info = sidecar.stat()
                data = _read_small(sidecar)
                metadata.update(parse_sidecar(data, key + SIDECAR_SUFFIX))
            except FileNotFoundError:
                pass
            except SourceError as exc:
                return Skipped(key, exc.reason)
            except OSError as exc:
                return Skipped(key, f"{key}{SIDECAR_SUFFIX} cannot be read ({exc}).")
            else:
                version += f"+{side_info.st_mtime_ns}-{side_info.st_size}"
        return Entry(
            key=key,
            version=version,
            name=path.name,
            size=info.st_size,
            content_type=mimetypes.guess_type(path.name)[0],
            metadata=metadata,
        )

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*key.split("/"))

    def _root_identity(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.root)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def _cut_short(self, folder: Path, exc: OSError) -> SourceError:
        if self._root_identity() is None:
            what = f"The folder {self.root} disappeared during the listing"
        else:
            what = f"{folder} could not be read ({exc.strerror})"
        return SourceError(f"{what}; the listing was cut short.")


def _read_small(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(SIDECAR_MAX_BYTES + 1)
