"""The argument types and the parser every ``ctxlab`` command shares: one-line errors, checked numbers and paths."""

from __future__ import annotations

import argparse
import math


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``ctxlab CMD: error: ...`` and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def checked(kind, test, what: str):
    """An argparse type: ``kind`` (int or float) that passes ``test``, else the message ``what``."""

    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not test(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    return convert


positive_int = checked(int, lambda v: v >= 1, "a positive integer")
positive_float = checked(float, lambda v: math.isfinite(v) and v > 0, "a positive finite number")


def path_option(text: str) -> str:
    """An argparse type: a non-empty path."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give a file or folder name")
    return text
