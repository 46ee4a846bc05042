from django.apps import AppConfig


class SigninConfig(AppConfig):
    """Sign-in for remote MCP clients: Quire as its own OAuth 2.1 authorization
    server (consent page, client registration, grants in the admin)."""

    name = "signin"
    verbose_name = "Sign-in"

    def ready(self) -> None:
        from signin import signals  # noqa: F401  (connects the receivers)
