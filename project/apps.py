from django.contrib.admin.apps import AdminConfig


class QuireAdminConfig(AdminConfig):
    """django.contrib.admin with Quire's admin site (project.admin)."""

    default_site = "project.admin.QuireAdminSite"

    def ready(self) -> None:
        """After every app registered its lists: the framework apps' go, and
        Quire's page for what an operator needs of them comes in."""
        super().ready()
        # Django's idiom for code that needs the app registry ready (models).
        from axes.models import AccessAttempt

        from project.lockouts import LockedOutSignInAdmin

        self.module.site.drop_framework_lists()
        self.module.site.register(AccessAttempt, LockedOutSignInAdmin)
