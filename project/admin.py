"""The admin site as Quire shows it: its name, where "View site" leads, the
order of its lists, no navigation sidebar (the header links instead, so lists
keep the width of the window), titles in plain words, and only the lists a
curator or an operator works with.

The third-party apps (django-axes, django-oauth-toolkit, django-tasks-db)
register their own lists on the default site; those show framework internals
(tokens, grants beside Quire's sign-in grants, task rows), so the site drops
them once every app has registered (project.apps) and shows what an operator
needs of them as Quire pages: the OAuth clients inside the sign-in grants,
lockouts as "Locked-out sign-ins" (project.lockouts)."""

import json

from django.contrib import admin
from django.contrib.admin.helpers import InlineAdminFormSet
from django.utils.text import capfirst
from django.utils.translation import gettext

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
# Lockouts are listed with the users they lock out, in a section named for both.
MERGED_INTO = {"axes": "auth"}
SECTION_NAMES = {"auth": "Users and sign-ins"}
# Apps whose lists are framework internals: never shown as they register them.
FRAMEWORK_APPS = frozenset({"axes", "oauth2_provider", "django_tasks_database"})


def list_title(model_admin: admin.ModelAdmin) -> str:
    """What a list is called: its admin's `list_title`, else the model's plural."""
    return getattr(model_admin, "list_title", None) or capfirst(
        model_admin.opts.verbose_name_plural
    )


class PlainInlineAdminFormSet(InlineAdminFormSet):
    """An inline whose button says "Add another metadata field" (Django
    capitalises the name mid-sentence)."""

    def inline_formset_data(self) -> str:
        data = json.loads(super().inline_formset_data())
        data["options"]["addText"] = gettext("Add another %(verbose_name)s") % {
            "verbose_name": self.opts.verbose_name
        }
        return json.dumps(data)


class PlainTitles:
    """Titles a person reads: "Documents" over a list, "Document: Manual rev 3"
    over a row (Django's "Select document to change" and "Change document"
    describe the framework's view, and are wrong on a read-only page).

    A ModelAdmin may set `list_title` to name its list otherwise (here and on
    the index)."""

    def changelist_view(self, request, extra_context=None):
        title = list_title(self)
        return super().changelist_view(
            request, {"title": title, **(extra_context or {})}
        )

    def render_change_form(
        self, request, context, add=False, change=False, form_url="", obj=None
    ):
        if add:
            context["title"] = f"New {self.opts.verbose_name}"
        elif obj is not None:
            context["title"] = f"{capfirst(self.opts.verbose_name)}: {obj}"
            context["subtitle"] = None
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_inline_formsets(self, request, formsets, inline_instances, obj=None):
        helpers = super().get_inline_formsets(request, formsets, inline_instances, obj)
        for helper in helpers:
            # The same object, with the one method that words the button.
            helper.__class__ = PlainInlineAdminFormSet
        return helpers


class QuireAdminSite(admin.AdminSite):
    site_header = "Quire"
    site_title = "Quire"
    index_title = "Administration"
    site_url = "/"
    enable_nav_sidebar = False

    def register(self, model_or_iterable, admin_class=None, **options):
        """Every list, Quire's and Django's (users, groups), with plain titles."""
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, PlainTitles):
            admin_class = type(
                admin_class.__name__,
                (PlainTitles, admin_class),
                {"__module__": admin_class.__module__},
            )
        super().register(model_or_iterable, admin_class, **options)

    def drop_framework_lists(self) -> None:
        """Unregister what the framework apps registered (FRAMEWORK_APPS)."""
        for model in list(self._registry):
            if model._meta.app_label in FRAMEWORK_APPS:
                self.unregister(model)

    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        by_label = {app["app_label"]: app for app in apps}
        for label, into in MERGED_INTO.items():
            if label in by_label and into in by_label:
                by_label[into]["models"] += by_label.pop(label)["models"]
        apps = list(by_label.values())
        for app in apps:
            app["name"] = SECTION_NAMES.get(app["app_label"], app["name"])
            if app["app_label"] == "documents":
                app["models"].sort(
                    key=lambda model: (
                        MODEL_ORDER.index(model["object_name"].lower())
                        if model["object_name"].lower() in MODEL_ORDER
                        else len(MODEL_ORDER)
                    )
                )
            for model in app["models"]:
                model["name"] = list_title(self._registry[model["model"]])
        # Quire's own lists first, then the operator's (sign-ins, users).
        apps.sort(key=lambda app: app["app_label"] != "documents")
        return apps
