"""Issue 21 item 5, the two conformance holes, pinned by the behaviour itself.

(a) **Every sub-check against every control.** A check may bundle several tests (``tokens_per_call``:
a deterministic structure row and a chi-square of L; the probes: one row per probe and grade). A
bug that silences one of them can hide behind another that still fails the control, so the
aggregate verdict proves nothing about it. Here each sub-check's evidence is graded on its own: a
table (subject × check × sub-check → outcome) for spectheory's negative controls, the shipped
fixtures of ``tests/conformance_fixtures`` and the correct references, the structure rows'
exact values recomputed from the trace, and hand-computed small traces for the deterministic
branches (a draw in a zero-probability cell, a β ∈ {0, 1} state, a bad prefix, a repeated draft).

(b) **No silent shrink.** Every check's sample size, on every built-in instance, is what the
design says: the runs asked for, the calls actually made (counted by a stub that wraps the
sampler), and each evidence row's ``n`` equal to the size its test states (runs, calls, tokens,
attempts, bonus draws), recomputed from what the stub saw.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from spectheory import instances as inst
from spectheory.conformance import checks as C
from spectheory.conformance.kinds import multidraft as MD
from spectheory.conformance import references as R
from spectheory.conformance.adapters import BlockVerifier
from spectheory.conformance import INSTANCES, check_block_verifier, check_decoding_step, step_from_block_verifier
from spectheory.conformance.driver import Plan, run_sequential
from spectheory.conformance.kind import Block
from spectheory.conformance.kinds.block import BlockKind, BlockRuns
from spectheory.conformance.probes import base_probes, probe_list, run_probes, zero_mass_probes
from spectheory.conformance.runs import Trace
from spectheory.conformance.sequential import design

FIX = Path(__file__).parent / "conformance_fixtures"
TABLE_INSTANCE, TABLE_GAMMA, TABLE_SEED, TABLE_ALPHA = "markov1-V3-mix0.4", 2, 7, 1e-4
BLOCK_N, MULTI_N = 2000, 1000


def fixture(name: str, fn: str = "verify"):
    spec = importlib.util.spec_from_file_location(f"confsub_{name}", FIX / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, fn)


def short(check_id: str) -> str:
    return check_id.split(".", 1)[1]


# --- (a) the table: block verifiers -------------------------------------------------------------

#: the sub-checks of every block check, in the order of its evidence rows
BLOCK_SUBCHECKS = (("impossible_tokens", "exact"), ("first_tokens", "law"), ("token_law_by_state", "law"), ("block_law", "law"),
                   ("bonus_by_state", "law"), ("acceptance_by_state", "rate"), ("expected_tau", "mean"),
                   ("tokens_per_call", "structure"), ("tokens_per_call", "law"))
#: subject → one code per BLOCK_SUBCHECKS column, on markov1-V3-mix0.4, γ = 2, 2,000 runs, seed 7,
#: level 1e-4: F fails; . does not fail (pass or underpowered: a statistical test of a law the
#: subject has); 0 deterministic pass (no violating call); I info (nothing to test: no bonus); -
#: info, nothing to test on this instance (no token has p = 0: the impossible-token check; its
#: subjects are in SPARSE_TABLE).
BLOCK_TABLE = {
    "reference": "-......0.",
    "residual=norm(p)": "-FFF...F.",    # the correction from p repeats the rejected draft
    "accept=min(1,q/p)": "-FFF.FFFF",   # rejects where q < p, so the residual there has mass at x
    "no-bonus": "-..FIFFFF",            # γ accepts end on the last draft: a "repeat", no bonus
    "bonus-from-row-γ−1": "-FFFF..0.",
    "accept-u≤ratio": "-......0.",      # a probe control: the law holds (u = 0 has measure 0)
    "unguarded-residual": "-......0.",  # a probe control
    "residual-clamped-1e-5": "-......0.",  # impossible_tokens' control: a floor of 1e-5 on V = 3 is not seen
    "lossless:accept=p(x)": "-..F.FF0F",
    "fx:typical_acceptance": "-FFF.FF0F",
    "fx:bonus_wrong_row": "-FFFF..0.",
    "fx:nonstandard_lossless": "-..F.FF0F",
    "fx:unguarded_residual": "-......0.",
    "fx:hidden_generator": "-......0.",
    "fx:pure_python_sd": "-......0.",
}
#: the impossible-token check on the sparse instance (V = 4096, p on tokens 1..4, q also on 5..8),
#: γ = 3, 400 runs: F fails (an emitted token of probability 0), 0 passes (with power: the
#: detectable mass ≤ 1e-3 needs 2,302 tokens, so at 400 runs it is underpowered: U)
SPARSE_TABLE = {"reference": "U", "residual-clamped-1e-5": "F", "accept-u≤ratio": "U", "fx:pure_python_sd": "U"}


def emit_token_1(p, q, draft, rng):
    """A local bad sampler for the probe rows no shipped control fails: it rejects every draft and
    emits token 1 (outside a one-token vocabulary)."""
    rng.random()
    return [1]


def prefix_shifted(p, q, draft, rng):
    """A local bad sampler: the drafted tokens each shifted by one id, reported as accepted, then a
    bonus token (a block of γ + 1 tokens whose prefix is not the draft)."""
    rng.random()
    V = np.asarray(p).shape[-1]
    return [(int(x) + 1) % V for x in draft] + [V - 1]


def block_subject(name: str):
    """(callable, BlockVerifier options) of a table row."""
    if name == "local:emit-token-1":
        return emit_token_1, {}
    if name == "local:prefix-shifted":
        return prefix_shifted, {}
    if name == "reference":
        return R.reference_verifier, {}
    if name.startswith("fx:"):
        return fixture(name[3:]), ({"dtype": "float32"} if name == "fx:unguarded_residual" else {})
    return next(f for c, f, _ in R.CONTROLS if c == name), {}


@pytest.fixture(scope="module")
def block_traces():
    pair = inst.get(TABLE_INSTANCE)
    out = {}
    for name in BLOCK_TABLE:
        fn, kw = block_subject(name)
        r = BlockRuns(BlockVerifier(fn, name=name, **kw), pair, TABLE_GAMMA, C.first_n(pair.V), TABLE_SEED,
                      TABLE_INSTANCE)
        with np.errstate(all="ignore"):
            r.extend(BLOCK_N)
        assert r.crash is None, r.crash
        out[name] = r.trace()
    return out


def structure_violations(trace: Trace) -> tuple[int, int, int]:
    """Recomputed call by call: (calls whose emitted prefix is not the draft prefix, short calls
    whose last token equals the draft token at its position, calls with either)."""
    bad, rep, either = 0, 0, 0
    for e, d, L in zip(trace.emitted.tolist(), trace.draft.tolist(), trace.length.tolist()):
        b = e[:L - 1] != d[:L - 1]
        r = L <= trace.gamma and e[L - 1] == d[L - 1]
        bad, rep, either = bad + b, rep + r, either + (b or r)
    return bad, rep, either


def test_block_table_covers_every_check_and_its_declared_controls():
    assert {c for c, _ in BLOCK_SUBCHECKS} == {short(c.id) for c in C.CHECKS}
    assert all(len(codes) == len(BLOCK_SUBCHECKS) for codes in BLOCK_TABLE.values())
    for chk in C.CHECKS:
        cols = [i for i, (c, _) in enumerate(BLOCK_SUBCHECKS) if c == short(chk.id)]
        for ctl in chk.controls:  # every control the report relies on fails some sub-check here
            table = SPARSE_TABLE if chk.id == C.IMPOSSIBLE_ID else BLOCK_TABLE
            assert any((table[ctl][0] if table is SPARSE_TABLE else table[ctl][i]) == "F" for i in cols), \
                (chk.id, ctl)
    for i, (c, sub) in enumerate(BLOCK_SUBCHECKS):  # every sub-check is failed by some subject
        table = [codes[0] for codes in SPARSE_TABLE.values()] if c == "impossible_tokens" else \
            [codes[i] for codes in BLOCK_TABLE.values()]
        assert "F" in table, (c, sub)


@pytest.mark.parametrize("subject", list(SPARSE_TABLE))
def test_impossible_tokens_on_the_sparse_instance(subject):
    fn, kw = block_subject(subject)
    pair = inst.get("iid-V4096-sparse4")
    r = BlockRuns(BlockVerifier(fn, name=subject, **kw), pair, 3, C.first_n(pair.V), TABLE_SEED, pair.name)
    r.extend(400)
    (e,) = C.CHECKS[0].run(r.trace(), pair, TABLE_ALPHA)
    code = SPARSE_TABLE[subject]
    assert e.outcome == {"F": "fail", "U": "underpowered", "0": "pass"}[code], (subject, e.outcome, e.note)
    assert e.n == int(r.trace().length.sum())
    if code == "F":
        bad = int(e.measured)
        assert bad == r.impossible and bad > 0


@pytest.mark.parametrize("subject", list(BLOCK_TABLE))
def test_every_block_subcheck_against_every_control(block_traces, subject):
    trace, pair = block_traces[subject], inst.get(TABLE_INSTANCE)
    got = []
    for chk in C.CHECKS:
        ev = chk.run(trace, pair, TABLE_ALPHA)
        names = [sub for c, sub in BLOCK_SUBCHECKS if c == short(chk.id)]
        assert len(ev) == len(names), (chk.id, [e.test for e in ev])
        got.extend(ev)
    bad, rep, either = structure_violations(trace)
    for (check, sub), code, e in zip(BLOCK_SUBCHECKS, BLOCK_TABLE[subject], got):
        where = f"{subject}: {check}/{sub} gave {e.outcome} (p={e.p_value}, measured={e.measured})"
        if code == "F":
            assert e.outcome == "fail", where
        elif code == "I":
            assert e.outcome == "info" and e.n == 0, where
        elif code == "-":
            assert e.outcome == "info" and "nothing to test" in e.note, where
        elif code == "0":
            assert e.outcome == "pass" and e.measured == 0.0, where
        else:
            assert e.outcome in ("pass", "underpowered"), where
        if (check, sub) == ("tokens_per_call", "structure"):
            # deterministic: its value is the number of violating calls, recomputed here
            assert e.mode == "mc" and e.n == trace.n_calls and e.measured == float(either), where
            assert (e.outcome == "fail") == (either > 0), where
            if either:
                assert f"{bad} calls emitted something other than the draft prefix; {rep} calls ended" in e.note


#: subject → (support codes, standard codes), one per probe in run_probes' order (8 base probes,
#: 4 zero-mass cases, 2 zero-mass cases with token 0 masked): a digit is the exact number of
#: violations (0: pass; a violation fails whether the probe was applied or not, and a crash fails
#: both grades); I: not applied, no violation (the forced values did not decide every step that
#: needed a random value — a decision with 0 < p(x) < q(x), a last token of two or more possible —,
#: nothing was drawn from the forced source, or draws escaped: the accounting of issues 26 and 35).
PROBE_TABLE = {
    "reference": ("00000000000000", "00000000000000"),
    "residual=norm(p)": ("00000000000000", "00000000000000"),
    "accept=min(1,q/p)": ("11110000000000", "11110010000000"),
    "no-bonus": ("00000000000000", "00001110000000"),  # no bonus: valid ids, not Alg. 1's output
    "bonus-from-row-γ−1": ("00000010000000", "00000000000000"),
    "accept-u≤ratio": ("10100000000000", "10100000000000"),
    "unguarded-residual": ("00000000111111", "00000000111111"),  # a crash fails both grades
    "residual-clamped-1e-5": ("10010000000000", "00000000000000"),  # token 0 keeps mass 1e-5: u = 0 picks it
    "lossless:accept=p(x)": ("00000000000000", "00000010000000"),
    "fx:typical_acceptance": ("IIII000IIIIIII", "IIII000IIIIIII"),  # accepts by a threshold: no uniform decides
    "fx:bonus_wrong_row": ("00000010000000", "00000000000000"),
    "fx:nonstandard_lossless": ("00000000000000", "00000010000000"),
    "fx:unguarded_residual": ("00000000111111", "00000000111111"),
    "fx:hidden_generator": ("IIIIIIIIIIIIII", "IIIIIIIIIIIIII"),
    "fx:pure_python_sd": ("00000000000000", "00000000000000"),
    "local:emit-token-1": ("00001100IIIIII", "00000010IIIIII"),  # one uniform for a decision and a token
    "local:prefix-shifted": ("0000000IIIIIII", "22220011111111"),  # prefix off the draft (+ must-reject rows)
}


def _block_probes(fn, **kw):
    kind = BlockKind(fn, name=getattr(fn, "__name__", "subject"), **kw)
    return run_probes(kind, kind.sampler)[:2]


def test_probe_table_covers_every_probe_and_the_declared_probe_controls():
    kind = BlockKind(R.reference_verifier)
    n_probes = len(probe_list(kind.sampler))
    assert n_probes == len(base_probes()) + 4 + 2
    assert all(len(s) == len(t) == n_probes for s, t in PROBE_TABLE.values())
    for c in kind.controls():
        if "support probes" in c.roles:
            assert set(PROBE_TABLE[c.name][0]) - {"0", "I"}, c.name
        if "standard probes" in c.roles:
            assert set(PROBE_TABLE[c.name][1]) - {"0", "I"}, c.name
    for grade in (0, 1):  # every probe row that can fail a sampler is failed by some subject
        failed = {i for codes in PROBE_TABLE.values() for i, c in enumerate(codes[grade]) if c not in "0I"}
        can_fail = set(range(n_probes)) - ({7} if grade == 0 else set())  # support at the tie: no subject here
        assert can_fail <= failed, (grade, sorted(can_fail - failed))


@pytest.mark.parametrize("subject", list(PROBE_TABLE))
def test_every_probe_row_against_every_control(subject):
    fn, kw = block_subject(subject)
    with np.errstate(all="ignore"):
        support, standard = _block_probes(fn, **kw)
    for grade, rows, codes in (("support", support, PROBE_TABLE[subject][0]),
                               ("standard", standard, PROBE_TABLE[subject][1])):
        assert len(rows) == len(codes)
        for e, code in zip(rows, codes):
            where = f"{subject} {grade} probe {e.instance!r}: {e.outcome}, measured {e.measured}"
            if code == "I":
                assert e.outcome == "info", where
            else:
                assert e.mode == "exact" and e.claimed == 0 and e.measured == int(code), where
                assert e.outcome == ("pass" if code == "0" else "fail"), where


def test_escaped_uniform_fixture_fails_exactly_the_p0_u0_support_probe():
    pytest.importorskip("torch")
    support, standard = _block_probes(fixture("escaped_uniform_le"), adapter="logits", dtype="float32", batched=True,
                                      framework="torch")
    names = [e.instance for e in support]
    assert support[names.index("p=0 drafted token, u=0")].outcome == "fail"
    assert support[names.index("p=0 drafted token, u=0")].measured == 1


def test_a_crashing_fixture_fails_every_check_with_a_crash_row():
    pair = inst.get(TABLE_INSTANCE)
    runner = BlockRuns(BlockVerifier(fixture("crash_token0"), name="crash"), pair, 2, C.first_n(pair.V), 7,
                       TABLE_INSTANCE)
    plan = Plan(C.CHECKS, [Block(TABLE_INSTANCE, 2)], 0.01, design(200))
    ev, crash, _, _ = run_sequential(runner, pair, C.CHECKS, plan, f"{TABLE_INSTANCE} γ=2")
    assert crash is not None and "crash_token0.py:9 in verify" in crash.location
    for chk in C.CHECKS:
        assert [(e.outcome, e.p_value) for e in ev[chk.id]] == [("fail", None)], chk.id
        assert "crashed" in ev[chk.id][0].test


# --- (a) the table: multi-draft and tree verifiers ----------------------------------------------

MULTI_SUBCHECKS = ("impossible_tokens", "first_tokens", "token_law_by_state", "rule_block_law", "rule_expected_tau",
                   "structure")
#: (layout, K, tree, rule) → subject → codes per MULTI_SUBCHECKS column, then one per support
#: probe (the block kind's 14, every draft / tree node carrying the probe's token; markov1-V3-mix0.4,
#: γ = 2, 1,000 runs, seed 7, level 1e-4); codes as in BLOCK_TABLE.
MULTI_TABLE = {
    ("drafts", 2, None, "specinfer"): {
        "specinfer": "-....0" "00000000000000",
        "specinfer:residual-not-updated": "-FFFF0" "00000000000000",
        "first-draft-SD": "-..FF0" "00000000000000",
        "alive-not-filtered": "-....F" "00000000000000",
        "prefix-shifted": "-FFFFF" "00000000000000",
        "specinfer:accept-u≤ratio": "-....0" "20200000000000",  # token 0 accepted at both positions
        "specinfer:residual-clamped-1e-5": "-....0" "20210000000000",  # token 0 keeps mass: u = 0 picks it
    },
    ("tree", 1, (2, 2), "specinfer"): {
        "specinfer-tree": "-....0" "00000000000000",
        "specinfer-tree:residual-not-updated": "-FFFF0" "00000000000000",
        "first-path-SD": "-..FF0" "00000000000000",
        "children-by-depth": "-..FFF" "00000000000000",
        "specinfer-tree:accept-u≤ratio": "-....0" "20200000000000",
        "specinfer-tree:residual-clamped-1e-5": "-....0" "20210000000000",
    },
    ("drafts", 3, None, "kseq"): {
        "kseq": "-....0" "00000000000000",
        "fx:kseq_rho_one": "-FFFF0" "00000000000000",
        "fx:multidraft_specinfer_numpy": "-...F0" "00000000000000",  # lossless, another rule
    },
}


def _multi_probes(fn, K, tree, gamma):
    kind = MD.MultiDraftKind(fn, name=getattr(fn, "__name__", "subject"), K=K, tree=tree)
    kind.run_gammas = (gamma,)
    return run_probes(kind, kind.sampler)[0]


def multi_subject(name: str, tree):
    if name == "specinfer":
        return MD.multiround_drafts()
    if name == "specinfer-tree":
        return MD.multiround_tree()
    if name == "kseq":
        return MD.kseq_verifier
    if name.startswith("fx:"):
        return fixture(name[3:])
    return next(c[2] for c in MD.CONTROLS if c[0] == name)


def on_tree_violations(drafts_seen, emitted, tree) -> int:
    """Recomputed from what the verifier was given: calls whose emitted prefix is on no draft
    (no tree path)."""
    bad = 0
    for seen, out in zip(drafts_seen, emitted):
        prefix = tuple(out[:-1])
        if tree is None:
            ok = any(tuple(d[:len(prefix)]) == prefix for d in seen)
        else:
            tokens, parents = seen
            paths, path_of = {()}, []
            for j, par in enumerate(parents):
                path_of.append((() if par < 0 else path_of[par]) + (int(tokens[j]),))
                paths.add(path_of[-1])
            ok = prefix in paths
        bad += not ok
    return bad


def test_multi_table_covers_every_check_and_its_declared_controls():
    for (layout, K, tree, rule), rows in MULTI_TABLE.items():
        checks = MD.lossless_checks(tree) + MD._rule_checks(rule, K, tree)
        assert tuple(short(c.id) for c in checks) == MULTI_SUBCHECKS
        for chk in checks:
            i = MULTI_SUBCHECKS.index(short(chk.id))
            for ctl in chk.controls:
                if ctl in rows and chk.id != C.IMPOSSIBLE_ID:  # its control shows on the sparse instance
                    assert rows[ctl][i] == "F", (layout, chk.id, ctl)
        mine = [c[0] for c in MD.CONTROLS if c[1] == layout and (tree is not None or K >= c[5])]
        if rule == "specinfer":  # every control of the layout is in the table
            assert set(mine) <= set(rows), set(mine) - set(rows)


@pytest.mark.parametrize("key,subject", [(k, s) for k, rows in MULTI_TABLE.items() for s in rows],
                         ids=lambda x: x if isinstance(x, str) else f"{x[0]}-K{x[1]}-{x[3]}")
def test_every_multidraft_subcheck_against_every_control(key, subject):
    layout, K, tree, rule = key
    pair = inst.get(TABLE_INSTANCE)
    fn = multi_subject(subject, tree)
    seen, outs = [], []

    if tree is None:
        def recording(p, q, drafts, rng):
            seen.append(np.array(drafts).tolist())
            out = fn(p, q, drafts, rng)
            outs.append([int(t) for t in out])
            return out
    else:
        def recording(p, q, tokens, parents, rng):
            seen.append((np.array(tokens).tolist(), np.array(parents).tolist()))
            out = fn(p, q, tokens, parents, rng)
            outs.append([int(t) for t in out])
            return out

    v = MD.MultiDraftVerifier(recording, name=subject, K=K, tree=tree)
    runner = MD.MultiRuns(v, pair, TABLE_GAMMA, C.first_n(pair.V), TABLE_SEED, TABLE_INSTANCE)
    runner.extend(MULTI_N)
    assert runner.crash is None, runner.crash
    trace = runner.trace()
    checks = MD.lossless_checks(tree) + MD._rule_checks(rule, K, tree)
    codes = MULTI_TABLE[key][subject]
    for chk, code in zip(checks, codes):
        ev = chk.run(trace, pair, TABLE_ALPHA)
        assert len(ev) == 1, chk.id
        e, where = ev[0], f"{subject}: {chk.id} gave {ev[0].outcome} (p={ev[0].p_value})"
        if code == "F":
            assert e.outcome == "fail", where
        elif code == "0":
            assert e.outcome == "pass" and e.measured == 0.0, where
        elif code == "-":
            assert e.outcome == "info" and "nothing to test" in e.note, where
        else:
            assert e.outcome in ("pass", "underpowered"), where
        if short(chk.id) == "structure":
            assert e.mode == "exact" and e.n == trace.n_calls == len(outs)
            assert e.measured == float(on_tree_violations(seen, outs, tree)), where
    probes = _multi_probes(fn, K, tree, TABLE_GAMMA)
    assert len(probes) == len(codes) - len(MULTI_SUBCHECKS)
    for e, code in zip(probes, codes[len(MULTI_SUBCHECKS):]):
        assert e.measured == int(code) and e.outcome == ("pass" if code == "0" else "fail"), (subject, e.instance)


@pytest.mark.parametrize("K,tree", [(2, None), (1, (2, 2))])
def test_every_multidraft_probe_row_fails_a_local_bad_sampler(K, tree):
    """The rows no shipped control fails (u = 1−ulp, one-token vocabulary): a sampler that accepts
    the first drafted token whatever p says and then emits token 1 (outside V = 1) fails each
    exactly once; on the other rows its output is valid and, drawing nothing, it is not applied."""
    def accept_then_1(p, q, *rest):
        return [int(np.asarray(rest[0]).ravel()[0]), 1]

    probes = _multi_probes(accept_then_1, K, tree, 2)
    assert [(e.measured, e.outcome) for e in probes] == [(1, "fail")] * 6 + [(0.0, "info")] * 8


# --- (a) hand-computed small inputs for the deterministic branches -------------------------------

def hand_trace(name, gamma, emitted, draft=None, start=None, first=None, run_tokens=None):
    pair = inst.get(name)
    L = [len(e) for e in emitted]
    em = np.array([list(e) + [-1] * (gamma + 1 - len(e)) for e in emitted], dtype=np.int64)
    C_ = len(emitted)
    return Trace(name, gamma, pair.V, pair.n_states,
                 np.zeros(C_, dtype=np.int64) if start is None else np.asarray(start, dtype=np.int64),
                 np.ones(C_, dtype=bool) if first is None else np.asarray(first, dtype=bool), em,
                 np.asarray(L), None if draft is None else np.asarray(draft, dtype=np.int64),
                 np.zeros((0, 1), dtype=np.int64) if run_tokens is None else np.asarray(run_tokens, dtype=np.int64))


@pytest.mark.parametrize("emitted,bad,rep,either", [
    ([(0, 1, 2), (0, 2), (1,)], 0, 0, 0),                      # bonus, correction 2 ≠ 1, correction 1 ≠ 0
    ([(0, 1, 2), (0, 1), (1,)], 0, 1, 1),                      # (0, 1): ends on the rejected draft 1
    ([(0, 1, 2), (2, 0, 1), (1,)], 1, 0, 1),                   # (2, 0, 1): not the draft prefix (0, 1)
    ([(0, 1, 2), (0, 1), (2, 0, 1), (0,), (1, 1)], 2, 3, 4),   # (0,) repeats draft 0; (1, 1) both
])
def test_tokens_per_call_structure_on_hand_built_calls(emitted, bad, rep, either):
    """iid-V3-equal (p = q: every draft accepted, P(τ = 2) = 1 at γ = 2), drafts (0, 1)."""
    t = hand_trace("iid-V3-equal", 2, emitted, draft=[(0, 1)] * len(emitted))
    structure, law = C.tokens_per_call(t, inst.get("iid-V3-equal"), 0.01)
    assert (structure.n, structure.claimed, structure.measured) == (len(emitted), 0.0, float(either))
    assert structure.outcome == ("fail" if either else "pass")
    if either:
        assert structure.note.startswith(f"{bad} calls emitted something other than the draft prefix; "
                                         f"{rep} calls ended on the rejected draft token")
    # the law of L: every first call must have L = 3; the others are draws in zero-probability cells
    short_calls = sum(len(e) < 3 for e in emitted)
    assert law.n == len(emitted)
    assert law.outcome == ("fail" if short_calls else "pass")
    assert law.measured == pytest.approx(short_calls / len(emitted))


def test_tokens_per_call_of_a_decoding_step_has_only_the_law():
    t = hand_trace("iid-V3-equal", 2, [(0, 1, 2), (2, 2, 2)])
    (law,) = C.tokens_per_call(t, inst.get("iid-V3-equal"), 0.01)
    assert law.n == 2 and law.outcome == "pass"


def test_first_tokens_on_hand_built_runs():
    """iid-V3-disjoint: p = (½, ½, 0), N = 4, so each of the 16 sequences over {0, 1} has p^N = 1/16;
    a run with token 2 (p = 0) is left out of the statistic — the impossible-token check fails it,
    with certainty — and the two others are tested: TV = ½(2(1/2 − 1/16) + 14/16)."""
    runs = [(0, 1, 0, 1), (1, 1, 0, 0), (2, 0, 0, 0)]
    t = hand_trace("iid-V3-disjoint", 1, [(0, 0)] * 3, run_tokens=runs)
    e = C.first_tokens(t, inst.get("iid-V3-disjoint"), 0.01)
    assert (e.n, e.outcome) == (2, "underpowered") and "1 run(s) with a token of probability 0 left out" in e.note
    assert e.measured == pytest.approx(0.875)
    ok = C.first_tokens(hand_trace("iid-V3-disjoint", 1, [(0, 0)] * 2, run_tokens=runs[:2]),
                        inst.get("iid-V3-disjoint"), 0.01)
    assert ok.outcome != "fail" and ok.n == 2


def test_block_law_counts_a_block_off_the_support():
    """iid-V3-disjoint at γ = 1: q drafts 2 (p = 0), always rejected; the correction is 0 or 1
    (½ each). A block (2, 0) lies off the enumerated support."""
    t = hand_trace("iid-V3-disjoint", 1, [(0,), (1,), (0,), (2, 0)])
    e = C.block_law(t, inst.get("iid-V3-disjoint"), 0.01)
    assert (e.n, e.outcome, e.p_value) == (4, "fail", 0.0)
    assert e.measured == pytest.approx(0.5 * (abs(2 / 4 - 0.5) + abs(1 / 4 - 0.5) + 1 / 4))
    ok = C.block_law(hand_trace("iid-V3-disjoint", 1, [(0,), (1,), (0,)]), inst.get("iid-V3-disjoint"), 0.01)
    assert ok.outcome != "fail" and ok.n == 3


def test_bonus_by_state_on_hand_built_calls():
    """iid-V3-equal, γ = 1: every call accepts; bonus tokens 0, 2, 2 against p = (.2, .3, .5)."""
    pair = inst.get("iid-V3-equal")
    e = C.bonus_by_state(hand_trace("iid-V3-equal", 1, [(0, 0), (1, 2), (2, 2), (1,)]), pair, 0.01)
    assert e.n == 3  # the short call has no bonus
    assert e.measured == pytest.approx(0.5 * (abs(1 / 3 - 0.2) + 0.3 + abs(2 / 3 - 0.5)))
    none = C.bonus_by_state(hand_trace("iid-V3-equal", 1, [(1,), (2,)]), pair, 0.01)
    assert (none.outcome, none.n) == ("info", 0)
    # iid-V3-disjoint: a bonus token 2 has p = 0
    bad = C.bonus_by_state(hand_trace("iid-V3-disjoint", 1, [(2, 2), (0,)]), inst.get("iid-V3-disjoint"), 0.01)
    assert (bad.n, bad.outcome, bad.p_value) == (1, "fail", 0.0)


def test_acceptance_by_state_on_hand_built_calls():
    """iid-V3-equal: β = 1, so a single rejection violates a β ∈ {0, 1} state exactly."""
    pair = inst.get("iid-V3-equal")
    ok = C.acceptance_by_state(hand_trace("iid-V3-equal", 2, [(0, 1, 2), (2, 2, 0)]), pair, 0.01)
    assert (ok.n, ok.outcome, ok.claimed, ok.measured) == (4, "pass", 1.0, 1.0)
    bad = C.acceptance_by_state(hand_trace("iid-V3-equal", 2, [(0, 1, 2), (2, 1)]), pair, 0.01)
    # attempts: 2 + 2 (the second call tried twice, accepted once); accepts 3
    assert (bad.n, bad.outcome, bad.measured) == (4, "fail", 0.75)
    assert "1 states with β∈{0,1} violated" in bad.test
    # iid-V3-disjoint: β = 0, an acceptance is a violation
    dis = C.acceptance_by_state(hand_trace("iid-V3-disjoint", 1, [(0,), (2, 0)]), inst.get("iid-V3-disjoint"), 0.01)
    assert (dis.n, dis.outcome, dis.measured) == (2, "fail", 0.5)


def test_expected_tau_on_hand_built_calls():
    """iid-V3-equal, γ = 2: E[τ] = 2; τ = (2, 2, 1) gives d = (0, 0, −1), se = std(d)/√3 = 1/3,
    z = 1, p = 2·(1 − Φ(1))."""
    from scipy.stats import norm
    e = C.expected_tau(hand_trace("iid-V3-equal", 2, [(0, 1, 2), (1, 1, 1), (0, 2)]), inst.get("iid-V3-equal"),
                       0.01)
    assert (e.n, e.claimed) == (3, pytest.approx(2.0))
    assert e.measured == pytest.approx(5 / 3)
    assert e.p_value == pytest.approx(2 * norm.sf(1.0))


def test_token_law_by_state_leaves_a_zero_probability_token_to_the_impossible_token_check():
    """iid-V3-disjoint, γ = 1: an emitted token 2 (p = 0) is left out of the statistic and named;
    the impossible-token check fails it at once, with its call; n counts every other position."""
    pair = inst.get("iid-V3-disjoint")
    t = hand_trace("iid-V3-disjoint", 1, [(0,), (1,), (2,)])
    e = C.token_law_by_state(t, pair, 0.01)
    assert e.n == 5 and e.outcome != "fail" and "1 draw(s) of probability 0 left out" in e.note
    imp = C.impossible_tokens(t, pair)
    assert (imp.outcome, imp.measured, imp.n) == ("fail", 1.0, 3) and "position 0, token 2" in imp.note
    ok = C.token_law_by_state(hand_trace("iid-V3-disjoint", 1, [(0,), (1,), (1,)]), pair, 0.01)
    assert ok.outcome != "fail" and ok.n == 6


@pytest.mark.parametrize("K,tree", [(2, None), (1, (2, 2))])
def test_multidraft_structure_on_hand_built_calls(K, tree):
    """iid-V3-disjoint: q = (0, 0, 1), so every draft (every tree node) is token 2 and the paths
    are (), (2,), (2, 2). Six calls of one run each emit the prefixes (), (2,), (2, 2), (0,),
    (2, 0), (1,): three lie on no draft."""
    outs = [[0], [2, 0], [2, 2, 1], [0, 1], [2, 0, 1], [1, 1]]
    calls = iter(outs)

    def fixed(*args):
        return next(calls)

    pair = inst.get("iid-V3-disjoint")
    runner = MD.MultiRuns(MD.MultiDraftVerifier(fixed, name="fixed", K=K, tree=tree), pair, 2, 1, 0, pair.name)
    runner.extend(len(outs))
    assert runner.trace().on_tree.tolist() == [True, True, True, False, False, False]
    structure = MD._rule_checks("specinfer", K, tree)[2]
    (e,) = structure.run(runner.trace(), pair, 0.01)
    assert (e.n, e.claimed, e.measured, e.outcome) == (6, 0.0, 3.0, "fail")
    assert e.note == "3 calls emitted a prefix that is on no draft"


# --- (b) sample sizes: every check, every built-in instance -------------------------------------

class Counting:
    """Wraps a sampler; records the length of every block it returns, in call order."""

    def __init__(self, fn):
        self.fn, self.lengths = fn, []
        self.__name__ = "counting"

    def __call__(self, *args):
        out = self.fn(*args)
        self.lengths.append(len(out))
        return out


def runs_of(lengths, n_tokens):
    """Split a call sequence into runs (each run ends once it has emitted ≥ n_tokens tokens)."""
    runs, cur, got = [], [], 0
    for L in lengths:
        cur.append(L)
        got += L
        if got >= n_tokens:
            runs.append(cur)
            cur, got = [], 0
    assert not cur, "a run was left unfinished"
    return runs


def stated_n(lengths, gamma, runs: int, one_state: bool):
    """The sample size each test states, recomputed from the calls: runs for the laws of first
    tokens; the calls from state 0 (the first of each run; every call on an i.i.d. instance) for
    the laws of blocks and of L; calls; every completed token; every emitted token; attempts;
    bonus draws."""
    return {"runs": runs, "calls": len(lengths), "tokens": len(lengths) * (gamma + 1), "emitted": sum(lengths),
            "from state 0": len(lengths) if one_state else runs,
            "attempts": sum(min(L, gamma) for L in lengths), "bonus": sum(L == gamma + 1 for L in lengths)}


#: the size of each row: on an i.i.d. instance (one state) the block law and the law of L use every
#: call (each starts in state 0), elsewhere the first call of each run ("from state 0")
BLOCK_N_OF = {("impossible_tokens", 0): "emitted", ("first_tokens", 0): "runs", ("token_law_by_state", 0): "tokens",
              ("block_law", 0): "from state 0", ("bonus_by_state", 0): "bonus", ("acceptance_by_state", 0): "attempts",
              ("expected_tau", 0): "calls", ("tokens_per_call", 0): "calls", ("tokens_per_call", 1): "from state 0"}
ALL_INSTANCES = tuple(inst.names())
SMALL_RUNS = 120


#: what each evidence row's note says it tested: (check, row) → (pattern, which group is its n)
STATED = {("first_tokens", 0): (r"^(\d+) independent runs", 1),
          ("block_law", 0): (r"^(?:first call of (\d+) runs|every call \((\d+);)", None),
          ("tokens_per_call", 1): (r"(?:first call of (\d+) runs|every call \((\d+);)", None),
          ("impossible_tokens", 0): (r"^(\d+) emitted tokens", 1),
          ("acceptance_by_state", 0): (r"^(\d+) attempts in (\d+) calls", 1),
          ("expected_tau", 0): (None, None), ("rule_block_law", 0): (r"^first call of (\d+) runs", 1),
          ("bonus_by_state", 0): (r"^(\d+) bonus tokens", 1)}


def assert_stated(check, j, e):
    """The size a row's note states is its n (token_law_by_state: calls × positions)."""
    if check == "token_law_by_state":
        m = re.match(r"^(\d+) calls × (\d+) positions", e.note)
        assert int(m.group(1)) * int(m.group(2)) == e.n, e.note
        return
    pat, grp = STATED.get((check, j), (None, None))
    if pat is not None and e.outcome != "info":
        m = re.search(pat, e.note)
        got = int(m.group(grp)) if m and grp else int(next(g for g in m.groups() if g)) if m else None
        assert got == e.n, (check, j, e.n, e.note)


def assert_sizes(ev_by_check, lengths, R_, gamma, n_tokens, n_of, one_state):
    runs = runs_of(lengths, n_tokens)
    assert len(runs) == R_
    sizes = stated_n([L for r in runs for L in r], gamma, R_, one_state)
    for cid, ev in ev_by_check.items():
        assert len(ev) == sum(c == short(cid) for c, _ in n_of), cid
        for j, e in enumerate(ev):
            key = n_of[(short(cid), j)]
            if e.outcome == "info" and short(cid) == "impossible_tokens":
                assert "nothing to test" in e.note
            assert e.n == sizes[key], (cid, j, key, e.n, sizes)
            assert_stated(short(cid), j, e)


@pytest.mark.parametrize("name", ALL_INSTANCES)
def test_block_checks_use_every_run_and_call_on_every_instance(name):
    """On every built-in instance, γ ∈ {1, 3}: the runner makes the runs asked for, the trace holds
    every call the sampler answered, and each check's n is the size it states."""
    pair = inst.get(name)
    for gamma in (1, 3) if pair.V <= 4 else (1,):  # V ≥ 50: γ = 1 (block_law enumerates V^(γ+1) blocks)
        stub = Counting(R.reference_verifier)
        N = C.first_n(pair.V)
        runner = BlockRuns(BlockVerifier(stub, name="counting"), pair, gamma, N, 3, name)
        runner.extend(SMALL_RUNS)
        trace = runner.trace()
        assert runner.calls == len(stub.lengths) == trace.n_calls
        assert trace.n_runs == int(trace.first.sum()) == SMALL_RUNS and trace.run_tokens.shape == (SMALL_RUNS, N)
        assert trace.length.tolist() == stub.lengths
        checks = C.CHECKS if pair.V <= 1000 else C.CHECKS[:1]  # the sparse V = 4096: the impossible-token check
        ev = {c.id: c.run(trace, pair, 0.01) for c in checks}
        assert_sizes(ev, stub.lengths, SMALL_RUNS, gamma, N, BLOCK_N_OF, pair.n_states == 1)


def test_first_n_is_the_largest_n_with_at_most_81_cells():
    for name in ALL_INSTANCES:
        V = inst.get(name).V
        N = C.first_n(V)
        if V > 81:  # a large vocabulary: the first token alone
            assert N == 1, (name, V, N)
            continue
        assert 1 <= N <= 4 and V ** N <= 81 and (N == 4 or V ** (N + 1) > 81), (name, V, N)


def test_design_ends_at_n_and_looks_grow():
    for n in (50, 51, 100, 120, 199, 200, 625, 1000, 2500, 8000, 10_000, 10_001):
        d = design(n)
        assert d.looks[-1] == n and list(d.looks) == sorted(set(d.looks))
        assert sum(d.weights) == pytest.approx(1.0)


LOOK = re.compile(r"after (\d+) runs")


def check_report_sizes(report, stub, n, gammas, instances, n_of, kind="block"):
    """Every evidence row's n against the calls the stub answered, block by block, at the look
    the row states; the blocks' runs and calls against the stub's (the sparse instance runs at the
    largest γ only)."""
    blocks = report["run"]["blocks"]
    assert [(b["instance"], b["gamma"]) for b in blocks] == [
        (i, g) for i in instances for g in gammas if i != "iid-V4096-sparse4" or g == max(gammas)]
    assert sum(b["calls"] for b in blocks) == len(stub.lengths)
    pos = 0
    per_block = {}
    for b in blocks:
        lengths = stub.lengths[pos:pos + b["calls"]]
        pos += b["calls"]
        N = C.first_n(inst.get(b["instance"]).V)
        runs = runs_of(lengths, N)
        assert len(runs) == b["runs"] and b["runs"] in design(n).looks
        per_block[f"{b['instance']} γ={b['gamma']}"] = (runs, b["gamma"], inst.get(b["instance"]).n_states == 1)
    for claim in report["claims"]:
        if claim["id"].endswith("probes"):
            continue
        by_block: dict = {}
        for e in claim["evidence"]:
            by_block.setdefault(re.sub(r" (N|law)=\S+", "", e["instance"]), []).append(e)
        assert set(by_block) <= set(per_block), claim["id"]  # a check runs on the blocks the plan gives it
        for blk, rows in by_block.items():
            runs, g, one_state = per_block[blk]
            for j, e in enumerate(rows):
                R_ = int(LOOK.search(e["note"]).group(1))
                assert R_ in design(n).looks and R_ <= len(runs)
                sizes = stated_n([L for r in runs[:R_] for L in r], g, R_, one_state)
                key = n_of[(short(claim["id"]), j)]
                if kind == "step" and short(claim["id"]) == "tokens_per_call":
                    assert len(rows) == 1
                    key = "from state 0"  # no drafts seen: the law of L only
                assert e["n"] == sizes[key], (claim["id"], blk, j, e["n"], sizes[key])


def test_block_report_sizes_on_every_default_instance():
    """The whole pipeline (sequential looks, early stops) on the default instances: no evidence
    row tests fewer draws than the look it states."""
    stub = Counting(R.reference_verifier)
    n = 400
    rep = check_block_verifier(stub, n=n, gammas=(1, 3), instances=INSTANCES, controls=False, probes=False,
                               trial=False)
    check_report_sizes(rep, stub, n, (1, 3), INSTANCES, BLOCK_N_OF)


def test_decoding_step_report_sizes_on_every_default_instance():
    stub = Counting(R.reference_verifier)
    n = 200
    rep = check_decoding_step(step_from_block_verifier(stub, name="counting"), n=n, gammas=(2,),
                              instances=INSTANCES, controls=False, trial=False)
    check_report_sizes(rep, stub, n, (2,), INSTANCES, BLOCK_N_OF, kind="step")


MULTI_N_OF = {("impossible_tokens", 0): "emitted", ("first_tokens", 0): "runs", ("token_law_by_state", 0): "tokens",
              ("rule_block_law", 0): "runs", ("rule_expected_tau", 0): "calls", ("structure", 0): "calls"}


@pytest.mark.parametrize("K,tree", [(2, None), (1, (2, 2))])
def test_multidraft_report_sizes_on_every_default_instance(K, tree):
    from spectheory.conformance import check_multidraft_verifier
    fn = MD.multiround_drafts() if tree is None else MD.multiround_tree()
    stub = Counting(fn)
    n = 200
    gammas = MD.GAMMAS if tree is None else (len(tree),)
    rep = check_multidraft_verifier(stub, K=K, tree=tree, rule="specinfer", n=n, gammas=gammas,
                                    instances=MD.INSTANCES, controls=False, probes=False, trial=False)
    check_report_sizes(rep, stub, n, gammas, MD.INSTANCES, MULTI_N_OF)


@pytest.mark.parametrize("name", [n for n in ALL_INSTANCES if inst.get(n).V <= 4])
def test_multidraft_checks_use_every_run_and_call_on_every_instance(name):
    pair = inst.get(name)
    stub = Counting(MD.multiround_drafts())
    N = C.first_n(pair.V)
    runner = MD.MultiRuns(MD.MultiDraftVerifier(stub, name="counting", K=2), pair, 2, N, 3, name)
    runner.extend(SMALL_RUNS)
    trace = runner.trace()
    assert runner.calls == len(stub.lengths) == trace.n_calls == trace.on_tree.size
    assert trace.n_runs == int(trace.first.sum()) == SMALL_RUNS
    checks = MD.lossless_checks(None) + MD._rule_checks("specinfer", 2, None)
    assert_sizes({c.id: c.run(trace, pair, 0.01) for c in checks}, stub.lengths, SMALL_RUNS, 2, N, MULTI_N_OF, False)


def test_control_runs_are_the_stated_control_n():
    """Negative controls run max(n // 4, 1000) runs (or control_n) at most, on every block they
    are still needed on; a control that does not fail runs to the last look."""
    from spectheory.conformance.driver import run_controls
    from spectheory.conformance.kind import Control
    pair_names = ("iid-V3-equal", "iid-V1")
    plan = Plan(C.CHECKS, [Block(nm, 1) for nm in pair_names], 0.01, design(300))
    stubs = []

    class OneControl(BlockKind):
        """The block kind with one control: a correct sampler under a control's name."""

        def controls(self):
            return [Control("residual=norm(p)", R.reference_verifier, "a correct sampler as a control")]

        def control_sampler(self, control, for_probes=False):
            stubs.append(Counting(control.fn))
            return BlockVerifier(stubs[-1], name=control.name)

    # it never fails, so it runs every look on every block
    out = run_controls(OneControl(R.reference_verifier), plan, seed=1)
    assert len(stubs) == 1
    assert sum(len(runs_of(stub.lengths, C.first_n(3))) for stub in stubs) >= 300
    for cid, rows in out.items():
        for _, _, per_block in rows:
            assert [b for b, _ in per_block] == [f"{nm} γ=1" for nm in pair_names], cid
            for _, ev in per_block:
                for e in ev:
                    assert "after 300 runs" in e.note, (cid, e.note)
