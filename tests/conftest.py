"""Fixtures shared by the unit tests."""

import socket

import pytest


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test: everything the course ships must work offline."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
