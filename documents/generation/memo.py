"""Small in-process memories for the answerer (sentences of pages, vectors of
sentences): thread-safe, least recently used first out."""

import hashlib
import threading
from collections import OrderedDict


def text_key(text: str) -> str:
    """A short, stable key for a text (128-bit blake2b, hex)."""
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class LRU:
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
