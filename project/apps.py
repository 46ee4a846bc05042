from django.contrib.admin.apps import AdminConfig


class QuireAdminConfig(AdminConfig):
    """django.contrib.admin with Quire's admin site (project.admin)."""

    default_site = "project.admin.QuireAdminSite"
