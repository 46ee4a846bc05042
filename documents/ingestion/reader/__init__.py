"""The reader: parses one untrusted file in a child process.

PDFium, libxml2, zlib, Pillow and Tesseract are C code, so a hostile or damaged
file may hang them, exhaust memory or crash them. documents.ingestion.reading
runs `python -m documents.ingestion.reader <request>` with a time limit, and
the child sets its own memory limit before it reads anything; a failure costs
only the child. Nothing here imports Django.

The child writes JSON lines on stdout (documents.ingestion.reader.protocol):
the document's facts, then one message per page as it is read, then the end.
"""
