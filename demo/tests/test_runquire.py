import socket
from io import StringIO

import pytest
from django.core.management import CommandError, call_command


def test_runquire_refuses_a_port_in_use(db):
    """runquire stops before starting anything when its port is taken, and says
    how to pick another."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match="PORT="):
            call_command("runquire", "--port", str(port), stdout=StringIO())
