from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    """The staff playground: an in-process client of the MCP endpoint, to try a
    channel's tools in the browser."""

    name = "playground"
    verbose_name = "Playground"
