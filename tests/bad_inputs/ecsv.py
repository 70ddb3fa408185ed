"""Bad-input rows of the ECSV family: rules and setups, the exact engine, closed forms,
Monte Carlo and the one-step verifier."""
from __future__ import annotations

import numpy as np

from spectheory.closed_forms import ecsv as cf
from spectheory.distributions import DistributionError
from spectheory.exact import ecsv as ex
from spectheory.montecarlo import ecsv as mc
from spectheory.pairs import perturbed_pair
from spectheory.rules import ecsv as R
from spectheory.verifiers import ecsv as vf

from spectheory.sims import sweep as _sw
from spectheory.validate import replay_ecsv as rp

from . import bad
from .validate import RUN

_MC_JOB = _sw.resolve("ecsv.mc")
_EXACT_JOB = _sw.resolve("ecsv.exact")
_SS = np.random.SeedSequence(0)
_JOB = {"source": "medium", "method": "ECSV-lite", "B": 2, "k": 2}

NAN, INF = float("nan"), float("inf")
PAIR = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)
SETUP = R.Setup(PAIR, R.ECSV_LITE, 2, 2)
TOK = np.array([[0, 1], [1, 1]])
Q = np.full((2, 2, 3), 1 / 3)


def _p(prefix):
    return PAIR.target.conditional(0)


ROWS = [
    # --- rules (spectheory.rules.ecsv) ---
    bad("ecsv.Drafter temperature=0", R.Drafter, "x", 0.0, match="temperature must lie in"),
    bad("ecsv.Drafter top_p=0", R.Drafter, "x", 1.0, 0.0, match="top_p must lie in"),
    bad("ecsv.Drafter top_p=NaN", R.Drafter, "x", 1.0, NAN, match="top_p must be finite"),
    bad("ecsv.Drafter quantize<0", R.Drafter, "x", 1.0, 1.0, -1.0, match="quantize_step must lie in"),
    bad("ecsv.Method kind", R.Method, "m", kind="tree", match="kind must be one of"),
    bad("ecsv.Method verify", R.Method, "m", verify="exact", match="verify must be one of"),
    bad("ecsv.Method alpha length", R.Method, "m", alpha=(1.0, 1.0), match="alpha must be a tuple of 4"),
    bad("ecsv.Method alpha NaN", R.Method, "m", alpha=(1.0, NAN, 0.0, 0.0), match=r"alpha\[1\] must be finite"),
    bad("ecsv.Method gamma inf", R.Method, "m", gamma=INF, match="gamma must be finite"),
    bad("ecsv.Method lam<0", R.Method, "m", lam=-0.5, match="lam .* must lie in"),
    bad("ecsv.Method R=-1", R.Method, "m", R=-1, match=r"R \(spot checks\) must be ≥ 0"),
    bad("ecsv.Method top_m=1.5", R.Method, "m", top_m=1.5, match="top_m .* must be an integer"),
    bad("ecsv.Method sd1 with R", R.Method, "m", kind="sd1", verify="rs", R=1, match="R and λ must be 0"),
    bad("ecsv.Method sd1 match", R.Method, "m", kind="sd1", verify="match", match="SD-1 is standard"),
    bad("ecsv.Method sd_multi rs", R.Method, "m", kind="sd_multi", verify="rs", match="matching the verifier"),
    bad("ecsv.Method empty name", R.Method, "", match="name must be a non-empty string"),
    bad("ecsv.Method.plan k=0", R.ECSV_LITE.plan, 0, match=r"k \(depth\) must be ≥ 1"),
    bad("ecsv.Method.regime", R.ECSV_LITE.regime, "beam", match="regime must be"),
    bad("ecsv.ecsv_spot R=0", R.ecsv_spot, 0, match=r"R \(spot checks\) must be ≥ 1"),
    bad("ecsv.Setup pair str", R.Setup, "pair", R.ECSV_LITE, 2, 2, exc=TypeError, match="pair must be a MarkovPair"),
    bad("ecsv.Setup method str", R.Setup, PAIR, "ECSV", 2, 2, exc=TypeError, match="method must be a Method"),
    bad("ecsv.Setup drafter str", R.Setup, PAIR, R.ECSV_LITE, 2, 2, "noisy", exc=TypeError,
        match="drafter must be a Drafter"),
    bad("ecsv.Setup B=0", R.Setup, PAIR, R.ECSV_LITE, 0, 2, match=r"B \(branches\) must be ≥ 1"),
    bad("ecsv.Setup B=2.5", R.Setup, PAIR, R.ECSV_LITE, 2.5, 2, match=r"B \(branches\) must be an integer"),
    bad("ecsv.Setup k=0", R.Setup, PAIR, R.ECSV_LITE, 2, 0, match=r"k \(depth\) must be ≥ 1"),
    bad("ecsv.Setup B=100", R.Setup, PAIR, R.ECSV_LITE, 100, 2, match="more than the 64"),
    bad("ecsv.Setup k=True", R.Setup, PAIR, R.ECSV_LITE, 2, True, exc=TypeError, match="bool"),
    # --- exact engine (spectheory.exact.ecsv) ---
    bad("ecsv.step_law setup str", ex.step_law, "s", exc=TypeError, match="setup must be a Setup"),
    bad("ecsv.step_law state=3", ex.step_law, SETUP, 3, match="state must be ≤ 2"),
    bad("ecsv.step_law state=-1", ex.step_law, SETUP, -1, match="state must be ≥ 0"),
    bad("ecsv.step_law too big", ex.step_law, R.Setup(PAIR, R.ECSV_LITE, 8, 8), match="too many to enumerate"),
    bad("ecsv.first_tokens n=0", ex.first_tokens_distribution, SETUP, 0, match="n_tokens must be ≥ 1"),
    bad("ecsv.first_tokens n=40", ex.first_tokens_distribution, SETUP, 40, match="too many to enumerate"),
    bad("ecsv.first_tokens start=5", ex.first_tokens_distribution, SETUP, 2, 5, match="start_state must be ≤ 2"),
    bad("ecsv.tv_to_target n=1.5", ex.tv_to_target, SETUP, 1.5, match="n_tokens must be an integer"),
    bad("ecsv.cross_entropy_first setup", ex.cross_entropy_first, None, 2, exc=TypeError, match="setup must be"),
    bad("ecsv.long_run start=9", ex.long_run, SETUP, 9, match="start_state must be ≤ 2"),
    bad("ecsv.horizon_means n=0", ex.horizon_means, SETUP, 0, match="n_steps must be ≥ 1"),
    bad("ecsv.step_kernel setup", ex.step_kernel, PAIR, exc=TypeError, match="setup must be"),
    bad("ecsv.exact.harness empty", ex.harness, {}, R.PLAN, (2,), (2,), (R.CLEAN,), match="non-empty dict"),
    bad("ecsv.exact.harness reading", ex.harness, {"a": PAIR}, R.PLAN, (2,), (2,), (R.CLEAN,), reading="x",
        match="reading must be"),
    bad("ecsv.exact.harness source", ex.harness, {"a": 3}, R.PLAN, (2,), (2,), (R.CLEAN,), exc=TypeError,
        match=r"sources\['a'\] must be a MarkovPair"),
    # --- closed forms (spectheory.closed_forms.ecsv) ---
    bad("ecsv.map_weights eps=0", cf.map_weights, [0.0, 0.2], 3, match=r"open interval \(0, 1\)"),
    bad("ecsv.map_weights eps=1", cf.map_weights, [1.0], 3, match=r"open interval \(0, 1\)"),
    bad("ecsv.map_weights eps NaN", cf.map_weights, [NAN], 3, match="finite"),
    bad("ecsv.map_weights V=1", cf.map_weights, [0.2], 1, match=r"V \(vocabulary size\) must be ≥ 2"),
    bad("ecsv.map_weights eps 2-D", cf.map_weights, [[0.2, 0.3]], 3, match="1-D vector"),
    bad("ecsv.binary_weights eps=1.5", cf.binary_weights, [1.5], match="≤ 1"),
    bad("ecsv.channel_law prior length", cf.channel_law, [0.2], 3, [0.5, 0.5], match="prior must have length"),
    bad("ecsv.channel_law prior not normalised", cf.channel_law, [0.2], 2, [0.5, 0.6], exc=DistributionError,
        match="does not sum to 1"),
    bad("ecsv.channel_law rho=2", cf.channel_law, [0.2], 2, None, 2.0, match=r"rho \(correlation\) must lie"),
    bad("ecsv.channel_law too big", cf.channel_law, [0.2] * 12, 8, match="too many to enumerate"),
    bad("ecsv.pattern_law shape", cf.pattern_law, np.full((2, 3), 1 / 6), 2, match=r"shape \(2,\)\*B"),
    bad("ecsv.pattern_law sum", cf.pattern_law, np.full((2, 2), 0.3), 2, match="probability array"),
    bad("ecsv.vote_scores V=1", cf.vote_scores, [1.0], 1, match="must be ≥ 2"),
    bad("ecsv.vote_accuracy weights str", cf.vote_accuracy, [0.2, 0.3], 2, "equal", match="weights must be None"),
    bad("ecsv.map_vote_mismatch eps=0", cf.map_vote_mismatch, [0.0], 2, match="open interval"),
    bad("ecsv.position_scores negative w", cf.position_scores, [0, 1], [1.0, -1.0], match="weights must be ≥ 0"),
    bad("ecsv.position_scores soft without q", cf.position_scores, [0, 1], [1.0, 1.0], None, 0.5,
        match="needs q_rows"),
    bad("ecsv.position_scores shapes", cf.position_scores, [0, 1, 1], [1.0, 1.0], match="same B branches"),
    bad("ecsv.vote_match_iid mismatched V", cf.vote_match_iid, [0.5, 0.5], [0.2, 0.3, 0.5], 3,
        exc=DistributionError, match="mismatched vocabularies"),
    bad("ecsv.vote_match_iid B=0", cf.vote_match_iid, [0.5, 0.5], [0.5, 0.5], 0, match=r"B \(branches\) must be ≥ 1"),
    bad("ecsv.vote_match_iid 2-D", cf.vote_match_iid, [[0.5, 0.5]], [[0.5, 0.5]], 2, match="1-D distributions"),
    bad("ecsv.single_branch_match NaN", cf.single_branch_match, [NAN, 1.0], [0.5, 0.5], exc=DistributionError,
        match="NaN"),
    bad("ecsv.prefix_length a>1", cf.prefix_length, [0.5, 1.5], match="≤ 1"),
    bad("ecsv.prefix_length empty", cf.prefix_length, [], match="at least one position"),
    bad("ecsv.budget_plan R=-1", cf.budget_plan, -1, 4, match=r"R \(spot checks\) must be ≥ 0"),
    bad("ecsv.budget_plan k=0", cf.budget_plan, 1, 0, match=r"k \(depth\) must be ≥ 1"),
    bad("ecsv.vtpo_parallel tokens<1", cf.vtpo_parallel, 1, 3, 0.5, match="tokens_per_step must be ≥ 1"),
    bad("ecsv.vtpo_sequential R=1.5", cf.vtpo_sequential, 1.5, 2.0, match="R_used must be an integer"),
    bad("ecsv.budget_ledger negative cost", cf.budget_ledger, [1.0, -1.0], 3.0, match="costs must be ≥ 0"),
    bad("ecsv.budget_ledger 2-D", cf.budget_ledger, [[1.0]], 3.0, match="1-D sequence"),
    # --- Monte Carlo (spectheory.montecarlo.ecsv) ---
    bad("ecsv.simulate setup str", mc.simulate, "s", 100, exc=TypeError, match="setup must be a Setup"),
    bad("ecsv.simulate n_steps=4", mc.simulate, SETUP, 4, match="n_steps must be ≥ 16"),
    bad("ecsv.simulate start=3", mc.simulate, SETUP, 100, start_state=3, match="start_state must be ≤ 2"),
    bad("ecsv.simulate seed=-1", mc.simulate, SETUP, 100, seed=-1, match="seed must be ≥ 0"),
    bad("ecsv.simulate seed str", mc.simulate, SETUP, 100, seed="x", exc=TypeError, match="seed must be None"),
    bad("ecsv.sample_first_tokens n_runs=0", mc.sample_first_tokens, SETUP, 0, 2, match="n_runs must be ≥ 1"),
    bad("ecsv.sample_first_tokens n_tokens=0", mc.sample_first_tokens, SETUP, 10, 0, match="n_tokens must be ≥ 1"),
    bad("ecsv.tables rs_exact too big", mc.tables, R.Setup(PAIR, R.ECSV_LITE_RS_EXACT, 8, 8),
        match="too many to enumerate"),
    bad("ecsv.sequence_counts token=V", mc.sequence_counts, [[0, 3]], 3, match="tokens must be ≤ 2"),
    bad("ecsv.sequence_counts 1-D", mc.sequence_counts, [0, 1], 3, match="2-D array"),
    bad("ecsv.plugin_tv shapes", mc.plugin_tv, [1, 2], [0.5, 0.3, 0.2], match="matching 1-D arrays"),
    bad("ecsv.plugin_tv_null n=0", mc.plugin_tv_null, [0.5, 0.5], 0, match="n must be ≥ 1"),
    bad("ecsv.harness empty", mc.harness, {}, match="non-empty dict"),
    bad("ecsv.harness reading", mc.harness, {"a": PAIR}, reading="rs_exact", match="reading must be"),
    bad("ecsv.harness source", mc.harness, {"a": "p"}, exc=TypeError, match=r"sources\['a'\] must be a MarkovPair"),
    bad("ecsv.falsification alpha", mc.falsification, [], alpha=1.5, match="alpha must lie in"),
    bad("ecsv.default_sources V=1", mc.default_sources, 1, match="V must be ≥ 2"),
    bad("ecsv.Estimate.ci level", mc.Estimate(1.0, 0.1, 10, "").ci, 1.5, match="level must lie in"),
    # --- verifier (spectheory.verifiers.ecsv) ---
    bad("ecsv.fuse tokens float", vf.fuse, TOK.astype(float), Q, exc=DistributionError, match="integer token ids"),
    bad("ecsv.fuse q shape", vf.fuse, TOK, np.full((3, 2, 3), 1 / 3), exc=DistributionError, match=r"q must have shape"),
    bad("ecsv.fuse q not normalised", vf.fuse, TOK, np.full((2, 2, 3), 0.5), exc=DistributionError,
        match="does not sum to 1"),
    bad("ecsv.fuse token out of range", vf.fuse, np.array([[0, 3], [1, 1]]), Q, exc=DistributionError,
        match=r"token ids must lie in \[0, 3\)"),
    bad("ecsv.fuse token with q=0", vf.fuse, TOK, np.tile(np.array([0.5, 0.0, 0.5]), (2, 2, 1)),
        exc=DistributionError, match="cannot have been drafted"),
    bad("ecsv.fuse method str", vf.fuse, TOK, Q, method="ECSV-lite", exc=TypeError, match="method must be a Method"),
    bad("ecsv.fuse sd1", vf.fuse, TOK, Q, method=R.SD_1, match="fuses branches"),
    bad("ecsv.fuse spot without p", vf.fuse, TOK, Q, method=R.ecsv_spot(1), match="give the verifier rows"),
    bad("ecsv.ecsv_step missing prefix", vf.ecsv_step, TOK, Q, {(1,): PAIR.target.conditional(0)}, seed=0,
        exc=DistributionError, match=r"no verifier row for the prefix \(\)"),
    bad("ecsv.ecsv_step bad row", vf.ecsv_step, TOK, Q, lambda pre: [0.5, 0.5], seed=0, exc=DistributionError,
        match=r"must be a row of length V = 3"),
    bad("ecsv.ecsv_step NaN row", vf.ecsv_step, TOK, Q, lambda pre: [NAN, 0.5, 0.5], seed=0, exc=DistributionError,
        match="contains NaN"),
    bad("ecsv.ecsv_step rs_exact", vf.ecsv_step, TOK, Q, _p, method=R.ECSV_LITE_RS_EXACT, match="proposal law"),
    bad("ecsv.ecsv_step seed=-1", vf.ecsv_step, TOK, Q, _p, seed=-1, match="seed must be ≥ 0"),
    # --- tuning and the harness (spectheory.montecarlo.ecsv) ---
    bad("ecsv.tune method str", mc.tune, "ECSV-lite", {"a": PAIR}, exc=TypeError, match="method must be a Method"),
    bad("ecsv.tune held_out empty", mc.tune, R.ECSV_LITE, {}, match="held_out must be a non-empty dict"),
    bad("ecsv.tune_plan held_out empty", mc.tune_plan, (R.ECSV_LITE,), {}, match="held_out must be a non-empty dict"),
    bad("ecsv.harness regime", mc.harness, {"a": PAIR}, (R.ECSV_LITE,), (2,), (2,), (R.CLEAN,), regime="beam",
        match="regime must be"),
    bad("ecsv.harness drafter str", mc.harness, {"a": PAIR}, (R.ECSV_LITE,), (2,), (2,), ("noisy",), exc=TypeError,
        match="drafter must be a Drafter"),
    # --- sweep jobs (sims/jobs/ecsv.py) ---
    bad("ecsv.mc job unknown method", _MC_JOB, {**_JOB, "method": "ECSV", "n_steps": 100}, _SS,
        match="method' must be one of"),
    bad("ecsv.mc job B=0", _MC_JOB, {**_JOB, "B": 0, "n_steps": 100}, _SS, match="'B' must be ≥ 1"),
    bad("ecsv.mc job n_steps missing", _MC_JOB, _JOB, _SS, match="missing parameter 'n_steps'"),
    bad("ecsv.mc job reading", _MC_JOB, {**_JOB, "reading": "greedy", "n_steps": 100}, _SS,
        match="'reading' must be one of"),
    bad("ecsv.mc job unknown parameter", _MC_JOB, {**_JOB, "n_steps": 100, "K": 2}, _SS, match="unknown parameter"),
    bad("ecsv.exact job gamma for SD-1", _EXACT_JOB, {**_JOB, "method": "SD-1", "gamma": 1.0}, None,
        match="gamma applies"),
    bad("ecsv.exact job source", _EXACT_JOB, {**_JOB, "source": "strong"}, None, match="'source' must be one of"),
    bad("ecsv.exact job k=1.5", _EXACT_JOB, {**_JOB, "k": 1.5}, None, match="must be an integer"),
    # --- real-logits replay (spectheory.validate.replay_ecsv) ---
    bad("spectheory.validate.replay_ecsv.logits_evidence alpha=2", rp.logits_evidence, RUN, 2.0, match="alpha must lie in"),
    bad("spectheory.validate.replay_ecsv.logits_evidence run str", rp.logits_evidence, "run", exc=TypeError, match="Run"),
    bad("spectheory.validate.replay_ecsv.replay n_mc=1", rp.replay, RUN, n_mc=1, match="n_mc must be ≥ 2"),
    bad("spectheory.validate.replay_ecsv.replay k=0", rp.replay, RUN, ks=(0,), match="k must be ≥ 1"),
    bad("spectheory.validate.replay_ecsv.replay B=0", rp.replay, RUN, Bs=(0,), ks=(2,), match="B must be ≥ 1"),
]
