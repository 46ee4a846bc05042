"""Resources with a fixed URI, and families of them named by a URI template."""

import inspect
from typing import ClassVar

from documents.models import Channel
from mcp_endpoint.registry.context import CallContext


class ResourceNotFound(Exception):
    """No resource answers this URI."""


class InvalidResourceUri(Exception):
    """The URI matches a template but its parameters are malformed."""


class Resource:
    """A resource with a fixed URI."""

    uri: ClassVar[str]
    name: ClassVar[str]
    title: ClassVar[str] = ""
    mime_type: ClassVar[str] = "application/json"
    # Listed only to clients that render MCP Apps (a `ui://` view).
    for_apps: ClassVar[bool] = False

    def description(self, channel: Channel) -> str:
        return inspect.cleandoc(self.__doc__ or self.name)

    def definition(self, channel: Channel) -> dict:
        return {"uri": self.uri, **self._about(channel)}

    def _about(self, channel: Channel) -> dict:
        about = {
            "name": self.name,
            "description": self.description(channel),
            "mimeType": self.mime_type,
        }
        if self.title:
            about["title"] = self.title
        return about

    async def read(self, uri: str, ctx: CallContext) -> list[dict]:
        """The `contents` list: dicts with `uri`, `mimeType` and `text` or `blob`."""
        raise NotImplementedError


class ResourceTemplate(Resource):
    """A family of resources named by an RFC 6570 URI template."""

    uri_template: ClassVar[str]

    def definition(self, channel: Channel) -> dict:
        return {"uriTemplate": self.uri_template, **self._about(channel)}

    @property
    def prefix(self) -> str:
        """The fixed start of the family's URIs (before the first variable)."""
        return self.uri_template.split("{", 1)[0]

    def matches(self, uri: str) -> bool:
        return uri.startswith(self.prefix)
