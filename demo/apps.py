from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo channel (loader, documents) and the `runquire` launcher that
    `make run` starts."""

    name = "demo"
    verbose_name = "Demo"
