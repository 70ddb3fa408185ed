"""The ragged kind (`spectheory conformance FILE:FN --kind ragged`): batched rejection samplers in
the serving layout — drafts flattened, cumulative offsets, bonus tokens given or drawn inside,
output (B, max γ_b + 1) padded with −1 — run through the block kind's checks, controls and probes
(spectheory/conformance/kinds/ragged.py).

Statistics as everywhere in conformance: family-wise α = 0.01 per verdict (Bonferroni over checks ×
instances × γ, spent over the looks of the sequential design), every test powered (0.9) for its
tolerance at the n it stops at (Cohen's w 0.1 for laws) — the report states α, n and power per
row, and the correct samplers below reach `holds` only where every row is powered. Seeded: the
same seed gives the same report. Negative controls (the block kind's broken rules run request by
request, the rows of another request, uniforms shared across the requests of a call) must fail
every check they control (`test_every_control_fails_its_checks`)."""
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

FIX = Path(__file__).parent / "conformance_fixtures"
OK = "ragged_torch.py"
BUGS = "ragged_bugs.py"
#: powered for `holds` on both verdicts (γ ∈ {0, 1, 3}; one Markov instance, one edge case)
POWERED = ["--n", "8000", "--instances", "markov1-V3-mix0.4,iid-V3-disjoint", "--no-controls"]
#: the bugs fail at their first looks: a small n and the Markov instance (where rows differ by state)
SMALL = ["--n", "2000", "--instances", "markov1-V3-mix0.4", "--no-controls"]
TORCH = ["--kind", "ragged", "--framework", "torch"]


def _run(tmp_path, target, opts):
    from typer.testing import CliRunner

    from spectheory.cli.main import app
    out = tmp_path / "r.json"
    file, fn = target.split(":")
    res = CliRunner().invoke(app, ["conformance", f"{FIX / file}:{fn}", *opts, "--no-progress", "--json", str(out),
                                   "--markdown", str(tmp_path / "r.md")])
    return res, (json.loads(out.read_text()) if out.exists() else None)


@pytest.mark.parametrize("fn,opts", [
    ("rejection_sample", []),                                   # vLLM's layout: target (T, V), bonus given
    ("rejection_sample_bonus_inside", ["--bonus", "inside"]),   # target (T + B, V), the sampler draws the bonus
])
def test_correct_sampler_holds_both_verdicts(tmp_path, fn, opts):
    res, rep = _run(tmp_path, f"{OK}:{fn}", TORCH + opts + POWERED + ["--strict-standard"])
    assert res.exit_code == 0, res.output
    v = rep["verdicts"]
    assert (v["lossless"]["verdict"], v["standard"]["verdict"]) == ("holds", "holds")
    ids = {c["id"]: c for c in rep["claims"]}
    assert ids["ragged.cross_request_independence"]["verdict"] == "holds"
    # every probe applied with three requests per call: the forced values decided every step
    probes = ids["conformance.support_probes"]["evidence"]
    assert probes and all(e["outcome"] == "pass" for e in probes)
    run = rep["run"]
    assert run["gammas"] == [0, 1, 3] and run["alpha_per_test_per_verdict"]["lossless"] < 0.01
    assert all(b["runs"] <= 8000 for b in run["blocks"])
    # many requests per call: one call per ≥ 40 requests
    assert min(run["requests_per_call"].values()) >= 40
    # γ = 0 lanes are checked by the law checks (the request's bonus only)
    zero = [e for e in ids["conformance.first_tokens"]["evidence"] if "γ=0" in e["instance"]]
    assert zero and all(e["outcome"] == "pass" for e in zero)


BUG_CASES = [
    # (function, severity, exit status, the check whose rejection must be in the summary)
    ("padded_offsets", "law", 1, "first_tokens"),
    ("cu_off_by_one", "law", 1, "first_tokens"),
    ("bonus_after_rejection", "law", 1, "first_tokens"),
    ("draft_row_of_next_request", "law", 1, "token_law_by_state"),
    ("shared_uniforms", "law", 1, "ragged.cross_request_independence"),
    ("accept_le", "boundary", 3, "p=0 drafted token, u=0"),
    ("first_draft_lookup", "crash", 4, "ragged_bugs.py:36 in _sample"),
]


@pytest.mark.parametrize("fn,severity,status,text", BUG_CASES, ids=[c[0] for c in BUG_CASES])
def test_each_bug_fails_with_its_severity(tmp_path, fn, severity, status, text):
    res, rep = _run(tmp_path, f"{BUGS}:{fn}", TORCH + SMALL)
    assert res.exit_code == status, res.output
    v = rep["verdicts"]["lossless"]
    assert v["verdict"] == "fails" and v["severity"] == severity
    assert f"LOSSLESS: fails [{severity}]" in res.output
    assert text in v["summary"]
    # no probe reads pass unless its forced values decided every step of every request
    for c in rep["claims"]:
        if c["id"].endswith("probes") and fn == "shared_uniforms":
            assert all(e["outcome"] != "pass" for e in c["evidence"]), c["id"]


def test_shared_uniforms_are_seen_as_reuse(tmp_path):
    """Uniforms shared by the requests of a call: fewer uniforms than decisions needing one, in
    every call: the warning, and no probe applied (none reads pass)."""
    res, rep = _run(tmp_path, f"{BUGS}:shared_uniforms", TORCH + SMALL)
    assert any(w.startswith("uniforms reused across calls") for w in rep["warnings"])
    sp = next(c for c in rep["claims"] if c["id"] == "conformance.support_probes")
    assert sp["verdict"] == "inconclusive" and all(e["outcome"] == "info" for e in sp["evidence"])


@pytest.mark.parametrize("target,opts,hint", [
    (f"{BUGS}:block_signature", [], "a block verifier fn(p, q, draft_tokens, rng) is --kind block"),
    (f"{OK}:rejection_sample_bonus_inside", [], "--bonus inside"),
    (f"{OK}:rejection_sample", ["--offsets", "counts"], "--offsets cu"),
    (f"{OK}:rejection_sample_counts", [], "--offsets counts"),
    (f"{OK}:rejection_sample", ["--batched"], "--batched does not apply"),
])
def test_usage_mistakes_exit_2(tmp_path, target, opts, hint):
    res, rep = _run(tmp_path, target, TORCH + opts + SMALL)
    assert res.exit_code == 2, res.output
    assert rep is None
    assert hint in " ".join(res.output.split())


# --- in-process: controls, determinism, the layout ---------------------------------------------

def _api(fn, **kw):
    from spectheory.conformance import check_ragged_sampler
    return check_ragged_sampler(fn, **{"n": 2000, "instances": ("markov1-V3-mix0.4", "iid-V3-disjoint"), **kw})


def _reference(bonus="given"):
    from spectheory.conformance.kinds.ragged import from_block
    from spectheory.conformance.references import reference_verifier
    return from_block(reference_verifier, bonus, name="reference")


def test_every_control_fails_its_checks():
    """The negative controls run through the same pipeline in the subject's layout, and each
    fails every check it is a control of (so no check is inconclusive for want of power to
    reject): the block kind's broken rules request by request, the rows of the next request (a
    wrong offset), and uniforms shared across a call's requests."""
    rep = _api(_reference(), probes=True)
    for c in rep["claims"]:
        if c["id"] == "conformance.impossible_tokens":  # its control needs the sparse V = 4096 instance
            continue
        assert c["controls"], c["id"]
        for ctl in c["controls"]:
            assert ctl["verdict"] == "fails", (c["id"], ctl["name"])
    names = {ctl["name"] for c in rep["claims"] for ctl in c["controls"]}
    assert {"rows-of-next-request", "shared-uniform", "bonus-from-row-γ−1", "accept-u≤ratio"} <= names


def test_seeded_and_deterministic():
    kw = {"bonus": "inside", "controls": False, "probes": False, "n": 1000, "instances": ("markov1-V3-mix0.4",)}
    a = _api(_reference("inside"), seed=3, **kw)
    b = _api(_reference("inside"), seed=3, **kw)
    c = _api(_reference("inside"), seed=4, **kw)

    def rows(r):
        return [(e["instance"], e["p_value"], e["n"]) for cl in r["claims"] for e in cl["evidence"]]

    assert rows(a) == rows(b)
    assert rows(a) != rows(c)


def test_layout_seen_by_the_sampler():
    """What fn receives: drafts flattened in request order, cu the cumulative lengths, rows at the
    drafted positions (given bonus) or γ_b + 1 rows per request (bonus inside); γ_b = 0 included."""
    from spectheory.conformance.kinds.ragged import RaggedSampler, Request
    seen = {}

    def spy(ids, cu, q, p, bonus, rng):
        seen.update(ids=ids.tolist(), cu=cu.tolist(), q=q.shape, p=p.shape, bonus=bonus.tolist())
        out = np.full((len(cu), 3), -1)
        out[:, 0] = bonus
        return out

    V = 3
    eye = np.eye(V)
    reqs = [Request(eye[[0, 1]], eye[[2]], [2], 1), Request(eye[[2]], eye[:0], [], 0),
            Request(eye[[0, 1, 2]], eye[[1, 1]], [1, 0], 2)]
    out = RaggedSampler(spy).call_batch(reqs, np.random.default_rng(0))
    assert seen == {"ids": [2, 1, 0], "cu": [1, 1, 3], "q": (3, V), "p": (3, V), "bonus": [1, 0, 2]}
    assert out == [(1,), (0,), (2,)]

    def spy_inside(ids, counts, q, p, rng):
        seen.update(counts=counts.tolist(), p_inside=p.tolist())
        return np.array([[0, -1, -1]] * len(counts))

    RaggedSampler(spy_inside, offsets="counts", bonus="inside").call_batch(reqs, np.random.default_rng(0))
    assert seen["counts"] == [1, 0, 2]
    assert seen["p_inside"] == np.vstack([eye[[0, 1]], eye[[2]], eye[[0, 1, 2]]]).tolist()


@pytest.mark.parametrize("out,msg", [
    ([[0, -1, 1], [0, -1, -1]], "tokens after the placeholder"),
    ([[0, 1, 2], [0, -1, -1]], "emitted 3 tokens"),
    ([[0, -1, -1]], "shape (B, W)"),
    ([[0, 5, -1], [0, -1, -1]], "outside the vocabulary"),
])
def test_invalid_outputs_are_named(out, msg):
    from spectheory.conformance import VerifierOutputError
    from spectheory.conformance.kinds.ragged import rows_of
    with pytest.raises(VerifierOutputError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        rows_of(np.array(out), [1, 0], 3)


def test_independence_check_rejects_dependence_and_holds_on_independence():
    """cross_request_independence on synthetic traces: neighbours' first tokens drawn
    independently (holds, powered at n = 20,000) and equal half of the time (fails)."""
    from spectheory import instances as inst
    from spectheory.conformance.kinds.ragged import RaggedTrace, cross_request_independence
    pair = inst.get("iid-V3-equal")
    rng = np.random.default_rng(5)
    n = 20_000
    own = rng.choice(3, n, p=pair.target.table[0])
    other = rng.choice(3, n, p=pair.target.table[0])

    def trace(nb):
        t = RaggedTrace("iid-V3-equal", 1, 3, 1, np.zeros(n, np.int64), np.ones(n, bool), own[:, None],
                        np.ones(n, np.int64), np.zeros((n, 1), np.int64), np.zeros((n, 1), np.int64))
        t.nb_gamma, t.nb_state, t.nb_first = np.ones(n, np.int64), np.zeros(n, np.int64), nb
        return t

    assert cross_request_independence(trace(other), pair, 1e-3).outcome == "pass"
    copy = np.where(rng.random(n) < 0.5, own, other)
    assert cross_request_independence(trace(copy), pair, 1e-3).outcome == "fail"


def test_rerun_reproduces_a_crash():
    import spectheory.conformance
    from spectheory.conformance.replay import load
    rep = _api(load(str(FIX / f"{BUGS}:first_draft_lookup")), framework="torch", controls=False, probes=False,
               name=str(FIX / f"{BUGS}:first_draft_lookup"), instances=("markov1-V3-mix0.4",))
    call = rep["crashes"][0]["call"]
    with pytest.raises(IndexError):
        eval(call, {"spectheory": spectheory})  # noqa: S307  (the report's own line)



def test_assert_lossless_takes_the_ragged_kind():
    """spectheory.testing: kind="ragged" raises with the kind of failure and a rerunnable call."""
    from spectheory.testing import assert_lossless
    with pytest.raises(AssertionError) as err:
        assert_lossless(f"{FIX / BUGS}:accept_le", kind="ragged", framework="torch", n=1000,
                        instances=("markov1-V3-mix0.4",), controls=False)
    msg = str(err.value)
    assert "LOSSLESS: fails [boundary]" in msg and "spectheory.conformance.rerun(" in msg and "requests=" in msg


def test_a_ragged_sampler_run_as_a_block_verifier_gets_the_kind_hint(tmp_path):
    res, rep = _run(tmp_path, f"{OK}:rejection_sample", ["--framework", "torch"] + SMALL)
    assert res.exit_code == 2 and rep is None
    assert "is --kind ragged" in " ".join(res.output.split())
