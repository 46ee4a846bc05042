"""The Quire admin: channels, documents (upload, preview), API keys, feedback,
the audit trail."""

from documents.admin import audit, channels, documents, feedback, keys  # noqa: F401
