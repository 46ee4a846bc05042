"""Local file storage that never leaves a half-written file behind.

Django's FileSystemStorage writes straight to the final name, so a write that
fails midway (disk full, I/O error, a killed process) leaves a truncated file
that no row refers to. This one writes to a unique temporary name beside the
target, links it into place only once complete, and removes the temporary file
whatever happens.
"""

import os
import secrets

from django.core.files.storage import FileSystemStorage


class AtomicFileSystemStorage(FileSystemStorage):
    """FileSystemStorage with all-or-nothing writes (see the module docstring)."""

    def _save(self, name, content):
        temporary = f"{name}.part-{secrets.token_hex(6)}"
        try:
            temporary = super()._save(temporary, content)
            while True:
                try:
                    # link, unlike rename, refuses to replace an existing file.
                    os.link(self.path(temporary), self.path(name))
                    break
                except FileExistsError:
                    name = self.get_available_name(name)
        finally:
            try:
                os.unlink(self.path(temporary))
            except FileNotFoundError:
                pass
        return os.path.relpath(self.path(name), self.location).replace("\\", "/")
