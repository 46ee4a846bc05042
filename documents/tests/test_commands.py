import json
from io import StringIO

import pytest
from django.core.files import File
from django.core.management import CommandError, call_command
from django.utils import timezone

from demo.loader import DEFINITION
from documents.access import COMMAND_LINE, admit
from documents.models import ApiKey, Channel, Document
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_channel_from_options(db):
    """Fields given as name:type[:flags] and --newest-sort become the channel's
    field rows and sort."""
    out, _ = run(
        "create_channel",
        "handbook",
        "--name",
        "Staff handbook",
        "--field",
        "kind:string:filterable,retrieve",
        "--field",
        "published:date:filterable,required",
        "--field",
        "topics:string_list",
        "--newest-sort",
        "published",
    )
    channel = Channel.objects.get(slug="handbook")
    assert channel.name == "Staff handbook"
    assert channel.newest_sort == [{"field": "published", "direction": "desc"}]
    rows = list(
        channel.metadata_fields.values_list(
            "name", "type", "filterable", "required", "sent_with_chunks"
        )
    )
    assert rows == [
        ("kind", "string", True, False, True),
        ("published", "date", True, True, False),
        ("topics", "string_list", False, False, False),
    ]
    assert "/mcp/handbook" in out


def test_create_channel_from_a_definition_file(db):
    """--definition reads the demo's JSON format (its documents are ignored)."""
    run("create_channel", "library", "--definition", str(DEFINITION))
    channel = Channel.objects.get(slug="library")
    assert channel.metadata_fields.filter(name="published", type="date").exists()
    assert not channel.documents.exists()


def test_create_channel_takes_the_older_names_of_sent_with_chunks(db, tmp_path):
    """The flag is sent_with_chunks; `retrieve` (this command's older flag) and
    enable_in_mcp_retrieve_chunks (the reference's name, in a definition) still
    set it."""
    run("create_channel", "flags", "--field", "team:string:sent_with_chunks")
    definition = tmp_path / "channel.json"
    definition.write_text(
        json.dumps(
            {
                "slug": "reference",
                "name": "Reference",
                "fields": [
                    {
                        "name": "team",
                        "type": "string",
                        "enable_in_mcp_retrieve_chunks": True,
                    }
                ],
            }
        )
    )
    run("create_channel", "--definition", str(definition))
    for slug in ("flags", "reference"):
        field = Channel.objects.get(slug=slug).metadata_fields.get()
        assert field.sent_with_chunks


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bad", "--field", "when:datetime"], "unknown type"),
        (["bad", "--field", "when"], "name:type"),
        (["bad", "--field", "when:date:sortable"], "unknown flag"),
        (["bad", "--newest-sort", "when:up"], "field:desc"),
        (["Not A Slug"], "slug"),
        ([], "Give a slug"),
    ],
)
def test_create_channel_explains_bad_arguments(db, args, message):
    """Bad field specs, sorts and slugs stop the command with a clear message and
    create nothing."""
    with pytest.raises(CommandError, match=message):
        run("create_channel", *args)
    assert not Channel.objects.exists()


def test_create_channel_refuses_an_existing_slug(make_channel):
    """A second channel with the same slug is refused."""
    make_channel("handbook")
    with pytest.raises(CommandError, match="exists"):
        run("create_channel", "handbook")


def test_create_api_key_prints_a_working_key_once(make_channel):
    """The key goes to stdout alone; it opens the named channels and only those."""
    handbook, wiki, other = (
        make_channel("handbook"),
        make_channel("wiki"),
        make_channel("other"),
    )
    out, err = run(
        "create_api_key", "agent", "--channel", "handbook", "--channel", "wiki"
    )
    raw_key = out.strip()
    assert raw_key.startswith("qk_") and "\n" not in raw_key
    assert raw_key not in err
    api_key = ApiKey.objects.get()
    assert api_key.prefix in err
    assert admit(handbook.slug, raw_key, via="test").api_key == api_key
    assert admit(wiki.slug, raw_key, via="test").api_key == api_key
    assert set(api_key.channels.all()) == {handbook, wiki}
    assert other not in api_key.channels.all()
    assert api_key.expires_at is None


def test_create_api_key_is_read_only_unless_write_is_asked_for(make_channel):
    """Keys are read-only by default; --write adds the write scope and says so."""
    make_channel("handbook")
    _, err = run("create_api_key", "agent", "--channel", "handbook")
    assert "read-only" in err
    _, err = run("create_api_key", "uploader", "--channel", "handbook", "--write")
    assert "read and write" in err
    scopes = dict(ApiKey.objects.values_list("name", "scopes"))
    assert scopes == {"agent": ["read"], "uploader": ["read", "write"]}


def test_create_api_key_with_an_expiry(make_channel):
    """--expires-in-days sets the expiry that many days ahead."""
    make_channel("handbook")
    run("create_api_key", "temp", "--channel", "handbook", "--expires-in-days", "7")
    days = (ApiKey.objects.get().expires_at - timezone.now()).total_seconds() / 86400
    assert 6.99 < days <= 7


def test_create_api_key_refuses_unknown_channels(make_channel):
    """An unknown slug is an error naming the known channels; no key is made."""
    make_channel("handbook")
    with pytest.raises(CommandError, match="Unknown channel.*nope.*handbook"):
        run("create_api_key", "agent", "--channel", "nope")
    assert not ApiKey.objects.exists()


def test_create_channel_takes_the_older_tool_options(db, tmp_path):
    """A definition written when channels had a field per tool (tool_research,
    tool_rag_search) still sets those switches."""
    definition = tmp_path / "channel.json"
    definition.write_text(
        json.dumps(
            {
                "slug": "older",
                "name": "Older",
                "tool_research": True,
                "tool_rag_search": False,
                "tool_switches": {"get_pages": False},
            }
        )
    )
    run("create_channel", "--definition", str(definition))
    channel = Channel.objects.get(slug="older")
    assert channel.tool_switches == {
        "get_pages": False,
        "research": True,
        "rag_search": False,
    }
    assert set(channel.enabled_tools()) >= {"search", "fetch", "list_documents"}
    assert not {"rag_search", "get_pages"} & set(channel.enabled_tools())


def test_replace_document_gives_a_document_its_next_revision(
    make_channel, fake_embedder, tmp_path
):
    """replace_document reads the new file now and says which revision the
    document serves; the same file again is unchanged; bad arguments are
    CommandErrors."""
    channel = make_channel("manuals")
    first = tmp_path / "manual.md"
    first.write_text("# Manual\n\nRevision one.")
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=File(first.open("rb"), name="manual.md"),
        enqueue=False,
    )
    ingest_document(document_id=document.pk)
    second = tmp_path / "manual-2.md"
    second.write_text("# Manual\n\nRevision two.")
    out, _ = run("replace_document", "manuals", str(document.pk), str(second))
    assert out.strip() == f"Document {document.pk} is at revision 2 (ready)."
    assert Document.objects.get(pk=document.pk).chunks.get().text.endswith("two.")
    out, _ = run("replace_document", "manuals", str(document.pk), str(second))
    assert out.startswith("Unchanged:")
    with pytest.raises(CommandError, match="no document"):
        run("replace_document", "manuals", "999999", str(second))
    with pytest.raises(CommandError, match="not a file"):
        run("replace_document", "manuals", str(document.pk), str(tmp_path / "no"))
