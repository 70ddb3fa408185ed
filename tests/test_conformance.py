"""spectheory.conformance: a correct pure-Python sampler written here holds every check;
the broken rules fail every check they are relevant to; bugged copies of the correct sampler
are each caught by the check or probe that names the bug.

Statistics: each report splits α = 0.01 over each verdict's Monte Carlo tests (Bonferroni),
spends each test's level over the looks of the sequential design, and states the power (0.9)
and the deviation it detects; the assertions below use only the verdicts.
"""
import json

import numpy as np
import pytest

from spectheory import conformance as sc
from spectheory.conformance.adapters import BlockVerifier, VerifierOutputError, tokens_of
from spectheory.conformance.forced import ForcedUniforms, inverse_cdf


# --- a correct implementation, written from Leviathan et al. 2023, Alg. 1, in plain Python ----

def sample(weights, u):
    """Inverse CDF: first index whose cumulative weight exceeds u·total (never a zero weight)."""
    total = sum(weights)
    acc, target = 0.0, u * total
    last = max(j for j, w in enumerate(weights) if w > 0)
    for j, w in enumerate(weights):
        acc += w
        if w > 0 and acc > target:
            return j
    return last


def python_verifier(p, q, draft, rng, *, strict=True, bonus_row=0, guard=True):
    """Standard speculative sampling; the keywords insert the bugs of the bugged copies."""
    out = []
    for i, x in enumerate(draft):
        x = int(x)
        u = rng.random()
        ratio = min(1.0, p[i][x] / q[i][x])
        if (u < ratio) if strict else (u <= ratio):
            out.append(x)
            continue
        if guard:
            resid = [max(a - b, 0.0) for a, b in zip(p[i], q[i])]
            if sum(resid) <= 0:  # p = q after rounding: rejection had probability 0, use p
                resid = list(p[i])
            return out + [sample(resid, rng.random())]
        r = np.maximum(np.asarray(p[i]) - np.asarray(q[i]), 0.0)
        with np.errstate(invalid="ignore"):
            r = r / r.sum()  # NaN when the residual has no mass
        return out + [int(rng.choice(len(r), p=r))]
    return out + [sample(list(p[len(draft) + bonus_row]), rng.random())]


def bonus_from_wrong_row(p, q, draft, rng):
    return python_verifier(p, q, draft, rng, bonus_row=-1)


def accept_u_le_ratio(p, q, draft, rng):
    return python_verifier(p, q, draft, rng, strict=False)


def residual_nan(p, q, draft, rng):
    return python_verifier(p, q, draft, rng, guard=False)


SMALL = dict(instances=("markov1-V3-mix0.4", "iid-V3-disjoint", "iid-V3-equal", "iid-V1"), gammas=(2,))


@pytest.fixture(scope="module")
def python_report():
    """The pure-Python sampler, 10,000 runs per instance, broken rules at 2,500 runs each."""
    return sc.check_block_verifier(python_verifier, n=10_000, **SMALL)


def _claim(report, cid):
    return next(c for c in report["claims"] if c["id"] == f"conformance.{cid}")


def _evidence(report, cid, instance_prefix):
    return [e for e in _claim(report, cid)["evidence"] if e["instance"].startswith(instance_prefix)]


ALL_CHECKS = ("impossible_tokens", "first_tokens", "token_law_by_state", "block_law", "bonus_by_state", "acceptance_by_state",
              "expected_tau", "tokens_per_call", "support_probes", "standard_probes")


def test_pure_python_sampler_holds_every_check(python_report):
    verdicts = {c["id"]: c["verdict"] for c in python_report["claims"]}
    assert verdicts == {f"conformance.{k}": "holds" for k in ALL_CHECKS}, verdicts
    assert {g: v["verdict"] for g, v in python_report["verdicts"].items()} == {"lossless": "holds",
                                                                               "standard": "holds"}
    assert python_report["warnings"] == [] and python_report["crashes"] == []
    for c in python_report["claims"]:
        for e in c["evidence"]:
            if e["mode"] == "mc" and e["p_value"] is not None and e["outcome"] == "pass" and e["detectable"] is not None:
                assert e["power"] == 0.9 and e["alpha"] > 0 and e["detectable"] <= e["tolerance"] or \
                    "single-outcome" in e["test"]


def test_broken_rules_fail_every_relevant_check(python_report):
    """Every check lists its relevant negative controls, and each came out `fails`."""
    for check in sc.CHECKS:
        ctl = {k["name"]: k["verdict"] for k in _claim(python_report, check.id.split(".")[1])["controls"]}
        # the clamp control of the impossible-token check runs on the sparse instance only (not in SMALL)
        assert set(ctl) == (set() if check.id == "conformance.impossible_tokens" else set(check.controls))
        assert all(v == "fails" for v in ctl.values()), (check.id, ctl)
    # the lossless verifier with another rule must be told apart by every standard check but the
    # bonus law (its bonus is drawn from p too)
    for cid in ("block_law", "acceptance_by_state", "expected_tau", "tokens_per_call"):
        assert "lossless:accept=p(x)" in {k["name"] for k in _claim(python_report, cid)["controls"]}, cid
    for cid, names in (("support_probes", {"accept-u≤ratio", "unguarded-residual"}),
                       ("standard_probes", {"lossless:accept=p(x)"})):
        probes = {k["name"]: k["verdict"] for k in _claim(python_report, cid)["controls"]}
        assert set(probes) == names and all(v == "fails" for v in probes.values()), probes


def test_report_schema_and_json(python_report, tmp_path):
    from spectheory.sims.report import to_markdown
    from spectheory.judge.format import write_json
    assert python_report["schema"] == "spectheory.report/1"
    path = write_json(python_report, tmp_path / "r.json")
    back = json.loads(path.read_text())
    # lossless: first_tokens on two instances (not on iid-V3-disjoint: one token per call), token_law_by_state on
    # three; standard: 5 checks on three; iid-V1's tests are exact (no share of α); impossible_tokens is exact too
    assert back["run"]["n"] == 10_000 and back["run"]["mc_tests_in_registry"] == 2 + 3 + 5 * 3
    assert back["verdicts"]["lossless"]["verdict"] == "holds"
    assert "conformance.bonus_by_state" in to_markdown(back)


def test_bonferroni_split_over_checks_instances_gammas_and_looks(python_report):
    """Each verdict's α = 0.01 is split over its Monte Carlo tests, checks × the blocks that run
    them (lossless: 5 — first_tokens is not run on iid-V3-disjoint —, standard: 15; the tests on
    iid-V1 are exact and take no share), and each test's level over the looks of the sequential
    design: every Monte Carlo test of the subject and of the controls runs at w_k·α/tests, with
    Σ_k w_k = 1; with two draft lengths the split doubles."""
    from spectheory.conformance import sequential
    run = python_report["run"]
    per = {"lossless": 0.01 / 5, "standard": 0.01 / 15}
    assert run["alpha_per_test_per_verdict"] == pytest.approx(per, rel=1e-12)
    assert run["alpha_family"] == pytest.approx(0.01, rel=1e-12)
    shares = set(sequential.design(10_000).weights) | set(sequential.design(2_500).weights)
    assert sum(sequential.design(10_000).weights) == pytest.approx(1.0)
    for c in python_report["claims"]:
        for e in c["evidence"] + [e for k in c["controls"] for e in k["evidence"]]:
            if e["mode"] == "mc" and e["alpha"] is not None:
                assert any(e["alpha"] == pytest.approx(w * per[c["group"]], rel=1e-12) for w in shares), \
                    (c["id"], e["instance"], e["alpha"])
    two = sc.check_block_verifier(python_verifier, n=50, gammas=(1, 2), instances=("iid-V4-strong",), controls=False,
                                  probes=False)
    assert two["run"]["mc_tests_per_verdict"] == {"lossless": 4, "standard": 10}
    assert two["run"]["alpha_per_test_per_verdict"]["standard"] == pytest.approx(0.01 / 10, rel=1e-12)
    steps = sc.check_decoding_step(make_python_step, n=50, gammas=(1, 2), instances=("iid-V4-strong",), controls=False)
    assert steps["run"]["mc_tests_per_verdict"] == {"lossless": 4, "standard": 10}
    exact = sc.check_block_verifier(python_verifier, n=50, gammas=(1, 2), instances=("iid-V1",), controls=False,
                                    probes=False)
    assert exact["run"]["mc_tests_per_verdict"] == {"lossless": 0, "standard": 0}


def test_bonus_from_wrong_row_is_caught_by_bonus_by_state():
    """The bonus drawn from p at the last drafted position: invisible on i.i.d. instances,
    caught on the Markov instance by the bonus-law-by-state check (and the first-N law)."""
    r = sc.check_block_verifier(bonus_from_wrong_row, n=3000, instances=("markov1-V3-mix0.4", "iid-V4-strong"),
                                gammas=(2,), controls=False, probes=False)
    assert _claim(r, "bonus_by_state")["verdict"] == "fails"
    assert [e["outcome"] for e in _evidence(r, "bonus_by_state", "markov1")] == ["fail"]
    assert [e["outcome"] for e in _evidence(r, "bonus_by_state", "iid")] != ["fail"]  # i.i.d. hides it
    assert _claim(r, "first_tokens")["verdict"] == "fails"


def test_u_le_ratio_is_caught_by_the_p0_probe_only():
    """`u ≤ ratio` differs from `u < ratio` on a set of uniforms of measure 2^-53: no sample
    sees it, the forced u = 0 probe does (a p = 0 token is accepted)."""
    r = sc.check_block_verifier(accept_u_le_ratio, n=2000, instances=("markov1-V3-mix0.4",), gammas=(2,),
                                controls=False)
    probes = {e["instance"]: e for e in _claim(r, "support_probes")["evidence"]}
    assert probes["p=0 drafted token, u=0"]["outcome"] == "fail"
    assert "emitted token 0 has p = 0" in probes["p=0 drafted token, u=0"]["note"]
    assert probes["disjoint supports, u=0"]["outcome"] == "fail"
    assert all(e["outcome"] == "pass" for name, e in probes.items() if "u=0" not in name)
    assert all(c["verdict"] != "fails" for c in r["claims"] if not c["id"].endswith("probes"))
    assert r["verdicts"]["lossless"]["verdict"] == "fails" and "support_probes" in r["verdicts"]["lossless"]["summary"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_residual_nan_is_caught_by_the_zero_mass_probe(dtype):
    """p = q in exact arithmetic, p ≤ q after rounding: the unguarded residual is 0/0."""
    r = sc.check_block_verifier(residual_nan, dtype=dtype, instances=(), controls=False)
    ev = _claim(r, "support_probes")["evidence"]
    zero_mass = [e for e in ev if "zero-mass residual" in e["instance"]]
    assert zero_mass and all(e["outcome"] == "fail" and "NaN" in e["note"] for e in zero_mass)
    assert all(e["outcome"] == "pass" for e in ev if e not in zero_mass)
    assert all("test_conformance.py" in e["note"] for e in zero_mass)  # where it raised
    ok = sc.check_block_verifier(python_verifier, dtype=dtype, instances=(), controls=False)
    assert _claim(ok, "support_probes")["verdict"] == "holds"


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_probe_softmax_is_computed_in_the_verifiers_dtype(dtype):
    """The zero-mass probes predict the verifier's own rounding: BlockVerifier.softmax (and the
    probabilities a probe feeds a probs-adapter verifier) are computed in the verifier's dtype,
    so every value is representable there and differs from the float64 softmax somewhere; in
    that dtype each probe has p ≤ q everywhere and p < q at the drafted token."""
    from spectheory.conformance.adapters import softmax_in
    from spectheory.conformance.probes import zero_mass_probes
    v = BlockVerifier(python_verifier, dtype=dtype)
    z = np.random.default_rng(0).normal(0.0, 2.0, (20, 5))
    got = v.softmax(z)
    np.testing.assert_array_equal(got, got.astype(dtype).astype(np.float64))
    assert not np.array_equal(got, softmax_in(z, np.float64))
    probes = zero_mass_probes(v)
    assert probes
    for pr in probes:
        p_in, q_in = v.from_logits(pr.logits[0])[0], v.from_logits(pr.logits[1])[0]
        x = pr.draft[0]
        assert (p_in <= q_in).all() and p_in[x] < q_in[x], pr.name


def test_drafting_and_verifier_draw_independent_uniforms():
    """The driver gives the verifier its own generator (a sibling of the drafting one). With
    q = (½, ½) and γ = 1 the drafted token is 1 iff the drafting uniform is ≥ ½; a verifier that
    records one uniform per call sees the same indicator in about half of 400 calls (sd 0.025),
    not in all of them (the same uniforms)."""
    from spectheory.conformance.kinds.block import BlockRuns
    from spectheory.pairs import pair_from_tables
    pair = pair_from_tables([0.5, 0.5], [0.5, 0.5])
    for seed in (np.random.SeedSequence(3), 3):
        seen = []

        def record(p, q, draft, rng):
            seen.append(rng.random())
            return [int(draft[0])]

        runs = BlockRuns(BlockVerifier(record), pair, 1, 1, seed)
        runs.extend(400)
        tr = runs.trace()
        agree = np.mean((np.array(seen) >= 0.5) == (tr.draft[:, 0] == 1))
        assert 0.35 < agree < 0.65, (seed, agree)


def test_a_crashing_sampler_fails_instead_of_aborting():
    """A crash is reported with where it happened and counted as a crash: a failed run with no
    p-value, listed under report["crashes"], and the lossless verdict fails (kind crash). The
    sampler completes some trial calls (a sampler that completes none is a usage error, below)."""
    def crashes(p, q, draft, rng):
        if int(draft[0]) == 0:
            raise RuntimeError("boom")
        return sc.reference_verifier(p, q, draft, rng)
    r = sc.check_block_verifier(crashes, n=100, instances=("iid-V1",), gammas=(1,), controls=False, probes=False)
    assert r["verdicts"]["lossless"]["severity"] == "crash"
    assert all(c["verdict"] == "fails" for c in r["claims"])
    ev = r["claims"][0]["evidence"][0]
    assert "boom" in ev["note"] and ev["p_value"] is None and "crashed (not a statistical test)" in ev["test"]
    [crash] = r["crashes"]
    assert crash["location"].startswith(__file__) and "in crashes" in crash["location"]
    assert r["verdicts"]["lossless"]["verdict"] == "fails" and "crashed" in r["verdicts"]["lossless"]["summary"]
    assert r["run"]["trial"]["result"] in ("exception", "law-gross")  # its crashes reach the law test too


def test_a_sampler_that_never_completes_a_call_is_a_usage_error():
    """Issue 26: every trial call raises → a usage error naming the expected signature, not a
    report of crashes."""
    def never(p, q, draft, rng):
        raise RuntimeError("boom")
    with pytest.raises(sc.ConformanceUsageError, match="never completed a call") as err:
        sc.check_block_verifier(never, n=100, instances=("iid-V1",), gammas=(1,), controls=False, probes=False)
    assert "spectheory calls fn(p, q, draft_tokens, rng)" in err.value.hint


# --- adapters -------------------------------------------------------------------------------

def logit_verifier(p_logits, q_logits, draft, rng):
    """The same sampler taking batched float logits with -inf masking (softmax in float64)."""
    def softmax(z):
        z = np.asarray(z, dtype=np.float64)
        e = np.exp(z - z.max())
        return e / e.sum()
    p = [softmax(row) for row in p_logits[0]]
    q = [softmax(row) for row in q_logits[0]]
    return np.array([python_verifier(p, q, list(draft[0]), rng)])


@pytest.mark.parametrize("adapter,dtype", [("logits", "float32"), ("logprobs", "float16")])
def test_logit_adapters_batched(adapter, dtype):
    r = sc.check_block_verifier(logit_verifier, adapter=adapter, dtype=dtype, batched=True, n=10_000,
                                instances=("markov1-V4-topk2",), gammas=(3,), controls=False)
    bad = {c["id"]: c["verdict"] for c in r["claims"] if c["verdict"] not in ("holds", "not-checkable")}
    assert not bad, bad
    assert r["verdicts"]["lossless"]["verdict"] == "holds"


def test_adapter_representations():
    rows = np.array([[0.5, 0.5, 0.0]])
    v = BlockVerifier(python_verifier, adapter="logits", dtype="float32")
    z = v.represent(rows, "target")
    assert z.dtype == np.float32 and np.isneginf(z[0, 2]) and z[0, 0] == z[0, 1]
    v16 = BlockVerifier(python_verifier, adapter="probs", dtype="float16")
    assert v16.represent(rows, "draft").dtype == np.float16 and v16.represent(rows, "draft")[0, 2] == 0
    with pytest.raises(ValueError, match="adapter"):
        BlockVerifier(python_verifier, adapter="softmax")
    with pytest.raises(VerifierOutputError):
        tokens_of(np.array([0.5, 1.0]))
    assert tokens_of(np.array([[3, 1]]), batched=True) == (3, 1) and tokens_of((3, 1)) == (3, 1)
    with pytest.raises(VerifierOutputError, match="only the"):
        tokens_of((np.array([[3, 1]]), 1), batched=True)  # transformers returns (tokens, n_matches)


def test_forced_uniforms_extremes():
    f = ForcedUniforms("max")
    assert f.random() == 1 - 2.0 ** -53
    assert f.random(dtype=np.float32) == np.float32(1 - 2.0 ** -24)
    assert ForcedUniforms("zero").choice(3, p=[0.0, 0.5, 0.5]) == 1       # never a zero-mass token
    assert f.choice(3, p=[0.5, 0.5, 0.0]) == 1
    with pytest.raises(ValueError, match="NaN"):
        f.choice(2, p=[np.nan, np.nan])
    assert inverse_cdf([0.0, 1.0, 0.0], 0.0) == 1 and inverse_cdf([0.0, 1.0, 0.0], 1 - 2.0 ** -53) == 1
    with pytest.raises(ValueError):
        ForcedUniforms(1.0)


# --- decoding steps driven by fake language models --------------------------------------------

def make_python_step(target_lm, draft_lm, gamma, rng, *, bonus_row=0):
    """Decoding code that drafts by itself from the (fake) LMs' logits."""
    def softmax(z):
        z = np.asarray(z, dtype=np.float64)
        e = np.exp(z - z.max())
        return e / e.sum()

    def step(context):
        ctx, draft, qs = list(context), [], []
        for _ in range(gamma):
            q = softmax(draft_lm([ctx + draft])[0])
            qs.append(q)
            draft.append(sample(list(q), rng.random()))
        ps = [softmax(target_lm([ctx + draft[:i]])[0]) for i in range(gamma + 1)]
        return python_verifier(ps, qs, draft, rng, bonus_row=bonus_row)
    return step


def test_decoding_step_holds_and_its_bug_is_caught():
    r = sc.check_decoding_step(make_python_step, n=6000, instances=("markov1-V3-mix0.4",), gammas=(2,),
                               control_n=1500)
    # no token has p = 0 on this instance: the impossible-token check is not checkable there, the rest holds
    assert {c["id"]: c["verdict"] for c in r["claims"] if c["verdict"] != "holds"} == \
        {"conformance.impossible_tokens": "not-checkable"}
    assert all(k["verdict"] == "fails" for c in r["claims"] for k in c["controls"])
    bad = sc.check_decoding_step(lambda t, d, g, rng: make_python_step(t, d, g, rng, bonus_row=-1), n=3000,
                                 instances=("markov1-V3-mix0.4",), gammas=(2,), controls=False)
    assert _claim(bad, "bonus_by_state")["verdict"] == "fails"


def test_fake_lm_logits():
    from spectheory import instances as inst
    pair = inst.get("markov1-V4-topk2")
    lm = sc.MarkovLM(pair.draft)
    out = lm([[0], [0, 3]])
    assert out.shape == (2, 4) and out.dtype == np.float32
    np.testing.assert_allclose(np.exp(out[1]), pair.draft.conditional(3), rtol=1e-6)
    assert np.isneginf(out).any()  # top-k draft: masked tokens
    with pytest.raises(ValueError, match="batch"):
        lm([0, 1])


# --- command line ---------------------------------------------------------------------------

def test_cli_conformance(tmp_path):
    from typer.testing import CliRunner

    from spectheory.cli.main import app
    mod = tmp_path / "mysampler.py"
    mod.write_text("from spectheory.conformance import reference_verifier as verify\n")
    res = CliRunner().invoke(app, ["conformance", f"{mod}:verify", "--n", "300", "--gammas", "1",
                                   "--instances", "iid-V1,iid-V3-disjoint", "--no-controls", "--no-progress",
                                   "--json", str(tmp_path / "c.json"), "--markdown", str(tmp_path / "c.md")])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "c.json").read_text())
    assert rep["schema"] == "spectheory.report/1" and rep["run"]["gammas"] == [1]
    assert "probes" in res.output and "tokens_per_call" in res.output
    assert res.output.lstrip().startswith("LOSSLESS: ")  # the answer to "lossless?" comes first
    assert (tmp_path / "c.md").read_text().startswith("# spectheory conformance report")
    mod.write_text("from spectheory.conformance import reference_verifier, step_from_block_verifier\n"
                   "make_step = step_from_block_verifier(reference_verifier)\n")
    res = CliRunner().invoke(app, ["conformance", f"{mod}:make_step", "--kind", "step", "--n", "200",
                                   "--gammas", "2", "--instances", "iid-V1", "--no-controls", "--no-progress",
                                   "--json", str(tmp_path / "s.json"), "--markdown", str(tmp_path / "s.md")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "s.json").read_text())["run"]["kind"] == "decoding step"
    bad = CliRunner().invoke(app, ["conformance", "no_such_module:f", "--no-progress"])
    assert bad.exit_code != 0 and "cannot import" in bad.output


def test_check_is_inconclusive_when_its_controls_cannot_fail():
    """On a one-token vocabulary every broken rule emits the same tokens as the correct one, so
    no check can tell them apart: the subject's verdicts are downgraded, not `holds`."""
    r = sc.check_block_verifier(python_verifier, n=200, control_n=200, instances=("iid-V1",), gammas=(1,),
                                probes=False)
    first = _claim(r, "first_tokens")
    assert first["verdict"] == "inconclusive" and "cannot tell" in first["notes"][0]
    assert all(e["outcome"] == "pass" for e in first["evidence"])


def test_spectheorys_own_verifier_passes_every_probe_and_unforceable_draws_are_not_passed():
    """spectheory.verifiers.sd.speculative_verify (it insists on a numpy Generator: the forced
    source is one) survives every probe; a sampler drawing from a method the forced source
    cannot force (here gumbel) gets `info` (probe not applied), never `pass`."""
    from spectheory.verifiers.sd import speculative_verify
    r = sc.check_block_verifier(lambda p, q, d, rng: speculative_verify(p, q, list(d), seed=rng).tokens,
                                instances=(), dtype="float32", controls=False)
    assert [c["verdict"] for c in r["claims"]] == ["holds", "holds"]

    def gumbel_sampler(p, q, d, rng):
        rng.gumbel()
        return [0]
    r = sc.check_block_verifier(gumbel_sampler, instances=(), controls=False, trial=False)
    assert [c["verdict"] for c in r["claims"]] == ["inconclusive", "inconclusive"]
    assert {e["outcome"] for c in r["claims"] for e in c["evidence"]} == {"info"}


def greedy_sampler(p, q, draft, rng):
    """Deterministic (no random draw at all): keep x while p(x) ≥ q(x), else the argmax of p."""
    out = []
    for i, x in enumerate(draft):
        if p[i][int(x)] >= q[i][int(x)]:
            out.append(int(x))
            continue
        return out + [int(np.argmax(p[i]))]
    return out + [int(np.argmax(p[len(draft)]))]


def test_probes_not_applied_to_a_sampler_that_draws_nothing():
    """A sampler that draws no uniform at all never sees a forced value: every probe whose output
    needed a random value is `info` (not applied: it drew nothing), and so is the one-token
    vocabulary, where nothing is random (no forced value decided anything: never `pass`)."""
    r = sc.check_block_verifier(greedy_sampler, instances=(), controls=False, trial=False)
    rows = [e for c in r["claims"] for e in c["evidence"]]
    assert rows and all(e["outcome"] != "pass" for e in rows)
    assert all("drew nothing from the forced source" in e["note"] for e in rows if e["outcome"] == "info")
    assert {c["verdict"] for c in r["claims"]} == {"inconclusive"} and r["warnings"] == []


def test_a_generator_in_the_samplers_closure_is_routed():
    """A sampler drawing from a generator it closes over gets the forced uniforms anyway (the
    closure cell is swapped for a routed stand-in during the calls): the probes apply."""
    own = np.random.default_rng(0)
    r = sc.check_block_verifier(lambda p, q, d, rng: python_verifier(p, q, d, own), instances=(),
                                controls=False)
    assert [c["verdict"] for c in r["claims"]] == ["holds", "holds"]
    assert "closure variable" in r["run"]["routed_names"]
    assert r["warnings"] == []


def test_probes_not_applied_when_the_sampler_ignores_the_forced_source():
    """A sampler drawing from a generator hidden where the checker cannot route it (inside a
    dict) never sees the forced uniforms; its draws are detected (generator state compared
    around each probe call): every probe is `info` (not applied), never a pass, the probes are
    not `holds`, and the report warns that its statistics are not reproducible from the seed."""
    hidden = {"g": np.random.default_rng(0)}
    r = sc.check_block_verifier(lambda p, q, d, rng: python_verifier(p, q, d, hidden["g"]), instances=(),
                                controls=False)
    assert [c["verdict"] for c in r["claims"]] == ["inconclusive", "inconclusive"]
    assert {e["outcome"] for c in r["claims"] for e in c["evidence"]} == {"info"}


def test_probe_control_that_passes_every_probe_downgrades_the_probes(monkeypatch):
    """Without the zero-mass probes the unguarded-residual control passes every probe: the probes
    cannot tell it from a correct sampler, so the subject's probes verdict is inconclusive."""
    from spectheory.conformance import probes
    monkeypatch.setattr(probes, "zero_mass_probes", lambda verifier, **kw: [])
    r = sc.check_block_verifier(python_verifier, instances=())
    c = _claim(r, "support_probes")
    assert {k["name"]: k["verdict"] for k in c["controls"]}["unguarded-residual"] != "fails"
    assert c["verdict"] == "inconclusive" and any("unguarded-residual" in n for n in c["notes"])


@pytest.mark.slow
def test_default_configuration_is_powered_for_a_correct_sampler():
    """The defaults (6 instances × γ ∈ {1, 3}, n = 10,000, controls at 2,500) reach `holds` on
    every check for a correct sampler: no test is underpowered at its stated tolerance."""
    r = sc.check_block_verifier(python_verifier)
    # no token has p = 0 on this instance: the impossible-token check is not checkable there, the rest holds
    assert {c["id"]: c["verdict"] for c in r["claims"] if c["verdict"] != "holds"} == \
        {"conformance.impossible_tokens": "not-checkable"}
    assert sum(b["runs"] for b in r["run"]["blocks"]) < 12 * 10_000  # the sequential design stopped some early
