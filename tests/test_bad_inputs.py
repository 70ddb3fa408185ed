"""Table-driven bad-input test: every public entry point of the spine × bad input must raise
the stated exception with a message that names the problem (no silent wrong answer, no
traceback from the CLI).

The spine's rows are below; a family adds its own in ``tests/bad_inputs/<family>.py``
(a ``ROWS`` list of ``bad(...)`` rows, see ``tests/bad_inputs/__init__.py``), collected here.
"""
from __future__ import annotations

import importlib
import pkgutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

import bad_inputs
from bad_inputs import CLIError, bad, run_cli
from spectheory.judge import stats
from spectheory.judge.evidence import Evidence
from spectheory.sims.registry import UnknownClaimError
from spectheory.sims.runner import run_claims
from spectheory.closed_forms import sd as cf
from spectheory.distributions import DistributionError, check_distribution, softmax
from spectheory.exact import sd as ex
from spectheory.markov import MarkovPair, MarkovSource, lift_order, stationary_distribution
from spectheory.montecarlo import sd as mc
from spectheory.montecarlo.clock import CallSchedule, simulate_clocks
from spectheory.pairs import (aligned_pair, dirichlet_source, mix_with_noise, ngram_pair, ngram_source,
                              pair_from_tables, perturbed_pair, random_pair, temperature, top_k)
from spectheory.rules.sd import SDRule
from spectheory.verifiers.sd import speculative_verify

NAN, INF = float("nan"), float("inf")
SRC3 = dirichlet_source(3, 1, seed=0)
PAIR3 = perturbed_pair(3, 1, how="mix", strength=0.4, seed=1)   # 3 states
IID3 = random_pair(3, 0, seed=2)
P, Q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
_TMP = Path(tempfile.mkdtemp(prefix="spectheory-bad-inputs-"))
(_TMP / "a-file").write_text("")

ROWS = [
    # --- closed forms (spectheory.closed_forms.sd) ---
    bad("expected_tokens alpha=NaN", cf.expected_tokens, NAN, 4, match="alpha.*finite"),
    bad("expected_tokens alpha=1.5", cf.expected_tokens, 1.5, 4, match="alpha.*≤ 1"),
    bad("expected_tokens alpha=inf", cf.expected_tokens, INF, 4, match="alpha.*finite"),
    bad("expected_tokens alpha<0", cf.expected_tokens, -0.1, 4, match="alpha.*≥ 0"),
    bad("expected_tokens alpha array with NaN", cf.expected_tokens, [0.5, NAN], 4, match="alpha.*finite"),
    bad("expected_tokens gamma=-3", cf.expected_tokens, 0.5, -3, match="gamma.*≥ 1"),
    bad("expected_tokens gamma=0", cf.expected_tokens, 0.5, 0, match="gamma.*≥ 1"),
    bad("expected_tokens gamma=2.5", cf.expected_tokens, 0.5, 2.5, match="gamma.*integer"),
    bad("expected_tokens gamma=True", cf.expected_tokens, 0.5, True, exc=TypeError, match="gamma.*bool"),
    bad("walltime c<0", cf.walltime_improvement, 0.5, 4, -0.25, match="c .*≥ 0"),
    bad("walltime c=NaN", cf.walltime_improvement, 0.5, 4, NAN, match="c .*finite"),
    bad("walltime alpha=1.5", cf.walltime_improvement, 1.5, 4, 0.1, match="alpha"),
    bad("walltime gamma=0", cf.walltime_improvement, 0.5, 0, 0.1, match="gamma"),
    bad("acceptance mismatched V", cf.acceptance, [0.5, 0.5], [0.2, 0.3, 0.5], exc=DistributionError,
        match="mismatched vocabularies"),
    bad("acceptance mismatched shapes", cf.acceptance, [[0.5, 0.5], [0.5, 0.5]], [0.5, 0.5],
        exc=DistributionError, match="mismatched shapes"),
    bad("acceptance not normalised", cf.acceptance, [0.5, 0.6], [0.5, 0.5], exc=DistributionError,
        match="does not sum to 1"),
    bad("acceptance NaN", cf.acceptance, [0.5, NAN], [0.5, 0.5], exc=DistributionError, match="NaN"),
    bad("expected_tokens_chain start=-1", cf.expected_tokens_chain, PAIR3, 2, -1, match="start_state.*≥ 0"),
    bad("expected_tokens_chain start=3", cf.expected_tokens_chain, PAIR3, 2, 3, match="start_state.*≤ 2"),
    bad("expected_tokens_chain gamma=0", cf.expected_tokens_chain, PAIR3, 0, match="gamma"),
    bad("expected_tokens_chain not a pair", cf.expected_tokens_chain, (SRC3, SRC3), 2, exc=TypeError,
        match="MarkovPair"),
    bad("tau_tail_chain gamma=-1", cf.tau_tail_chain, PAIR3, -1, match="gamma"),
    bad("iteration_kernel gamma=0", cf.iteration_kernel, PAIR3, 0, match="gamma"),
    bad("long_run_block_efficiency start=-1", cf.long_run_block_efficiency, PAIR3, 2, -1, match="start_state"),
    bad("stationary_acceptance start=7", cf.stationary_acceptance, PAIR3, 7, match="start_state"),
    # --- Markov sources (spectheory.markov) ---
    bad("stationary not stochastic", stationary_distribution, np.array([[0.5, 0.6], [0.5, 0.5]]),
        match="row-stochastic"),
    bad("stationary not square", stationary_distribution, np.full((2, 3), 1 / 3), match="square"),
    bad("stationary NaN", stationary_distribution, np.array([[NAN, 1.0], [0.5, 0.5]]), match="NaN"),
    bad("stationary negative", stationary_distribution, np.array([[1.5, -0.5], [0.5, 0.5]]), match="negative"),
    bad("stationary start=-1", stationary_distribution, np.eye(2), -1, match="start.*≥ 0"),
    bad("MarkovSource order=-1", MarkovSource, np.full((3, 3), 1 / 3), -1, match="order.*≥ 0"),
    bad("MarkovSource order=1.5", MarkovSource, np.full((3, 3), 1 / 3), 1.5, match="order.*integer"),
    bad("MarkovSource rows not normalised", MarkovSource, np.full((3, 3), 0.5), 1, exc=DistributionError,
        match="does not sum to 1"),
    bad("MarkovSource wrong row count", MarkovSource, np.full((2, 3), 1 / 3), 1, match="has 3 states"),
    bad("MarkovSource row_of_state outside", MarkovSource, np.full((3, 3), 1 / 3), 1, np.array([0, 1, 5]),
        match="outside the table"),
    bad("MarkovSource row_of_state floats", MarkovSource, np.full((3, 3), 1 / 3), 1, np.array([0.0, 1.0, 2.0]),
        exc=TypeError, match="integer row indices"),
    bad("MarkovSource too many states", MarkovSource, np.full((1, 50), 1 / 50), 20, np.zeros(1, dtype=int),
        match="states"),
    bad("sequence_probs start=-1", SRC3.sequence_probs, 2, -1, match="start_state.*≥ 0"),
    bad("sequence_probs length=-1", SRC3.sequence_probs, -1, match="length.*≥ 0"),
    bad("sequence_probs too long", SRC3.sequence_probs, 40, match="too many to enumerate"),
    bad("sample start=9", SRC3.sample, 5, None, 9, match="start_state.*≤ 2"),
    bad("conditional state=-1", SRC3.conditional, -1, match="state.*≥ 0"),
    bad("state_of_context bad token", SRC3.state_of_context, [0, 5], match="token ids"),
    bad("MarkovPair mismatched V", MarkovPair, SRC3, dirichlet_source(4, 1, seed=0), exc=DistributionError,
        match="mismatched vocabularies"),
    bad("MarkovPair draft not a source", MarkovPair, SRC3, [[0.5, 0.5]], exc=TypeError, match="draft"),
    bad("MarkovPair orders differ", MarkovPair, SRC3, dirichlet_source(3, 0, seed=0), match="lift"),
    bad("lift_order lower", lift_order, SRC3, 0, match="higher order"),
    # --- pair constructors (spectheory.pairs) ---
    bad("dirichlet_source V=0", dirichlet_source, 0, 1, match="V .*≥ 1"),
    bad("dirichlet_source V=2.5", dirichlet_source, 2.5, 1, match="V .*integer"),
    bad("dirichlet_source order=-1", dirichlet_source, 3, -1, match="order.*≥ 0"),
    bad("dirichlet_source concentration=0", dirichlet_source, 3, 1, 0.0, match="concentration"),
    bad("dirichlet_source concentration=NaN", dirichlet_source, 3, 1, NAN, match="concentration.*finite"),
    bad("dirichlet_source n_rows=0", dirichlet_source, 3, 1, n_rows=0, match="n_rows"),
    bad("dirichlet_source huge", dirichlet_source, 1000, 4, match="states"),
    bad("random_pair seed='x'", random_pair, 3, 1, seed="x", exc=TypeError, match="seed"),
    bad("perturbed_pair unknown how", perturbed_pair, 3, 1, how="nope", match="unknown perturbation"),
    bad("perturbed_pair mix eps=1.5", perturbed_pair, 3, 1, how="mix", strength=1.5, match="eps"),
    bad("perturbed_pair strength=NaN", perturbed_pair, 3, 1, how="mix", strength=NAN, match="strength.*finite"),
    bad("perturbed_pair temperature=0", perturbed_pair, 3, 1, how="temperature", strength=0.0,
        match="temperature"),
    bad("perturbed_pair top_k=0", perturbed_pair, 3, 1, how="top_k", strength=0, match="k must be ≥ 1"),
    bad("perturbed_pair top_k=1.5", perturbed_pair, 3, 1, how="top_k", strength=1.5, match="k must be an integer"),
    bad("perturbed_pair quantize step<0", perturbed_pair, 3, 1, how="quantize", strength=-1.0, match="step"),
    bad("aligned_pair alignment", aligned_pair, 3, 1, "medium", match="alignment"),
    bad("temperature not a source", temperature, "p", 2.0, exc=TypeError, match="MarkovSource"),
    bad("temperature T=inf", temperature, SRC3, INF, match="temperature.*finite"),
    bad("mix_with_noise eps=NaN", mix_with_noise, SRC3, NAN, match="eps.*finite"),
    bad("top_k k=-1", top_k, SRC3, -1, match="k must be ≥ 1"),
    bad("ngram_source token out of range", ngram_source, [0, 1, 5], 3, 1, exc=DistributionError,
        match="token ids"),
    bad("ngram_source float tokens", ngram_source, [0.5, 1.0], 3, 0, exc=DistributionError,
        match="integer token ids"),
    bad("ngram_source smoothing<0", ngram_source, [0, 1, 2], 3, 1, smoothing=-1.0, match="smoothing"),
    bad("ngram_source stream too short", ngram_source, [0], 3, 1, match="longer than the order"),
    bad("ngram_source table too big", ngram_source, [0, 1, 2], 32_000, 1, match="cells"),
    bad("ngram_pair n_tokens=0", ngram_pair, SRC3, 0, match="n_tokens"),
    bad("ngram_pair draft_order > order", ngram_pair, SRC3, 100, draft_order=3, match="must not exceed"),
    bad("pair_from_tables mismatched V", pair_from_tables, [0.5, 0.5], [0.2, 0.3, 0.5], exc=DistributionError,
        match="mismatched vocabularies"),
    bad("pair_from_tables order=-1", pair_from_tables, [0.5, 0.5], [0.5, 0.5], -1, match="order"),
    # --- distributions ---
    bad("check_distribution negative", check_distribution, [0.5, -0.1, 0.6], exc=DistributionError,
        match="negative"),
    bad("softmax +inf", softmax, [0.0, INF], exc=DistributionError, match=r"\+inf"),
    # --- rules ---
    bad("SDRule unknown accept", SDRule, "x", accept="bogus", match="unknown accept rule"),
    bad("SDRule unknown residual", SDRule, "x", residual="bogus", match="unknown residual rule"),
    # --- exact engine (spectheory.exact.sd) ---
    bad("iteration_blocks gamma=0", ex.iteration_blocks, PAIR3, 0, match="gamma.*≥ 1"),
    bad("iteration_blocks gamma=1.5", ex.iteration_blocks, PAIR3, 1.5, match="gamma.*integer"),
    bad("iteration_blocks start=-1", ex.iteration_blocks, PAIR3, 2, start_state=-1, match="start_state.*≥ 0"),
    bad("iteration_blocks rule str", ex.iteration_blocks, PAIR3, 2, "standard", exc=TypeError, match="SDRule"),
    bad("iteration_blocks not a pair", ex.iteration_blocks, "pair", 2, exc=TypeError, match="MarkovPair"),
    bad("iteration_blocks too big", ex.iteration_blocks, random_pair(50, 0, seed=0), 4, match="too many"),
    bad("tau_distribution start=3", ex.tau_distribution, PAIR3, 2, start_state=3, match="start_state.*≤ 2"),
    bad("expected_tokens (exact) gamma=-1", ex.expected_tokens, PAIR3, -1, match="gamma"),
    bad("first_tokens n_tokens=0", ex.first_tokens_distribution, PAIR3, 2, 0, match="n_tokens.*≥ 1"),
    bad("first_tokens too many", ex.first_tokens_distribution, PAIR3, 2, 30, match="too many"),
    bad("block_distribution start=-2", ex.block_distribution, IID3, 2, start_state=-2, match="start_state"),
    # --- verifier on explicit distributions (spectheory.verifiers.sd) ---
    bad("verify token id out of range", speculative_verify, [P, P], [Q], [3], exc=DistributionError,
        match="draft token ids"),
    bad("verify negative token id", speculative_verify, [P, P], [Q], [-1], exc=DistributionError,
        match="draft token ids"),
    bad("verify float token ids", speculative_verify, [P, P], [Q], [0.5], exc=DistributionError,
        match="integer token ids"),
    bad("verify bool token ids", speculative_verify, [P, P], [Q], [True], exc=DistributionError,
        match="integer token ids"),
    bad("verify q=0 on drafted token", speculative_verify, [P, P], [[0.5, 0.5, 0.0]], [2],
        exc=DistributionError, match="has q = 0"),
    bad("verify p rows", speculative_verify, [P], [Q], [0], exc=DistributionError, match="p 1"),
    bad("verify mismatched V", speculative_verify, [P, P], [[0.5, 0.5]], [0], exc=DistributionError,
        match="mismatched vocabularies"),
    bad("verify NaN", speculative_verify, [P, [0.5, NAN, 0.5]], [Q], [0], exc=DistributionError, match="NaN"),
    bad("verify not normalised", speculative_verify, [P, P], [[0.2, 0.3, 0.6]], [0], exc=DistributionError,
        match="does not sum to 1"),
    bad("verify 3-D p", speculative_verify, np.full((1, 2, 3), 1 / 3), [Q], [0], exc=DistributionError,
        match="table"),
    bad("verify rule str", speculative_verify, [P, P], [Q], [0], rule="standard", exc=TypeError, match="SDRule"),
    bad("verify seed str", speculative_verify, [P, P], [Q], [0], seed="x", exc=TypeError, match="seed"),
    # --- Monte Carlo API (spectheory.montecarlo) ---
    bad("simulate gamma=0", mc.simulate, IID3, 0, 10, match="gamma"),
    bad("simulate start=5", mc.simulate, IID3, 2, 10, start_state=5, match="start_state"),
    bad("simulate seed str", mc.simulate, IID3, 2, 10, seed="abc", exc=TypeError, match="seed"),
    bad("prepare not a pair", mc.prepare, (SRC3, SRC3), exc=TypeError, match="MarkovPair"),
    bad("simulate_with_uniforms shape", mc.simulate_with_uniforms, IID3, 2, np.zeros((4, 3)),
        match="uniforms must have shape"),
    bad("sample_first_tokens n_tokens=0", mc.sample_first_tokens, IID3, 2, 0, 10, match="n_tokens"),
    bad("clock gamma=0", simulate_clocks, np.array([1, 2]), 0, 0.1, match="gamma"),
    bad("clock c<0", simulate_clocks, np.array([1, 2]), 2, -0.1, match=r"c .*must lie in \[0"),
    bad("clock float counts", simulate_clocks, np.array([1.5]), 2, 0.1, match="n_emitted"),
    bad("clock shape=0", simulate_clocks, np.array([1]), 2, 0.1, shape=0.0, match="shape"),
    bad("CallSchedule unknown", CallSchedule, "sometimes", match="verify must be one of"),
    # --- statistical method (spectheory.judge.stats) ---
    bad("z_test_mean one sample", stats.z_test_mean, "t", 1.0, [1.0], alpha=0.01, tolerance=0.1, match="≥ 2 finite"),
    bad("z_test_mean NaN sample", stats.z_test_mean, "t", 1.0, [1.0, NAN], alpha=0.01, tolerance=0.1,
        match="finite"),
    bad("z_test_mean no se", stats.z_test_mean, "t", 1.0, mean=1.0, alpha=0.01, tolerance=0.1, match="se"),
    bad("per_state_binomial shapes", stats.per_state_binomial, "t", [10, 10], [5], [0.5, 0.5], alpha=0.01,
        tolerance=0.1, match="one length"),
    bad("per_state_binomial accepts > attempts", stats.per_state_binomial, "t", [10], [11], [0.5], alpha=0.01,
        tolerance=0.1, match="accepts ≤ attempts"),
    bad("per_state_binomial beta > 1", stats.per_state_binomial, "t", [10], [5], [1.5], alpha=0.01,
        tolerance=0.1, match=r"\[0, 1\]"),
    bad("per_state_binomial no attempts", stats.per_state_binomial, "t", [0], [0], [0.5], alpha=0.01,
        tolerance=0.1, match="at least one attempt"),
    # --- report vocabulary, runner and CLI ---
    bad("Evidence unknown mode", Evidence, "psychic", "i", 0, 0, match="unknown evidence mode"),
    bad("run_claims typo in a glob list", run_claims, "sd.lossless,sd.acceptence", exc=UnknownClaimError,
        match="no registered claim matches 'sd.acceptence'"),
    bad("run_claims seed=-1", run_claims, "sd.lossless", seed=-1, match="seed.*≥ 0"),
    bad("run_claims alpha=0", run_claims, "sd.lossless", alpha=0.0, match="alpha"),
    bad("cli typo in a glob list", run_cli, "verify", "--claims", "sd.lossless,sd.acceptence", exc=CLIError,
        match="no registered claim matches 'sd.acceptence'"),
    bad("cli unknown claims", run_cli, "verify", "--claims", "nope.*", exc=CLIError,
        match="no registered claim matches 'nope.*'"),
    bad("cli seed=-1", run_cli, "verify", "--seed", "-1", exc=CLIError, match="--seed"),
    bad("cli alpha=1.5", run_cli, "verify", "--alpha", "1.5", exc=CLIError, match=r"alpha must lie in \(0, 1\)"),
    bad("cli json under a file", run_cli, "verify", "--claims", "sd.lossless", "--json", _TMP / "a-file" / "r.json",
        exc=CLIError, match="is a file, not a folder"),
    bad("cli markdown is a folder", run_cli, "verify", "--claims", "sd.lossless", "--markdown", _TMP,
        exc=CLIError, match="is a directory"),
    bad("cli json == markdown", run_cli, "verify", "--json", _TMP / "r", "--markdown", _TMP / "r",
        exc=CLIError, match="same file"),
    bad("cli list unknown claims", run_cli, "list", "--claims", "zzz", exc=CLIError,
        match="no registered claim matches 'zzz'"),
]


def _family_rows():
    rows = []
    for mod in pkgutil.iter_modules(bad_inputs.__path__):
        rows += importlib.import_module(f"bad_inputs.{mod.name}").ROWS
    return rows


ALL_ROWS = ROWS + _family_rows()


def test_row_ids_are_unique():
    ids = [r.id for r in ALL_ROWS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("row", ALL_ROWS, ids=[r.id for r in ALL_ROWS])
def test_bad_input_is_refused_with_a_clear_message(row):
    with pytest.raises(row.exc, match=row.match):
        row.call(*row.args, **row.kwargs)


# Monte Carlo API checks (issue 5; before the engine rewrite these gave a NumPy error, ran
# silently, or raised an AttributeError).
_PAIR = random_pair(3, 0, seed=2)
MONTE_CARLO_API_ROWS = [
    bad("simulate n_iterations=-5", mc.simulate, _PAIR, 2, -5, match="n_iterations"),
    bad("simulate n_iterations=2.5", mc.simulate, _PAIR, 2, 2.5, match="n_iterations"),
    bad("simulate rule str", mc.simulate, _PAIR, 2, 10, rule="standard", exc=TypeError, match="SDRule"),
    bad("sample_first_tokens n_runs=-1", mc.sample_first_tokens, _PAIR, 2, 3, -1, match="n_runs"),
    bad("sample_first_tokens n_tokens=2.5", mc.sample_first_tokens, _PAIR, 2, 2.5, 10, match="n_tokens"),
    bad("simulate_with_uniforms NaN", mc.simulate_with_uniforms, _PAIR, 2, np.full((3, 5), NAN), match="uniforms"),
    bad("simulate_with_uniforms > 1", mc.simulate_with_uniforms, _PAIR, 2, np.full((3, 5), 2.0), match="uniforms"),
]


@pytest.mark.parametrize("row", MONTE_CARLO_API_ROWS, ids=[r.id for r in MONTE_CARLO_API_ROWS])
def test_monte_carlo_api_checks(row):
    with pytest.raises(row.exc, match=row.match):
        row.call(*row.args, **row.kwargs)
