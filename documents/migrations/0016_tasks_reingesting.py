from django.db import migrations, models

# The note services.ingestion wrote while re-ingesting, which recovery used to
# compare against; the boolean field replaces it as the state.
REINGESTING_NOTE = (
    "Re-ingesting: the previous version stays searchable until the new one is ready."
)


def mark_reingesting(apps, schema_editor):
    Document = apps.get_model("documents", "Document")
    Document.objects.filter(status="ready", status_reason=REINGESTING_NOTE).update(
        reingesting=True
    )


def unmark_reingesting(apps, schema_editor):
    Document = apps.get_model("documents", "Document")
    Document.objects.filter(reingesting=True).update(status_reason=REINGESTING_NOTE)


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0015_caller_audit_channels"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="reingesting",
            field=models.BooleanField(
                default=False,
                help_text="A worker is reading it again; the previous version "
                "stays searchable until the new one is ready.",
                verbose_name="re-ingesting",
            ),
        ),
        migrations.RunPython(mark_reingesting, unmark_reingesting),
    ]
