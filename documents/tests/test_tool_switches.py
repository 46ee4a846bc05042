"""Tool switches: the catalogue the registry fills, and the migration that moved
each channel's BooleanField per tool into `Channel.tool_switches`."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from documents.tool_switches import ToolSwitch, ToolSwitches

BEFORE = [("documents", "0012_issue12_labels_sent_with_chunks")]
AFTER = [("documents", "0013_tools_switches")]


def test_a_switch_is_offered_once_per_name_and_shared_by_its_tools():
    """Two tools may share one switch; a different switch under the same name
    is refused; a switch goes when its last tool does."""
    switches = ToolSwitches()
    research = ToolSwitch(name="research", label="search and fetch", default=False)
    switches.offer(research, tool="search")
    switches.offer(research, tool="fetch")
    assert switches.tools(research) == ("search", "fetch")
    with pytest.raises(ValueError, match="research"):
        switches.offer(ToolSwitch(name="research", label="other"), tool="x")
    switches.withdraw(tool="search")
    assert switches.get("research") == research
    switches.withdraw(tool="fetch")
    assert list(switches) == []


@pytest.mark.django_db(transaction=True)
def test_the_migration_carries_each_channels_choices_over():
    """Channels keep the tools they had switched on and off."""
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps.get_model("documents", "Channel")
    old.objects.create(slug="quiet", name="Quiet", tool_rag_search=False)
    old.objects.create(slug="research", name="Research", tool_research=True)
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("documents", "Channel")
    quiet = new.objects.get(slug="quiet").tool_switches
    research = new.objects.get(slug="research").tool_switches
    assert quiet["rag_search"] is False and quiet["research"] is False
    assert quiet["list_documents"] is True
    assert research["research"] is True and research["rag_search"] is True
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    back = executor.loader.project_state(BEFORE).apps.get_model("documents", "Channel")
    assert back.objects.get(slug="quiet").tool_rag_search is False
    assert back.objects.get(slug="research").tool_research is True
    MigrationExecutor(connection).migrate(
        MigrationExecutor(connection).loader.graph.leaf_nodes()
    )
