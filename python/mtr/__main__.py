"""`python -m mtr ...` is the `mtr` command."""

from mtr._cli import main

main()
