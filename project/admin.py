"""The admin site as Quire shows it: its name, where "View site" leads, the
order of its lists, and no navigation sidebar (the header links instead, so
lists keep the width of the window)."""

from django.contrib import admin

# The documents app's lists in the order a curator works through them.
MODEL_ORDER = [
    "channel",
    "document",
    "apikey",
    "signingrant",
    "source",
    "sourcesync",
    "feedback",
    "auditevent",
]


class QuireAdminSite(admin.AdminSite):
    site_header = "Quire"
    site_title = "Quire"
    index_title = "Administration"
    site_url = "/"
    enable_nav_sidebar = False

    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        for app in apps:
            if app["app_label"] == "documents":
                app["models"].sort(
                    key=lambda model: (
                        MODEL_ORDER.index(model["object_name"].lower())
                        if model["object_name"].lower() in MODEL_ORDER
                        else len(MODEL_ORDER)
                    )
                )
        # Quire's own lists first, then Django's (users, sign-in records, tasks).
        apps.sort(key=lambda app: app["app_label"] != "documents")
        return apps
