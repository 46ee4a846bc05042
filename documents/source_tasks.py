"""The sync task, run by `manage.py ingest_worker` beside ingestion (its own
module: the sync engine uses the document services, which queue ingestion
tasks from documents.tasks)."""

from django.tasks import task

from documents.models import SourceSync
from documents.services.sync import run_sync


# Behind people's uploads (priority 0), ahead of preparing answers (-10).
@task(priority=-5)
def sync_source_task(sync_id: int) -> str:
    """Run or resume one sync (documents.services.sync.run_sync); returns its
    final status. A sync deleted with its source is skipped."""
    try:
        return run_sync(sync_id).status
    except SourceSync.DoesNotExist:
        return "deleted"
