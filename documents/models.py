"""Channels, their metadata fields, documents, pages, chunks, API keys, feedback,
the audit trail and the request counters behind the limits."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, SparseVectorField, VectorField

from documents.querysets import (
    AuditEventQuerySet,
    ChunkQuerySet,
    DocumentQuerySet,
    WorkerHeartbeatQuerySet,
)
from documents.tool_switches import ToolSwitch, switch_catalogue

EMBEDDING_DIMENSIONS = 384
# Every channel's MCP server answers at MCP_PATH_PREFIX + slug (mcp_endpoint.urls).
MCP_PATH_PREFIX = "/mcp/"
# Keyword terms are hashed into this many sparse dimensions (documents.search.terms).
TERM_DIMENSIONS = 2**24


class Channel(models.Model):
    """One document collection plus its configuration; served at /mcp/<slug>."""

    class RetrieverMode(models.TextChoices):
        HYBRID = "hybrid", "Hybrid: keyword and vector, fused"
        KEYWORD = "keyword", "Keyword only (BM25)"
        VECTOR = "vector", "Vector only (embeddings)"

    class GeneratorKind(models.TextChoices):
        EXTRACTIVE = "extractive", "Extractive (offline, quotes the passages)"
        CHAT = "chat", "Chat model (an endpoint the operator declared)"

    slug = models.SlugField(
        max_length=64,
        unique=True,
        help_text="The channel's MCP path is /mcp/ followed by the slug: letters, "
        "digits, hyphens and underscores.",
    )
    name = models.CharField(
        max_length=200,
        help_text="MCP clients see the server's title as “Quire:” and this name.",
    )
    description = models.TextField(
        blank=True,
        help_text="What the channel holds. Part of the server instructions "
        "when those are left empty.",
    )
    mcp_instructions = models.TextField(
        "server instructions",
        blank=True,
        help_text="Sent to MCP clients when they connect: what the collection "
        "holds and how to search and cite it. Empty: Quire writes them from the "
        "name and description.",
    )

    retriever_mode = models.CharField(
        "mode",
        max_length=16,
        choices=RetrieverMode.choices,
        default=RetrieverMode.HYBRID,
    )
    retriever_candidates = models.PositiveIntegerField(
        "candidates per leg",
        default=100,
        validators=[MinValueValidator(1)],
        help_text="How many chunks the keyword and the vector search each find "
        "before fusion.",
    )
    retriever_top_k = models.PositiveIntegerField(
        "chunks returned",
        default=8,
        validators=[MinValueValidator(1)],
        help_text="How many chunks a search returns when the client asks for no "
        "number (a client may ask for up to MCP_MAX_RESULTS).",
    )
    # 20 rather than the RRF paper's 60: with two legs of ~100 candidates, a smaller
    # k rewards agreement near the top (measured on SciFact: docs/performance.md).
    retriever_rrf_k = models.PositiveIntegerField(
        "fusion constant (RRF k)",
        default=20,
        help_text="The k of reciprocal rank fusion: a smaller k rewards chunks "
        "both searches rank near the top.",
    )

    generator_kind = models.CharField(
        "written by",
        max_length=16,
        choices=GeneratorKind.choices,
        default=GeneratorKind.EXTRACTIVE,
    )
    # One of the endpoints the operator declared (settings.CHAT_MODEL_ENDPOINTS):
    # a channel names an endpoint, never a URL or the variable holding its key.
    generator_endpoint = models.CharField(
        "chat-model endpoint",
        max_length=64,
        blank=True,
        help_text="The chat-model endpoint, from those the operator declared.",
    )
    generator_model = models.CharField(
        "chat model",
        max_length=200,
        blank=True,
        help_text="A model the endpoint offers.",
    )
    generator_temperature = models.FloatField("temperature", default=0.0)
    generator_timeout = models.FloatField(
        "timeout (seconds)",
        default=30.0,
        help_text="How long the chat model may take to answer (at most "
        "CHAT_MODEL_TIMEOUT).",
    )

    newest_sort = models.JSONField(
        "newest first by",
        default=list,
        blank=True,
        help_text="The fields that sort documents newest first in "
        "list_documents; later ones break ties. None: documents are listed in "
        "upload order and list_documents has no newest_first argument.",
    )
    filterable_fields = models.JSONField(
        "filters offered to MCP clients",
        default=list,
        blank=True,
        help_text="Of the fields marked filterable, the ones MCP clients may "
        "filter on. None ticked: every filterable field.",
    )
    max_pages_per_call = models.PositiveIntegerField(
        "page cap of get_pages",
        default=10,
        validators=[MinValueValidator(1)],
        help_text="Most pages one get_pages call returns (never more than "
        "MCP_MAX_PAGES_PER_CALL).",
    )
    # {switch name: on}; a switch the channel never chose keeps its tool's
    # default. The switches themselves come with the tools (switch_catalogue).
    tool_switches = models.JSONField(
        "tools",
        default=dict,
        blank=True,
        help_text="The tools this channel's MCP server offers.",
    )
    # Whether the channel appears in the public discovery documents
    # (/.well-known/ai-catalog.json, its server card).
    listed = models.BooleanField(
        default=False,
        verbose_name="listed for discovery",
        help_text="Publish this channel's name and MCP URL in the discovery "
        "documents (AI catalog, server card). Unlisted channels stay unnamed.",
    )

    # Staff access: curators see and edit the channel and its documents in the
    # admin and the playground; readers may use the playground and grant read
    # access. Superusers see every channel.
    curators = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="curated_channels",
        help_text="Staff users who curate this channel.",
    )
    curator_groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="curated_channels",
        help_text="Groups whose staff members curate this channel.",
    )
    readers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="read_channels",
        help_text="Users who may read this channel (playground, sign-in grants).",
    )
    reader_groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="read_channels",
        help_text="Groups whose members may read this channel.",
    )

    # Bumped on every change to the channel's documents or fields; part of cache keys.
    corpus_version = models.PositiveBigIntegerField(
        default=0,
        editable=False,
        help_text="Goes up with every change to the documents or the "
        "configuration; cached answers and tool schemas follow it.",
    )
    created_at = models.DateTimeField("created", auto_now_add=True)
    updated_at = models.DateTimeField("changed", auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name

    def tool_switched_on(self, switch: ToolSwitch) -> bool:
        chosen = self.tool_switches if isinstance(self.tool_switches, dict) else {}
        value = chosen.get(switch.name)
        return value if isinstance(value, bool) else switch.default

    def enabled_tools(self) -> list[str]:
        """Names of the registered tools this channel's switches leave on."""
        return [
            tool
            for switch in switch_catalogue
            if self.tool_switched_on(switch)
            for tool in switch_catalogue.tools(switch)
        ]

    def clean(self):
        if not isinstance(self.newest_sort, list) or not all(
            isinstance(item, dict)
            and isinstance(item.get("field"), str)
            and item.get("direction", "desc") in ("asc", "desc")
            for item in self.newest_sort
        ):
            raise ValidationError(
                {
                    "newest_sort": 'Use a list like [{"field": "published", '
                    '"direction": "desc"}].'
                }
            )
        if not isinstance(self.filterable_fields, list) or not all(
            isinstance(name, str) for name in self.filterable_fields
        ):
            raise ValidationError(
                {"filterable_fields": 'Use a list of field names like ["year"].'}
            )
        if not isinstance(self.tool_switches, dict) or not all(
            isinstance(on, bool) for on in self.tool_switches.values()
        ):
            raise ValidationError(
                {"tool_switches": 'Use an object like {"rag_search": false}.'}
            )
        if self.generator_kind == self.GeneratorKind.CHAT:
            self._clean_chat_generator()

    def _clean_chat_generator(self) -> None:
        endpoints = settings.CHAT_MODEL_ENDPOINTS
        if not endpoints:
            raise ValidationError(
                {
                    "generator_kind": "No chat-model endpoint is declared on this "
                    "server (CHAT_MODEL_ENDPOINTS); use the extractive answerer."
                }
            )
        endpoint = endpoints.get(self.generator_endpoint)
        if endpoint is None:
            raise ValidationError(
                {
                    "generator_endpoint": "Choose one of the declared endpoints: "
                    + ", ".join(sorted(endpoints))
                    + "."
                }
            )
        if not self.generator_model:
            raise ValidationError({"generator_model": "Name the model to use."})
        if endpoint["models"] and self.generator_model not in endpoint["models"]:
            raise ValidationError(
                {
                    "generator_model": f"{self.generator_endpoint} offers: "
                    + ", ".join(endpoint["models"])
                    + "."
                }
            )

    @property
    def mcp_path(self) -> str:
        """Where the channel's MCP server answers (mcp_endpoint.urls)."""
        return f"{MCP_PATH_PREFIX}{self.slug}"


class MetadataField(models.Model):
    """A user-defined metadata field of a channel (values live in Document.metadata)."""

    class FieldType(models.TextChoices):
        STRING = "string", "String"
        STRING_LIST = "string_list", "List of strings"
        DATE = "date", "Date"
        NUMBER = "number", "Number"
        BOOLEAN = "boolean", "Boolean"
        URL = "url", "URL"

    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="metadata_fields"
    )
    name = models.SlugField(
        max_length=64,
        allow_unicode=False,
        help_text="The key in each document's metadata.",
    )
    type = models.CharField(max_length=16, choices=FieldType.choices)
    description = models.TextField(
        blank=True,
        help_text="Tells MCP clients (filter and listing schemas) and uploaders "
        "what the field holds.",
    )
    required = models.BooleanField(
        default=False, help_text="Every document needs a value."
    )
    filterable = models.BooleanField(
        default=False, help_text="MCP clients may filter on it (metadata_filter)."
    )
    # The reference names it enable_in_mcp_retrieve_chunks; create_channel still
    # takes that name (and the `retrieve` flag) as aliases.
    sent_with_chunks = models.BooleanField(
        default=False,
        help_text="Its value comes with every chunk retrieve_text_chunks returns "
        "(when no field is marked, all of a document's metadata does).",
    )
    position = models.PositiveIntegerField(
        "order", default=0, help_text="Fields are listed in this order."
    )

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "name"], name="metadata_field_unique_name"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.type})"


def document_upload_to(document: "Document", filename: str) -> str:
    return f"channels/{document.channel_id}/originals/{filename}"


def page_image_upload_to(page: "Page", filename: str) -> str:
    return f"channels/{page.document.channel_id}/pages/{page.document_id}/{filename}"


class Document(models.Model):
    """An uploaded file of a channel, its metadata and its ingestion state."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        PROCESSING = "processing", "Processing"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="documents"
    )
    title = models.CharField(max_length=500, blank=True)
    file = models.FileField(upload_to=document_upload_to, max_length=500)
    original_filename = models.CharField("file name", max_length=255)
    content_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField(default=0, help_text="In bytes.")
    sha256 = models.CharField("SHA-256", max_length=64, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    status_reason = models.TextField("reason", blank=True)
    # A ready document stays ready (its previous version searchable) while a
    # worker reads it again; recovery requeues one whose worker died.
    reingesting = models.BooleanField(
        "re-ingesting",
        default=False,
        help_text="A worker is reading it again; the previous version stays "
        "searchable until the new one is ready.",
    )
    has_text = models.BooleanField(
        "text found",
        default=True,
        help_text="No when no page has extractable text (a scan, images only).",
    )
    page_count = models.PositiveIntegerField("pages", default=0)
    chunk_count = models.PositiveIntegerField("chunks", default=0)
    ingested_at = models.DateTimeField("ingested", null=True, blank=True)
    created_at = models.DateTimeField("added", auto_now_add=True)
    updated_at = models.DateTimeField("changed", auto_now=True)
    # The DocumentRevision whose file, pages and chunks are served (see
    # documents.revisions); revised_at is when it became the served one.
    revision = models.PositiveIntegerField(default=1)
    revised_at = models.DateTimeField("revised", default=timezone.now)
    # Who added it: a staff user, or an API key (REST uploads); neither for the
    # command line and the demo loader.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_by_key = models.ForeignKey(
        "ApiKey",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    # Provenance of a synced document (documents.services.sync): its source,
    # its key there, the version marker it was last synced at, the public URL
    # where the source has one (a web page) and the sync that last changed it.
    # Deleting the source keeps its documents, as uploads.
    source = models.ForeignKey(
        "Source",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="documents",
    )
    source_key = models.CharField("key in source", max_length=1024, blank=True)
    source_version = models.CharField(max_length=512, blank=True)
    source_url = models.URLField("source URL", max_length=2048, blank=True)
    source_sync = models.ForeignKey(
        "SourceSync",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name="last changed by sync",
    )

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["channel", "status"], name="document_channel_status"),
            GinIndex(fields=["metadata"], name="document_metadata_gin"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "source_key"],
                condition=models.Q(source__isnull=False),
                name="document_source_key_unique",
            )
        ]

    def __str__(self) -> str:
        return self.title or self.original_filename


def revision_upload_to(revision: "DocumentRevision", filename: str) -> str:
    return f"channels/{revision.document.channel_id}/originals/{filename}"


class DocumentRevision(models.Model):
    """One file a document was given: the first upload is number 1, each
    replacement the next. The document serves the one its `revision` names;
    a higher number is waiting to be ingested. `file` is emptied when the
    retention (DOCUMENT_REVISIONS_KEPT) drops the original; the row stays as
    history."""

    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="revisions"
    )
    number = models.PositiveIntegerField()
    created_at = models.DateTimeField("uploaded", default=timezone.now)
    # When it became the served revision (None: not ingested yet, or skipped
    # for a newer one).
    served_at = models.DateTimeField("served from", null=True, blank=True)
    # Why its file could not be read while an older revision stayed served.
    failure = models.TextField(blank=True)
    file = models.FileField(upload_to=revision_upload_to, max_length=500, blank=True)
    original_filename = models.CharField("file name", max_length=255)
    content_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField(default=0, help_text="In bytes.")
    sha256 = models.CharField("SHA-256", max_length=64)
    # Who gave it, as Document.created_by*, and as text (the audit's label)
    # so the history survives deleting the user or key.
    actor = models.CharField("by", max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_by_key = models.ForeignKey(
        "ApiKey",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        ordering = ["document_id", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "number"], name="document_revision_unique_number"
            )
        ]

    def __str__(self) -> str:
        return f"{self.document_id} r{self.number}"


class RevisionPage(models.Model):
    """A page of an older revision, kept so that citation links made for it
    still open what they cited; never searched. Deleted with its revision's
    original (retention) or its document."""

    revision = models.ForeignKey(
        DocumentRevision, on_delete=models.CASCADE, related_name="pages"
    )
    number = models.PositiveIntegerField()
    text = models.TextField(blank=True)
    has_text = models.BooleanField(default=True)
    image = models.FileField(blank=True, max_length=500)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    ocr = models.BooleanField(default=False)
    lines = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["revision_id", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["revision", "number"], name="revision_page_unique_number"
            )
        ]

    def __str__(self) -> str:
        return f"{self.revision} p.{self.number}"


class Page(models.Model):
    """One physical page (1-based) of a document: its text and rendered image."""

    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="pages"
    )
    number = models.PositiveIntegerField()
    text = models.TextField(blank=True)
    has_text = models.BooleanField(default=True)
    image = models.FileField(upload_to=page_image_upload_to, blank=True, max_length=500)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    ocr = models.BooleanField(
        default=False, help_text="The text was read from the page image by OCR."
    )
    # Where each line of `text` sits on the page, for citations with regions:
    # [[start, end, x0, y0, x1, y1], ...] with start/end character offsets into
    # `text` (end exclusive) and the box as fractions of the page's width and
    # height, origin top left. Empty when the source gives no positions.
    lines = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["document_id", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "number"], name="page_unique_number"
            )
        ]

    def __str__(self) -> str:
        return f"{self.document_id} p.{self.number}"


class Chunk(models.Model):
    """A retrievable passage of one page, in reading order within its document."""

    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="chunks"
    )
    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="chunks")
    # Denormalised for filters and ranking without joins.
    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    page_number = models.PositiveIntegerField()
    order = models.PositiveIntegerField()
    text = models.TextField()
    # The document's title and the headings the chunk is under, found by but
    # never quoted (documents.ingestion.context); "" for chunks made before.
    context = models.TextField(blank=True, default="", db_default="")
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    # Keyword leg: BM25 document-side term weights, hashed term ids (documents.search).
    terms = SparseVectorField(dimensions=TERM_DIMENSIONS, null=True)
    term_count = models.PositiveIntegerField(default=0)
    search_vector = models.GeneratedField(
        expression=SearchVector("context", "text", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects = ChunkQuerySet.as_manager()

    class Meta:
        ordering = ["document_id", "order"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "order"], name="chunk_unique_order"
            )
        ]
        indexes = [
            models.Index(fields=["channel", "document"], name="chunk_channel_document"),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=32,
                ef_construction=128,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.order} p.{self.page_number}"


class SentenceVector(models.Model):
    """The embedding of one sentence (or heading) of a page, computed once and
    kept for answers (documents.generation.evidence); deleted with its page."""

    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="+")
    # blake2b (128 bits, hex) of the sentence's text as the answerer embeds it.
    digest = models.CharField(max_length=32)
    embedding_model = models.CharField(max_length=200)
    # float16 values, the embedder's dimensions; never searched in SQL.
    vector = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["page", "embedding_model", "digest"],
                name="sentence_vector_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.page_id}:{self.digest}"


class KeywordStatistics(models.Model):
    """A channel's keyword-index totals: BM25's N and average chunk length."""

    channel = models.OneToOneField(
        Channel, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    chunk_count = models.BigIntegerField(default=0)
    term_total = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "keyword statistics"

    def __str__(self) -> str:
        return f"{self.channel_id}: {self.chunk_count} chunks"

    @property
    def average_length(self) -> float:
        return self.term_total / self.chunk_count if self.chunk_count else 0.0


class TermStatistic(models.Model):
    """How many of a channel's chunks contain a lexeme (BM25's document frequency)."""

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="+")
    lexeme = models.TextField()
    chunk_frequency = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "lexeme"], name="term_statistic_unique_lexeme"
            )
        ]

    def __str__(self) -> str:
        return f"{self.channel_id}:{self.lexeme} ({self.chunk_frequency})"


def default_scopes() -> list[str]:
    return ["read"]


class ApiKey(models.Model):
    """A bearer key that opens one or more channels. Only its digest is stored."""

    name = models.CharField(max_length=200)
    prefix = models.CharField(
        "key", max_length=16, help_text="First characters of the key, to recognise it."
    )
    digest = models.CharField(max_length=64, unique=True)
    channels = models.ManyToManyField(Channel, related_name="api_keys")
    # documents.access.Scope values; "read" always, "write" when granted.
    scopes = ArrayField(models.CharField(max_length=16), default=default_scopes)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField("created", auto_now_add=True)
    last_used_at = models.DateTimeField("last used", null=True, blank=True)
    revoked_at = models.DateTimeField("revoked", null=True, blank=True)
    expires_at = models.DateTimeField(
        "expires", null=True, blank=True, help_text="Empty: the key never expires."
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_active(self, now=None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (
            self.expires_at is None or self.expires_at > now
        )


class Feedback(models.Model):
    """A rating of an answer, submitted by an MCP client or the API."""

    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="feedback"
    )
    api_key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    query = models.TextField()
    answer = models.TextField()
    score = models.SmallIntegerField()
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField("sent", auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "feedback"

    def __str__(self) -> str:
        return f"{self.channel_id}: {self.score}"


class AuditEvent(models.Model):
    """One write or refused authentication: when, who, where, what, and how it ended.

    Rows are written by documents.access.audit only and never edited; the actor
    and channel are kept as text too, so the trail survives deleting either.
    """

    class Action(models.TextChoices):
        DOCUMENT_UPLOAD = "document.upload", "Document uploaded"
        DOCUMENT_DELETE = "document.delete", "Document deleted"
        DOCUMENT_REINGEST = "document.reingest", "Document re-ingested"
        DOCUMENT_EDIT = "document.edit", "Title or metadata edited"
        DOCUMENT_REVISE = "document.revise", "New file (revision) given"
        SOURCE_ADD = "source.add", "Source added"
        SOURCE_CHANGE = "source.change", "Source changed"
        SOURCE_DELETE = "source.delete", "Source deleted"
        SOURCE_SYNC = "source.sync", "Source synced"
        CHANNEL_CREATE = "channel.create", "Channel created"
        CHANNEL_CHANGE = "channel.change", "Channel configuration changed"
        CHANNEL_ACCESS = "channel.access", "Channel readers or curators changed"
        CHANNEL_DELETE = "channel.delete", "Channel deleted"
        KEY_CREATE = "key.create", "API key created"
        KEY_CHANGE = "key.change", "API key changed"
        KEY_REVOKE = "key.revoke", "API key revoked"
        GRANT_CREATE = "grant.create", "Sign-in granted to a client"
        GRANT_REVOKE = "grant.revoke", "Sign-in grant revoked"
        AUTH_REFUSED = "auth.refused", "Authentication refused"
        AUTH_THROTTLED = "auth.throttled", "Client throttled after failures"
        CLIENT_REGISTER = "client.register", "OAuth client registered"
        TOKEN_ISSUE = "token.issue", "Sign-in token issued"
        TOKEN_REUSE = "token.reuse", "Used code or refresh token replayed"
        CONSENT_REFUSE = "consent.refuse", "Sign-in refused on the consent page"
        LOGIN_FAILED = "login.failed", "Wrong password"

    class Outcome(models.TextChoices):
        OK = "ok", "Done"
        REFUSED = "refused", "Refused"

    at = models.DateTimeField("time", default=timezone.now)
    action = models.CharField(max_length=32, choices=Action.choices)
    outcome = models.CharField(
        max_length=16, choices=Outcome.choices, default=Outcome.OK
    )
    actor = models.CharField(max_length=300, help_text="Who, as text.")
    via = models.CharField(
        "door",
        max_length=16,
        help_text="How the actor came in: admin, rest, mcp, command, demo...",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    api_key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    client_address = models.GenericIPAddressField(null=True, blank=True)
    channel = models.ForeignKey(
        Channel, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    channel_slug = models.CharField("channel", max_length=64, blank=True)
    # The channels an event concerns when it isn't one (an API key's): its
    # channels' curators see it too.
    channels = models.ManyToManyField(Channel, blank=True, related_name="+")
    object_type = models.CharField(max_length=32, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField("object", max_length=300, blank=True)
    detail = models.TextField(blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["at"], name="audit_at"),
            models.Index(fields=["channel", "at"], name="audit_channel_at"),
            models.Index(fields=["action", "at"], name="audit_action_at"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.action} {self.actor}"


class RateLimitWindow(models.Model):
    """How many requests (or writes) one credential made in one fixed window.

    `subject` names the credential: "key:<ApiKey id>" or "grant:<SignInGrant id>"
    (every token of one sign-in grant shares its limits).
    """

    class Bucket(models.TextChoices):
        REQUESTS = "requests", "Requests per minute"
        WRITES = "writes", "Writes per hour"

    subject = models.CharField(max_length=64)
    bucket = models.CharField(
        max_length=16, choices=Bucket.choices, default=Bucket.REQUESTS
    )
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["subject", "bucket", "window_start"],
                name="ratelimit_unique_window",
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject}/{self.bucket}@{self.window_start:%H:%M}: {self.count}"


class SignInGrant(models.Model):
    """A person's consent, given on the sign-in page, for an OAuth client to use
    one channel with some scopes. Its tokens are the OAuth library's; revoking
    the grant revokes them and stops them working at once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    application = models.ForeignKey(
        "oauth2_provider.Application", on_delete=models.CASCADE, related_name="+"
    )
    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="sign_in_grants"
    )
    # The channel's MCP URL the tokens are bound to (RFC 8707 resource).
    resource = models.URLField(max_length=500)
    scopes = ArrayField(models.CharField(max_length=16), default=default_scopes)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "sign-in grant"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "application", "channel"],
                condition=models.Q(revoked_at__isnull=True),
                name="signin_grant_one_active",
            )
        ]

    def __str__(self) -> str:
        return f"{self.application} for {self.user} on {self.channel}"


class AddressWindow(models.Model):
    """Events from one client address in one window: failed authentications
    (per minute, for throttling) and client registrations (per hour)."""

    class Bucket(models.TextChoices):
        FAILURES = "failures", "Failed authentications per minute"
        REGISTRATIONS = "registrations", "OAuth client registrations per hour"

    address = models.CharField(max_length=64)
    bucket = models.CharField(
        max_length=16, choices=Bucket.choices, default=Bucket.FAILURES
    )
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["address", "bucket", "window_start"],
                name="address_window_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.address}/{self.bucket}@{self.window_start:%H:%M}: {self.count}"


class Source(models.Model):
    """A place a channel's documents live (a folder on the server, an S3
    bucket, a website), synced into the channel by documents.services.sync.

    `config` is the kind's configuration (documents.sources), checked against
    what the operator declared every time it is used; `metadata_map` maps a
    channel field to the name of a value the source gives (identity when a
    field is not mapped; "path:N" is the Nth folder of the entry's path).
    """

    class Kind(models.TextChoices):
        FOLDER = "folder", "Folder on the server"
        S3 = "s3", "S3-compatible bucket"
        WEB = "web", "Website"

    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="sources"
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    config = models.JSONField("configuration", default=dict)
    metadata_map = models.JSONField("metadata mapping", default=dict, blank=True)
    delete_removed = models.BooleanField(
        "delete removed entries",
        default=False,
        help_text="Delete a document when its entry is gone from the source; "
        "otherwise it stays in the channel.",
    )
    every_minutes = models.PositiveIntegerField(
        "sync every (minutes)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Empty: only when asked (Sync now, manage.py sync_source).",
    )
    enabled = models.BooleanField(default=True)
    next_sync_at = models.DateTimeField("next scheduled sync", null=True, blank=True)
    created_at = models.DateTimeField("added", auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        ordering = ["channel_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "name"], name="source_unique_name"
            )
        ]
        indexes = [models.Index(fields=["next_sync_at"], name="source_next_sync")]

    def __str__(self) -> str:
        return self.name


class SourceSync(models.Model):
    """One sync of a source: its state while it runs (progress), then its
    counts, duration and the reason of each entry that failed."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        LISTING = "listing", "Listing the source"
        SYNCING = "syncing", "Syncing entries"
        DONE = "done", "Done"
        PARTIAL = "partial", "Done, listing cut short"
        FAILED = "failed", "Failed"

    ACTIVE = (Status.QUEUED, Status.LISTING, Status.SYNCING)
    # What happened to the entries, in the order a summary names them.
    COUNTS = ("added", "revised", "unchanged", "removed", "kept", "failed")

    class Trigger(models.TextChoices):
        ADMIN = "admin", "Sync now (admin)"
        COMMAND = "command", "manage.py sync_source"
        SCHEDULE = "schedule", "Schedule"
        REST = "rest", "REST API"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="syncs")
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.QUEUED
    )
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    actor = models.CharField("requested by", max_length=300, blank=True)
    created_at = models.DateTimeField("requested", default=timezone.now)
    started_at = models.DateTimeField("started", null=True, blank=True)
    finished_at = models.DateTimeField("finished", null=True, blank=True)
    # How many times a worker started it (more than one: resumed after a
    # worker stopped).
    attempts = models.PositiveSmallIntegerField(default=0)
    listed = models.PositiveIntegerField("entries listed", default=0)
    processed = models.PositiveIntegerField("entries done", default=0)
    added = models.PositiveIntegerField(default=0)
    revised = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    removed = models.PositiveIntegerField(default=0)
    kept = models.PositiveIntegerField(
        "gone but kept",
        default=0,
        help_text="Entries gone from the source whose documents were kept.",
    )
    failed = models.PositiveIntegerField(default=0)
    # [{"key": ..., "reason": ...}], the first SOURCE_SYNC_ERRORS_KEPT.
    errors = models.JSONField(default=list, blank=True)
    reason = models.TextField(
        blank=True, help_text="Why the sync failed or its listing was cut short."
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["source", "status"], name="source_sync_status"),
        ]

    def __str__(self) -> str:
        return f"{self.source} sync {self.pk}"


class WorkerHeartbeat(models.Model):
    """An ingestion worker's sign of life, written every WORKER_HEARTBEAT_SECONDS
    by `manage.py ingest_worker` on any machine: /readyz and the metrics tell
    from it whether anything is taking tasks."""

    worker_id = models.CharField(max_length=64, unique=True)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)

    objects = WorkerHeartbeatQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.hostname}:{self.pid}"
