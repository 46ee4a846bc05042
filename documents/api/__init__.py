"""The REST API's routes for channels, documents, search, answers and feedback
(mounted by project.api). Views parse, call one service or queryset method and
return a `...Out` schema; errors are the services' own exceptions, turned into
problem details by project.api."""

from documents.api.auth import ApiKeyHeader, BearerKey
from documents.api.routes import router

__all__ = ["ApiKeyHeader", "BearerKey", "router"]
