"""File storages that fail on write, for fault tests (configured through
settings.STORAGES)."""

from django.core.files.storage import FileSystemStorage

from project.storage import AtomicFileSystemStorage


class _DiskFullAfter:
    """File content whose chunks run out of disk after `limit` bytes."""

    def __init__(self, content, limit: int):
        self.content = content
        self.limit = limit

    def chunks(self, chunk_size=None):
        written = 0
        for chunk in self.content.chunks(chunk_size):
            if written + len(chunk) > self.limit:
                yield chunk[: self.limit - written]
                raise OSError(28, "No space left on device")
            written += len(chunk)
            yield chunk
        raise OSError(28, "No space left on device")


class _FailingMixin:
    def __init__(self, *, fail_on: str = "", partial_bytes: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.fail_on = fail_on
        self.partial_bytes = partial_bytes

    def _save(self, name, content):
        if self.fail_on in name:
            content = _DiskFullAfter(content, self.partial_bytes)
        return super()._save(name, content)


class FailingStorage(_FailingMixin, AtomicFileSystemStorage):
    """Quire's local storage, where writing a name containing `fail_on` runs out
    of disk after `partial_bytes` bytes."""


class FailingPlainStorage(_FailingMixin, FileSystemStorage):
    """Django's own FileSystemStorage with the same fault (leaves partial files)."""
