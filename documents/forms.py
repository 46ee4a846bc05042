"""Admin forms: the two-step document upload, a document's title and metadata,
and API key creation."""

from datetime import datetime

from django import forms
from django.core.exceptions import ValidationError

from documents.ingestion import formats
from documents.limits import max_length
from documents.metadata import clean_metadata
from documents.models import ApiKey, Channel, Document, MetadataField

FieldType = MetadataField.FieldType
METADATA_PREFIX = "meta_"


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field whose cleaned value is the list of every file chosen."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = [f for f in (data if isinstance(data, list | tuple) else [data]) if f]
        if not files:
            if self.required:
                raise ValidationError(self.error_messages["required"], code="required")
            return []
        clean_one = super().clean
        return [clean_one(f, initial) for f in files]


class UploadChannelForm(forms.Form):
    """Step one of an upload: which channel the files go to (of `channels`,
    those the user curates)."""

    channel = forms.ModelChoiceField(
        queryset=Channel.objects.none(),
        help_text="The next step asks for this channel's metadata fields.",
    )

    def __init__(self, *args, channels, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["channel"].queryset = channels


def metadata_form_field(field: MetadataField) -> forms.Field:
    """The form input for one metadata field; values are validated by
    clean_metadata, so most inputs stay text and keep what was typed."""
    label = field.name.replace("_", " ").capitalize()
    help_text = field.description
    common = {"label": label, "required": field.required}
    match field.type:
        case FieldType.DATE:
            return forms.DateField(
                widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
                help_text=help_text or "YYYY-MM-DD",
                **common,
            )
        case FieldType.BOOLEAN:
            return forms.ChoiceField(
                choices=[("", "(not set)"), ("true", "Yes"), ("false", "No")],
                help_text=help_text,
                **common,
            )
        case FieldType.STRING_LIST:
            return forms.CharField(
                help_text=(help_text + " " if help_text else "")
                + "Separate values with commas.",
                widget=forms.TextInput(attrs={"class": "vLargeTextField"}),
                **common,
            )
        case FieldType.URL:
            return forms.CharField(
                widget=forms.URLInput(attrs={"class": "vURLField"}),
                help_text=help_text,
                **common,
            )
        case FieldType.NUMBER:
            return forms.CharField(
                widget=forms.TextInput(attrs={"inputmode": "decimal"}),
                help_text=help_text,
                **common,
            )
        case _:
            return forms.CharField(
                widget=forms.TextInput(attrs={"class": "vTextField"}),
                help_text=help_text,
                **common,
            )


class MetadataInputsForm(forms.Form):
    """One input per metadata field of `channel`; `cleaned_data["metadata"]`
    holds the values validated by clean_metadata."""

    def __init__(self, *args, channel: Channel, **kwargs):
        super().__init__(*args, **kwargs)
        self.channel = channel
        self.metadata_fields = list(channel.metadata_fields.all())
        for field in self.metadata_fields:
            self.fields[METADATA_PREFIX + field.name] = metadata_form_field(field)

    def metadata_bound_fields(self) -> list[forms.BoundField]:
        return [self[METADATA_PREFIX + field.name] for field in self.metadata_fields]

    def clean(self):
        cleaned = super().clean()
        values = {}
        for field in self.metadata_fields:
            key = METADATA_PREFIX + field.name
            if key not in cleaned:
                continue  # the input itself was invalid and already has its error
            value = cleaned[key]
            try:
                clean_metadata([field], {field.name: value})
            except ValidationError as exc:
                self.add_error(key, exc.messages)
                continue
            values[field.name] = value
        if not self.errors:
            try:
                cleaned["metadata"] = clean_metadata(self.metadata_fields, values)
            except ValidationError as exc:
                raise ValidationError(exc.messages) from None
        return cleaned


class UploadDocumentsForm(MetadataInputsForm):
    """Step two of an upload: the files and one input per metadata field (the
    values apply to every file of the upload)."""

    files = MultipleFileField(
        label="Files",
        help_text=f"{formats.labels()}. Choose one or many.",
    )


class ReplaceFileForm(forms.Form):
    """A document's new file (its next revision)."""

    file = forms.FileField(
        label="New file",
        help_text=(
            "Any format an upload takes. The document keeps its id, title, "
            "metadata and links; the current file stays searchable until the "
            "new one is read."
        ),
    )


class DocumentMetadataForm(MetadataInputsForm):
    """A document's title and metadata, filled in with its current values."""

    title = forms.CharField(
        max_length=max_length(Document, "title"),
        required=False,
        widget=forms.TextInput(attrs={"class": "vLargeTextField"}),
        help_text="Empty: the file's own title if it looks like one, else its first "
        "heading, else the file name.",
    )

    def __init__(self, *args, document: Document, **kwargs):
        kwargs.setdefault(
            "initial",
            {"title": document.title}
            | {
                METADATA_PREFIX + name: input_value(value)
                for name, value in document.metadata.items()
            },
        )
        super().__init__(*args, channel=document.channel, **kwargs)


def input_value(value) -> str:
    """A stored metadata value as its form input shows it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return str(value)


class ApiKeyForm(forms.ModelForm):
    """Name, channels, scope and optional expiry of a key; the key itself is
    generated. Read-only unless write is ticked."""

    channels = forms.ModelMultipleChoiceField(
        queryset=Channel.objects.all(),
        widget=forms.CheckboxSelectMultiple,
        help_text="The channels this key opens.",
    )
    write = forms.BooleanField(
        required=False,
        label="Write access",
        help_text="Also upload, delete and re-ingest documents through the REST "
        "API. Leave it off for keys you give to AI agents: a read key can search, "
        "read and answer, and nothing more.",
    )
    expires_at = forms.DateTimeField(
        label="Expires",
        required=False,
        widget=forms.DateTimeInput(
            attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"
        ),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"],
        help_text="Leave empty for a key that does not expire (UTC).",
    )

    class Meta:
        model = ApiKey
        fields = ["name", "channels", "expires_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["write"].initial = "write" in self.instance.scopes

    def scopes(self) -> list[str]:
        return ["read", "write"] if self.cleaned_data.get("write") else ["read"]

    def clean_expires_at(self) -> datetime | None:
        expires_at = self.cleaned_data["expires_at"]
        if (
            expires_at is not None
            and self.instance.pk is None
            and expires_at <= datetime.now(tz=expires_at.tzinfo)
        ):
            raise ValidationError("The expiry must be in the future.")
        return expires_at
