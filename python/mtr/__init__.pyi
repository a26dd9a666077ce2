# The `mtr` package's public names for type checkers and IDEs (the module loads them lazily).
from mtr._errors import Error as Error, InputError as InputError
from mtr._evaluate import evaluate as evaluate, evaluate_frame as evaluate_frame
from mtr._readers import (
    Audit as Audit,
    Bench as Bench,
    Benchmark as Benchmark,
    read_audit as read_audit,
    read_bench as read_bench,
)
from mtr._run import Completed as Completed, run as run

__version__: str
__all__: list[str]
