"""One JSON field of tool switches replaces a BooleanField per tool, so a tool
brings its switch with it; each channel's choices carry over."""

from django.db import migrations, models

# The switches as the BooleanFields named them (tool_<name>), frozen here: this
# is history, not the registry.
SWITCHES = (
    "list_documents",
    "get_pages",
    "get_citation_url",
    "retrieve_text_chunks",
    "rag_search",
    "submit_feedback",
    "research",
)


def fields_to_switches(apps, schema_editor):
    Channel = apps.get_model("documents", "Channel")
    for channel in Channel.objects.all():
        channel.tool_switches = {
            name: getattr(channel, f"tool_{name}") for name in SWITCHES
        }
        channel.save(update_fields=["tool_switches"])


def switches_to_fields(apps, schema_editor):
    Channel = apps.get_model("documents", "Channel")
    for channel in Channel.objects.all():
        chosen = channel.tool_switches or {}
        for name in SWITCHES:
            setattr(channel, f"tool_{name}", chosen.get(name, name != "research"))
        channel.save(update_fields=[f"tool_{name}" for name in SWITCHES])


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0012_issue12_labels_sent_with_chunks"),
    ]

    operations = [
        migrations.AddField(
            model_name="channel",
            name="tool_switches",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The tools this channel's MCP server offers.",
                verbose_name="tools",
            ),
        ),
        migrations.RunPython(fields_to_switches, switches_to_fields),
        *(
            migrations.RemoveField(model_name="channel", name=f"tool_{name}")
            for name in SWITCHES
        ),
    ]
