from django.apps import AppConfig


class McpEndpointConfig(AppConfig):
    name = "mcp_endpoint"
    verbose_name = "MCP endpoint"

    def ready(self) -> None:
        # Registers Quire's tools and resources (the viewer's after the tools).
        from mcp_endpoint import resources, tools, viewer  # noqa: F401
