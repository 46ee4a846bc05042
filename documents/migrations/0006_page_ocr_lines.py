from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0005_rrf_k_default"),
    ]

    operations = [
        migrations.AddField(
            model_name="page",
            name="ocr",
            field=models.BooleanField(
                default=False,
                help_text="The text was read from the page image by OCR.",
            ),
        ),
        migrations.AddField(
            model_name="page",
            name="lines",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
