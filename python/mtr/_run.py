"""`mtr.run`: any `mtr` command from Python, in a child process (the default) or in this one.

A child is the safe default in a notebook: the command's stdout is captured and returned, its
stderr (log lines, progress) is streamed to ``sys.stderr`` as it comes, and a KeyboardInterrupt
(the notebook's stop button) is passed on as SIGINT, so the command ends as on a Ctrl-C in a
terminal (status 130, its resume note printed) before the interrupt is raised again here.
In this process the command writes to the process's own stdout and stderr (a terminal, not a
notebook cell) and installs its Ctrl-C handler for its duration.
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import IO, List, Optional, Sequence

from mtr import _mtr
from mtr._errors import Error, InputError


@dataclass
class Completed:
    """The end of an `mtr` command: its exit status (0 ok, 1 internal error, 2 bad input,
    3 calls exported to a Batch file, 130 interrupted) and, run as a child, its stdout."""

    args: List[str]
    returncode: int
    stdout: Optional[str]
    #: what the command printed to stderr, run as a child
    stderr: Optional[str]


def run(
    args: Sequence[str],
    *,
    in_process: bool = False,
    check: bool = False,
    stream: Optional[IO[str]] = None,
) -> Completed:
    """Runs ``mtr ARGS...`` and returns its exit status and output.

    Args:
        args: the command line after ``mtr``, e.g. ``["eval", "qrels.tsv", "run.trec"]``.
        in_process: run in this process (no child; output goes to the process's stdout and
            stderr, not captured). The default runs a child process.
        check: raise on a non-zero status: `InputError` for 2 (bad input), `Error` otherwise.
        stream: where a child's stderr goes as it comes (default ``sys.stderr``).
    """
    argv = [str(a) for a in args]
    if in_process:
        done = Completed(argv, _mtr.run_cli(["mtr", *argv], True), None, None)
    else:
        done = _child(argv, stream if stream is not None else sys.stderr)
    if check and done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-1:] or [f"mtr exited with {done.returncode}"]
        if done.returncode == 2:
            raise InputError(tail[0])
        raise Error(tail[0])
    return done


def _child(argv: List[str], stream: IO[str]) -> Completed:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtr", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    err: List[bytes] = []
    pump = threading.Thread(target=_pump, args=(proc.stderr, stream, err), daemon=True)
    pump.start()
    try:
        out = proc.stdout.read() if proc.stdout else b""
        proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        proc.wait()
        pump.join()
        raise
    pump.join()
    return Completed(
        argv,
        proc.returncode,
        out.decode("utf-8", "replace"),
        b"".join(err).decode("utf-8", "replace"),
    )


def _pump(source: Optional[IO[bytes]], stream: IO[str], keep: List[bytes]) -> None:
    if source is None:
        return
    fd = source.fileno()
    text = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        chunk = os.read(fd, 65536)
        keep.append(chunk)
        stream.write(text.decode(chunk, final=not chunk))
        stream.flush()
        if not chunk:
            return
