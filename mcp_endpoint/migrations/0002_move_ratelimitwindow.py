from django.db import migrations


class Migration(migrations.Migration):
    """RateLimitWindow moves to documents (documents.0007), table and rows kept."""

    dependencies = [
        ("mcp_endpoint", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="RateLimitWindow")],
            database_operations=[],
        ),
    ]
