"""Quire's MCP tools; importing this package registers them, in listing order."""

from mcp_endpoint.registry import registry
from mcp_endpoint.tools.documents import GetCitationUrl, GetPages, ListDocuments
from mcp_endpoint.tools.feedback import SubmitFeedback
from mcp_endpoint.tools.research import Fetch, Search
from mcp_endpoint.tools.search import RagSearch, RetrieveTextChunks

for tool in (
    ListDocuments(),
    GetPages(),
    GetCitationUrl(),
    RetrieveTextChunks(),
    RagSearch(),
    SubmitFeedback(),
    Search(),
    Fetch(),
):
    registry.register(tool)
