from django.apps import AppConfig


class McpEndpointConfig(AppConfig):
    name = "mcp_endpoint"
    verbose_name = "MCP endpoint"

    def ready(self) -> None:
        # Registers Quire's tools and resources.
        from mcp_endpoint import resources, tools  # noqa: F401
