"""mtr in Python: evaluation as exact as ``mtr eval`` (trec_eval 10.0 to the last bit) and
faster than pytrec_eval, readers that hand benchmarks, audits and bench results to pandas, and
the ``mtr`` command itself.

    import mtr
    mtr.evaluate("qrels.tsv", run_frame, ["nDCG@10", "map"])  # {"nDCG@10": ..., "map": ...}

See docs/python.md. The names below are loaded when first used, so that the ``mtr`` command
(``mtr._cli``) starts without importing what only the API needs.
"""

from importlib import import_module

# name -> the module that defines it
_EXPORTS = {
    "Error": "mtr._errors",
    "InputError": "mtr._errors",
    "evaluate": "mtr._evaluate",
    "evaluate_frame": "mtr._evaluate",
    "Audit": "mtr._readers",
    "Bench": "mtr._readers",
    "Benchmark": "mtr._readers",
    "read_audit": "mtr._readers",
    "read_bench": "mtr._readers",
    "Completed": "mtr._run",
    "run": "mtr._run",
    "__version__": "mtr._mtr",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mtr' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_EXPORTS))
