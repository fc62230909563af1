"""duetime/wire.pyi and wire.py are what scripts/gen_types.py makes of the wire's JSON Schema
(issue 48, item 5): after the schema changes, ``python scripts/gen_types.py``. CI also checks
examples/typed.py with ``mypy --strict`` against them."""

import importlib.util
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_types", HERE / "scripts" / "gen_types.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_type_files_are_generated_from_the_schema_as_checked_in():
    gen = _generator()
    stub, runtime = gen.generate(json.loads(gen.SCHEMA.read_text()))
    assert (HERE / "python" / "duetime" / "wire.pyi").read_text() == stub, "stale: python scripts/gen_types.py"
    assert (HERE / "python" / "duetime" / "wire.py").read_text() == runtime, "stale: python scripts/gen_types.py"


def test_the_types_import_at_run_time():
    from duetime.wire import Effect, Event, LedgerEntry  # noqa: F401
