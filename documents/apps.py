from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    name = "documents"
    # The admin's heading over channels, documents, keys, feedback and the
    # audit trail ("Documents" is one of them).
    verbose_name = "Quire"
