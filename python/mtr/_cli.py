"""The `mtr` console script: the same command line as the Rust binary, run in this process.

Python's own SIGINT handler is put back to the default first: the command installs its own
(Ctrl-C ends it with status 130 and its resume note), and a Python handler left in place
would raise KeyboardInterrupt after the command had already ended cleanly.
"""

from __future__ import annotations

import signal
import sys

from mtr import _mtr


def main() -> None:
    """Entry point of the `mtr` console script."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    argv = ["mtr", *sys.argv[1:]]
    sys.stdout.flush()
    code = _mtr.run_cli(argv, False)
    sys.exit(code)


if __name__ == "__main__":
    main()
