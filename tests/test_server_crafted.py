"""A message written by hand to the engine's socket (by the same user: only they can reach it)
cannot make the engine serve, and so write into, a folder no client would have named: a plain
folder, or one other than the store the request names. Real engine processes on tmp folders."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from server_support import (
    engine_home,  # noqa: F401 - this module's own engine folder
    memctl,
    socket_of,
    stop_everything,
    wait_for_server,
)

from memctl import service
from memctl.server.identity import code_identity
from memctl.server.protocol import PROTOCOL, recv_message, send_message

pytestmark = [pytest.mark.resident_server, pytest.mark.model, pytest.mark.slow]


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    store = service.init_store(root)
    service.add_memory(store, "We deploy with make release, then promote the rollout")
    yield root
    stop_everything(store.root)


@pytest.fixture
def decoy(tmp_path) -> Path:
    """Stands for /etc: a plain folder of the same user's with files in it."""
    folder = tmp_path / "etc"
    folder.mkdir()
    (folder / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    return folder


def crafted(store: str, argv: list[str], cwd: str) -> dict:
    """Send one `run` request as the client would, with these fields; the engine's answer."""
    header = {
        "op": "run",
        "protocol": PROTOCOL,
        "code": code_identity(),
        "config": "",
        "store": store,
        "argv": argv,
        "argv0": "memctl",
        "main_package": None,
        "cwd": cwd,
        "env": {"PATH": os.environ.get("PATH", ""), "HOME": cwd},
        "streams": {},
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(120)
        sock.connect(str(socket_of()))
        send_message(sock, header, (b"",))
        answer, _ = recv_message(sock)
        if answer.get("accepted"):
            answer, _ = recv_message(sock)
    return answer


def test_a_crafted_request_cannot_make_the_engine_write_outside_a_store(project, decoy):
    memctl("recall", "deploy", cwd=project)
    wait_for_server(project / ".memory")

    for store, argv in [
        (str(decoy), ["add", "planted"]),
        (str(decoy), ["recall", "passwd"]),
        (str(project / ".memory"), ["--store", str(decoy), "add", "planted"]),
        (str(project / ".memory"), ["--store=" + str(decoy), "index"]),
    ]:
        answer = crafted(store, argv, str(decoy))
        assert answer.get("accepted") is False and answer.get("restart") is False, answer

    assert sorted(p.name for p in decoy.iterdir()) == ["passwd"]
    # the engine still serves the real store, and a request naming it the usual ways
    answer = crafted(
        str(project / ".memory"), ["--store", ".memory", "recall", "deploy"], str(project)
    )
    assert answer.get("exit") == 0
