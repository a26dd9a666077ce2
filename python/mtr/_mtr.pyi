"""Type stubs of the compiled module `mtr._mtr` (crates/python). Use the `mtr` package's
functions; this module's signatures are internal."""

from typing import Any, Dict, List, Optional, Tuple

__version__: str

def evaluate(
    qrels: Tuple[Any, ...],
    run: Tuple[Any, ...],
    measures: List[str],
    per_query: bool,
    flags: Dict[str, Any],
) -> Tuple[Dict[str, Any], Optional[Dict[str, Dict[str, Any]]]]: ...
def run_cli(argv: List[str], embedded: bool) -> int: ...
