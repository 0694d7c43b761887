"""`serve` refuses unusable hosts, ports and options in one line, before starting anything."""

from __future__ import annotations

import socket

import pytest

from inspector.cli import main


@pytest.mark.parametrize(
    "args, reason",
    [
        (["--port", "0"], "is not a TCP port"),
        (["--port", "70000"], "is not a TCP port"),
        (["--host", "bogus.invalid", "--public"], "cannot resolve"),
        (["--host", "192.0.2.1", "--public"], "cannot serve on 192.0.2.1:8000"),
        (["--host", "[nope]"], "--host [nope]: '[nope]' is not an IPv6 address in brackets"),
        (["--host", "[::1"], "is not an IPv6 address in brackets"),
        (["--max-sessions", "0"], "--max-sessions 0: must be at least 1"),
    ],
)
def test_bad_host_or_port(args, reason, capsys):
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err
    assert reason in err and "Traceback" not in err


def test_port_in_use(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    assert f"cannot serve on 127.0.0.1:{port}" in capsys.readouterr().err


def test_port_in_use_on_a_bracketed_ipv6_loopback(capsys):
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
    except OSError:
        pytest.skip("this machine has no IPv6 loopback (::1 cannot be bound)")
    with s:
        s.listen()
        port = s.getsockname()[1]
        assert main(["serve", "--host", "[::1]", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"cannot serve on [::1]:{port}" in err and "cannot resolve" not in err


def test_fifo_and_control_characters_in_names(tmp_path, capsys):
    import os

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert main(["validate", str(fifo)]) == 2  # never blocks reading a FIFO
    assert "not a regular file" in capsys.readouterr().err
    odd = tmp_path / "new\nline.json"
    odd.write_text("x")
    assert main(["validate", str(odd)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "new\\nline.json" in err
