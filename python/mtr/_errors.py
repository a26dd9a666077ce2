"""The exceptions of the `mtr` package.

`InputError` is the user's input (a file, a DataFrame, a dict or a flag), named as the `mtr`
command names it (``file:line: field `f`: message (hint: ...)``) and ending the CLI with exit
status 2; `Error` is everything else (exit status 1).
"""

from __future__ import annotations

from typing import Optional


class Error(Exception):
    """An mtr failure that is not the input's fault (an unreadable disk, a bug)."""


class InputError(Error, ValueError):
    """Bad input: fix the named file, row or flag and call again.

    Attributes:
        file: the file (or ``"qrels DataFrame"``, ``"run dict"``...) the error is in, or None
            for a flag.
        line: the line of the file (a DataFrame's row position, from 1), or None.
        field: the field or column, or None.
        hint: how to fix it, when mtr knows, or None.
    """

    def __init__(
        self,
        message: str,
        file: Optional[str] = None,
        line: Optional[int] = None,
        field: Optional[str] = None,
        hint: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.field = field
        self.hint = hint
