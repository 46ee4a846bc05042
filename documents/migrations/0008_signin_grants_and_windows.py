import django.contrib.postgres.fields
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import documents.models


def forget_windows(apps, schema_editor):
    # Rate-limit windows are counters for the current minute or hour: starting
    # them afresh loses nothing worth migrating.
    apps.get_model("documents", "RateLimitWindow").objects.all().delete()


class Migration(migrations.Migration):
    """Sign-in (issue 15): rate-limit windows keyed by credential ("key:<id>",
    "grant:<id>") instead of API key, per-address windows with a bucket
    (failed authentications, client registrations), and sign-in grants."""

    dependencies = [
        ("documents", "0007_trust"),
        ("oauth2_provider", "0022_refreshtoken_token_family_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(forget_windows, migrations.RunPython.noop),
        migrations.RemoveConstraint(
            model_name="ratelimitwindow", name="ratelimit_unique_window"
        ),
        migrations.RemoveField(model_name="ratelimitwindow", name="api_key"),
        migrations.AddField(
            model_name="ratelimitwindow",
            name="subject",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name="ratelimitwindow",
            constraint=models.UniqueConstraint(
                fields=("subject", "bucket", "window_start"),
                name="ratelimit_unique_window",
            ),
        ),
        migrations.RenameModel(old_name="FailureWindow", new_name="AddressWindow"),
        migrations.RemoveConstraint(
            model_name="addresswindow", name="failure_unique_window"
        ),
        migrations.AddField(
            model_name="addresswindow",
            name="bucket",
            field=models.CharField(
                choices=[
                    ("failures", "Failed authentications per minute"),
                    ("registrations", "OAuth client registrations per hour"),
                ],
                default="failures",
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="addresswindow",
            constraint=models.UniqueConstraint(
                fields=("address", "bucket", "window_start"),
                name="address_window_unique",
            ),
        ),
        migrations.CreateModel(
            name="SignInGrant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True,
                        primary_key=True,
                        serialize=False,
                        verbose_name="ID",
                    ),
                ),
                ("resource", models.URLField(max_length=500)),
                (
                    "scopes",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=16),
                        default=documents.models.default_scopes,
                        size=None,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "application",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="oauth2_provider.application",
                    ),
                ),
                (
                    "channel",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sign_in_grants",
                        to="documents.channel",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "sign-in grant",
                "ordering": ["-created_at"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("revoked_at__isnull", True)),
                        fields=("user", "application", "channel"),
                        name="signin_grant_one_active",
                    )
                ],
            },
        ),
    ]
