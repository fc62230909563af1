"""Writes duetime/wire.pyi (and duetime/wire.py, its runtime names), the Python types of the
wire format, from its JSON Schema (docs/wire-format.schema.json, which the Rust types
generate): every object a ``TypedDict`` (fields the core may leave out ``NotRequired``), every
tagged enum a ``Union`` of ``TypedDict``s told apart by a ``Literal`` tag, so a type checker
narrows ``effect["effect"] == "start"``. Issue 48, item 5; tests/test_types.py holds the
files to this output. ``python scripts/gen_types.py`` (from bindings/python)."""

import json
import keyword
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parents[1]
SCHEMA = HERE.parents[1] / "docs" / "wire-format.schema.json"
OUT = HERE / "python" / "duetime"


def pyname(name):
    """A schema name as a Python name (`True`, `False` are keywords: `True_`)."""
    return f"{name}_" if keyword.iskeyword(name) else name


def literal(value):
    return repr(value) if isinstance(value, bool) or value is None else json.dumps(value)


class Gen:
    def __init__(self, defs):
        self.defs = defs
        self.classes = []  # (name, lines) of every TypedDict, in order made

    def ref(self, ref):
        return pyname(ref.rsplit("/", 1)[1])

    def type(self, s, hint):
        """The type of schema `s`; `hint` names a TypedDict it may need."""
        if s is True or not s:
            return "Any"
        if "$ref" in s and not s.get("properties"):
            return self.ref(s["$ref"])
        if "oneOf" in s or "anyOf" in s:
            options = s.get("oneOf") or s.get("anyOf")
            if s.get("properties") and "oneOf" in s:  # fields every variant shares (flattened)
                options = self.variants(s)
            return self.union([self.type(v, f"{hint}{self.tag_name(v, i)}") for i, v in enumerate(options)])
        if "const" in s:
            return f"Literal[{literal(s['const'])}]"
        if "enum" in s:
            return f"Literal[{', '.join(literal(v) for v in s['enum'])}]"
        kinds = s.get("type", "object" if "properties" in s else None)
        if kinds is None:
            return "Any"
        return self.union([self.plain(k, s, hint) for k in ([kinds] if isinstance(kinds, str) else kinds)])

    def tag_name(self, variant, i):
        for v in (variant.get("properties") or {}).values():
            if isinstance(v, dict) and isinstance(v.get("const"), str):
                return "".join(w.capitalize() for w in v["const"].split("_"))
        return str(i)

    def union(self, options):
        unique = list(dict.fromkeys(options))
        return unique[0] if len(unique) == 1 else f"Union[{', '.join(unique)}]"

    def plain(self, kind, s, hint):
        if kind == "array":
            return f"List[{self.type(s.get('items'), hint + 'Item')}]"
        if kind == "object":
            if s.get("properties"):
                return self.typed_dict(hint, s)
            extra = s.get("additionalProperties")
            return f"Dict[str, {self.type(extra, hint + 'Value')}]" if isinstance(extra, dict) else "Dict[str, Any]"
        return {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}[kind]

    def variants(self, s):
        """A union schema's variants, each with the fields all of them share."""
        shared, need = s.get("properties", {}), s.get("required", [])
        return [{**v, "properties": {**shared, **v.get("properties", {})},
                 "required": need + v.get("required", [])} for v in s["oneOf"]]

    def typed_dict(self, name, s):
        base = self.defs.get(s["$ref"].rsplit("/", 1)[1]) if "$ref" in s else None
        if base is not None and "oneOf" in base:
            # A tag put on a union (a journal line's `type` on a ledger entry): one TypedDict
            # per variant of the union, each with the tag.
            options = []
            for i, v in enumerate(self.variants(base)):
                merged = {"properties": {**v["properties"], **s["properties"]},
                          "required": v["required"] + s.get("required", []), "type": "object"}
                options.append(self.typed_dict(name + self.tag_name(v, i), merged))
            return self.union(options)
        required = set(s.get("required", []))
        fields = {}
        for source in [base or {}, s]:  # a variant that extends another object takes its fields
            for k, v in (source.get("properties") or {}).items():
                required |= set(source.get("required", [])) if source is base else set()
                t = self.type(v, name + "".join(w.capitalize() for w in k.split("_")))
                fields[k] = t if k in required else f"NotRequired[{t}]"
        body = ", ".join(f"{json.dumps(k)}: {t}" for k, t in fields.items())
        self.classes.append((name, f"{name} = TypedDict({json.dumps(name)}, {{{body}}})"))
        return name


def generate(schema):
    gen = Gen(schema["$defs"])
    aliases = []
    for name in sorted(schema["$defs"]):
        s = schema["$defs"][name]
        t = gen.type(s, pyname(name))
        if t != pyname(name):
            aliases.append(f"{pyname(name)} = {t}")
    head = [
        '"""Generated by scripts/gen_types.py from docs/wire-format.schema.json: do not edit."""',
        "",
        "from typing import Any, Dict, List, Literal, Union",
        "",
        "from typing_extensions import NotRequired, TypedDict",
        "",
    ]
    stub = "\n".join(head + [line for _, line in gen.classes] + aliases) + "\n"
    names = sorted({n for n, _ in gen.classes} | {a.split(" = ")[0] for a in aliases})
    runtime = "\n".join([
        '"""The wire format\'s types, for type checkers: the real ones are in wire.pyi (generated by',
        'scripts/gen_types.py). At run time each name is a plain alias, so importing them works."""',
        "",
        "from typing import Any, Dict",
        "",
    ] + [f"{n} = Dict[str, Any]" for n in names]) + "\n"
    return stub, runtime


if __name__ == "__main__":
    stub, runtime = generate(json.loads(SCHEMA.read_text()))
    (OUT / "wire.pyi").write_text(stub)
    (OUT / "wire.py").write_text(runtime)
    print(f"wrote {OUT / 'wire.pyi'} and wire.py", file=sys.stderr)
