"""Your own Markov pairs for ``spectheory verify --instances FILE`` (docs/instances.md).

An instances file (TOML or JSON; schema ``spectheory.instances/1``, JSON Schema
``sims/schemas/instances-1.json``) lists pairs, each given one of three ways:

* by its tables: ``order`` (0 = i.i.d.) and ``target`` / ``draft``: one row of V probabilities
  per state (``V**order`` rows; a single row for order 0);
* by a generator of :mod:`spectheory.pairs`: ``generator`` (one of :data:`GENERATORS`) and
  ``args`` (its keyword arguments, e.g. ``{V = 4, order = 1, how = "mix", strength = 0.3,
  seed = 1}``);
* by a built-in instance name: ``instance`` (:func:`spectheory.instances.names`).

Every pair has a ``name`` (unique, used in the report). :func:`load` checks the whole file
before anything runs and raises :class:`InstancesFileError` naming the file, the pair and the
field at fault (with a suggestion for a misspelt key or generator).
"""
from __future__ import annotations

import difflib
import json
from pathlib import Path

SCHEMA = "spectheory.instances/1"
#: the constructors of :mod:`spectheory.pairs` an instances file may name
GENERATORS = ("perturbed_pair", "aligned_pair", "random_pair")
_KEYS = {"name", "order", "target", "draft", "generator", "args", "instance", "description"}


class InstancesFileError(ValueError):
    """An instances file that cannot be used (the message names the file, pair and field)."""


def _suggest(word: str, options) -> str:
    close = difflib.get_close_matches(str(word), list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def read(path) -> dict:
    """The parsed file (TOML when the name ends in ``.toml``, else JSON)."""
    path = Path(path)
    if not path.is_file():
        raise InstancesFileError(f"{path}: no such file")
    if path.suffix.lower() in (".yaml", ".yml"):
        raise InstancesFileError(f"{path}: YAML is not a supported instances format; write the same document "
                                 "as TOML (.toml) or JSON (any other name); docs/instances.md shows both")
    text = path.read_text()
    try:
        if path.suffix.lower() == ".toml":
            import tomllib
            return tomllib.loads(text)
        return json.loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError and json.JSONDecodeError are ValueErrors
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise InstancesFileError(f"{path}: not valid {kind}: {err}") from None


def load(path) -> dict:
    """``{name: MarkovPair}`` of the pairs an instances file lists, in file order."""
    return pairs_from(read(path), str(path))


def pairs_from(doc, where: str = "instances") -> dict:
    """``{name: MarkovPair}`` from a parsed instances document (see the module docstring)."""
    if not isinstance(doc, dict):
        raise InstancesFileError(f"{where}: expected a table with a 'pairs' list")
    extra = sorted(set(doc) - {"schema", "pairs"})
    if extra:
        raise InstancesFileError(f"{where}: unknown top-level key {extra[0]!r}{_suggest(extra[0], ['schema', 'pairs'])}; "
                                 "expected 'pairs' (and optionally 'schema')")
    if doc.get("schema", SCHEMA) != SCHEMA:
        raise InstancesFileError(f"{where}: schema {doc['schema']!r} is not {SCHEMA!r}")
    entries = doc.get("pairs")
    if not isinstance(entries, list) or not entries:
        raise InstancesFileError(f"{where}: 'pairs' must be a non-empty list of pairs")
    out: dict = {}
    for i, entry in enumerate(entries):
        label = f"{where}: pair {i + 1}"
        if not isinstance(entry, dict):
            raise InstancesFileError(f"{label}: expected a table, got {type(entry).__name__}")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InstancesFileError(f"{label}: give each pair a 'name' (a non-empty string)")
        label = f"{where}: pair {name!r}"
        if name in out:
            raise InstancesFileError(f"{label}: two pairs share this name")
        out[name] = _pair(entry, name, label)
    return out


def _pair(entry: dict, name: str, label: str):
    from spectheory.markov import MarkovPair
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise InstancesFileError(f"{label}: unknown key {unknown[0]!r}{_suggest(unknown[0], _KEYS)}; "
                                 f"keys: {', '.join(sorted(_KEYS))}")
    ways = [k for k in ("target", "generator", "instance") if k in entry]
    if len(ways) != 1:
        raise InstancesFileError(f"{label}: give exactly one of 'target' and 'draft' tables, 'generator' (with "
                                 f"'args'), or 'instance'{f' (got {ways})' if ways else ''}")
    try:
        if "instance" in entry:
            pair = _builtin(entry, label)
        elif "generator" in entry:
            pair = _generated(entry, label)
        else:
            pair = _tables(entry, label)
    except InstancesFileError:
        raise
    except (ValueError, TypeError) as err:
        raise InstancesFileError(f"{label}: {err}") from None
    return MarkovPair(pair.target, pair.draft, name, dict(pair.params))


def _builtin(entry, label):
    from spectheory import instances
    _only(entry, {"name", "instance", "description"}, label, "with 'instance'")
    inst = entry["instance"]
    if inst not in instances.names():
        raise InstancesFileError(f"{label}: unknown built-in instance {inst!r}{_suggest(inst, instances.names())}; "
                                 f"known: {', '.join(instances.names())}")
    pair = instances.get(inst)
    return type(pair)(pair.target, pair.draft, pair.name, {"instance": inst})


def _generated(entry, label):
    from spectheory import pairs
    _only(entry, {"name", "generator", "args", "description"}, label, "with 'generator'")
    gen = entry["generator"]
    if gen not in GENERATORS:
        raise InstancesFileError(f"{label}: unknown generator {gen!r}{_suggest(gen, GENERATORS)}; "
                                 f"use one of {', '.join(GENERATORS)} (spectheory.pairs)")
    args = entry.get("args", {})
    if not isinstance(args, dict):
        raise InstancesFileError(f"{label}: 'args' must be a table of keyword arguments")
    import inspect
    fn = getattr(pairs, gen)
    accepted = [p for p in inspect.signature(fn).parameters if p != "name"]
    bad = [a for a in args if a not in accepted]
    if bad:
        raise InstancesFileError(f"{label}: {gen} has no argument {bad[0]!r}{_suggest(bad[0], accepted)}; "
                                 f"arguments: {', '.join(accepted)}")
    pair = fn(**args)
    return type(pair)(pair.target, pair.draft, pair.name, {"generator": gen, **args})


def _tables(entry, label):
    import numpy as np

    from spectheory.markov import MarkovSource
    from spectheory.pairs import pair_from_tables
    _only(entry, {"name", "order", "target", "draft", "description"}, label, "with tables")
    if "draft" not in entry:
        raise InstancesFileError(f"{label}: 'target' given without 'draft'")
    order = entry.get("order", 0)
    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise InstancesFileError(f"{label}: 'order' must be an integer ≥ 0, got {order!r}")
    tabs = {}
    for role in ("target", "draft"):
        try:
            t = np.atleast_2d(np.asarray(entry[role], dtype=np.float64))
        except (ValueError, TypeError):
            raise InstancesFileError(f"{label}: '{role}' must be rows of numbers (one row of V probabilities "
                                     "per state)") from None
        if t.ndim != 2:
            raise InstancesFileError(f"{label}: '{role}' must be a list of rows, got {t.ndim} dimensions")
        tabs[role] = t
    V = tabs["target"].shape[1]
    want = V ** order
    for role, t in tabs.items():
        if t.shape[0] != want:
            raise InstancesFileError(f"{label}: '{role}' has {t.shape[0]} row(s); an order-{order} source over "
                                     f"V = {V} tokens needs V**order = {want}")
    pair = pair_from_tables(tabs["target"], tabs["draft"], order=order, name="tables")
    assert isinstance(pair.target, MarkovSource)
    return type(pair)(pair.target, pair.draft, pair.name, {"tables": True})


def _only(entry, allowed, label, how):
    bad = sorted(set(entry) - allowed)
    if bad:
        raise InstancesFileError(f"{label}: key(s) {', '.join(map(repr, bad))} do not apply {how}")
