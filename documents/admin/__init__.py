"""The Quire admin: channels, documents (upload, preview), API keys, feedback."""

from documents.admin import channels, documents, feedback, keys  # noqa: F401
