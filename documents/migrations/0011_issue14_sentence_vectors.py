import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0010_research_tools_and_listing"),
    ]

    operations = [
        migrations.CreateModel(
            name="SentenceVector",
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
                ("digest", models.CharField(max_length=32)),
                ("embedding_model", models.CharField(max_length=200)),
                ("vector", models.BinaryField()),
                (
                    "page",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="documents.page",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("page", "embedding_model", "digest"),
                        name="sentence_vector_unique",
                    )
                ],
            },
        ),
    ]
