"""Bad-input rows of the conformance tester (``spectheory.conformance``: API, adapters, forced
random sources, fake LMs, references, reports) and of ``spectheory conformance``. Every row is
refused by the argument checks before a sampler is run."""
from __future__ import annotations

import numpy as np

from spectheory import conformance as sc
from spectheory.conformance.adapters import BlockVerifier, VerifierOutputError, tokens_of
from spectheory.conformance.fake_lm import MarkovLM, fake_lm, markov_torch_lm
from spectheory.conformance.forced import ForcedUniforms, inverse_cdf, torch_uniforms
from spectheory.conformance.references import rule_verifier
from spectheory.pairs import dirichlet_source

from . import CLIError, bad, run_cli

NAN = float("nan")
REF = sc.reference_verifier
SRC = dirichlet_source(3, 1, seed=0)
LM = MarkovLM(SRC)
QUICK = dict(n=100, gammas=(1,), instances=("iid-V1",), controls=False, probes=False)
TARGET = "spectheory.conformance:reference_verifier"


def _cbv(**kw):
    return sc.check_block_verifier(REF, **{**QUICK, **kw})


def _cds(**kw):
    quick = {k: v for k, v in QUICK.items() if k != "probes"}   # decoding steps have no probes
    return sc.check_decoding_step(lambda *a: None, **{**quick, **kw})


ROWS = [
    # --- check_block_verifier / check_decoding_step (spectheory.conformance.api) ---
    bad("conformance.block n=10", _cbv, n=10, match="n must be ≥ 50"),
    bad("conformance.block n=100.5", _cbv, n=100.5, match="n must be an integer"),
    bad("conformance.block gamma=0", _cbv, gammas=(0,), match="gamma must be ≥ 1"),
    bad("conformance.block gamma=5", _cbv, gammas=(5,), match="gamma must be ≤ 4"),
    bad("conformance.block no gammas", _cbv, gammas=(), match="gammas must name at least one draft length"),
    bad("conformance.block gammas int", _cbv, gammas=2, exc=TypeError,
        match="gammas must be a sequence of draft lengths"),
    bad("conformance.block unknown instance", _cbv, instances=("nope",), exc=KeyError, match="unknown instance 'nope'"),
    bad("conformance.block instances str", _cbv, instances="iid-V1", exc=TypeError,
        match="instances must be a sequence of instance names"),
    bad("conformance.block alpha=0", _cbv, alpha=0.0, match=r"alpha must lie in \(0, 1\)"),
    bad("conformance.block alpha=NaN", _cbv, alpha=NAN, match="alpha must be finite"),
    bad("conformance.block seed=-1", _cbv, seed=-1, match="seed must be ≥ 0"),
    bad("conformance.block seed=1.5", _cbv, seed=1.5, match="seed must be an integer"),
    bad("conformance.block seed str", _cbv, seed="x", exc=TypeError, match="seed must be an integer"),
    bad("conformance.block control_n=0", _cbv, control_n=0, controls=True, match="control_n must be ≥ 1"),
    bad("conformance.block control_n=2.5", _cbv, control_n=2.5, match="control_n must be an integer"),
    bad("conformance.block fn not callable", sc.check_block_verifier, 3, **QUICK, exc=TypeError,
        match="the verifier must be callable"),
    bad("conformance.block adapter", _cbv, adapter="bits", match="adapter must be one of"),
    bad("conformance.block dtype", _cbv, dtype="int8", match="dtype must be one of"),
    bad("conformance.block framework", _cbv, framework="jax", match="framework must be one of"),
    bad("conformance.block batched str", _cbv, batched="yes", exc=TypeError, match="batched must be a bool"),
    bad("conformance.step make_step not callable", sc.check_decoding_step, 3, n=100, exc=TypeError,
        match="make_step must be callable"),
    bad("conformance.step lm", _cds, lm="jax", match="lm must be 'callable' or 'torch'"),
    bad("conformance.step n=0", _cds, n=0, match="n must be ≥ 50"),
    bad("conformance.step alpha=1", _cds, alpha=1.0, match=r"alpha must lie in \(0, 1\)"),
    bad("conformance.step seed=-1", _cds, seed=-1, match="seed must be ≥ 0"),
    bad("conformance.step control_n=0", _cds, control_n=0, controls=True, match="control_n must be ≥ 1"),
    bad("conformance.step_from_block_verifier fn", sc.step_from_block_verifier, 3, exc=TypeError,
        match="fn must be a callable block verifier"),
    # --- adapters ---
    bad("conformance.BlockVerifier adapter", BlockVerifier, REF, adapter="x", match="adapter must be one of"),
    bad("conformance.BlockVerifier dtype", BlockVerifier, REF, dtype="int8", match="dtype must be one of"),
    bad("conformance.BlockVerifier framework", BlockVerifier, REF, framework="x", match="framework must be one of"),
    bad("conformance.BlockVerifier batched str", BlockVerifier, REF, batched="no", exc=TypeError,
        match="batched must be a bool"),
    bad("conformance.BlockVerifier.represent which", BlockVerifier(REF, adapter="logits").represent, [[0.5, 0.5]],
        "other",
        match="which must be one of"),
    bad("conformance.tokens_of pair", tokens_of, (np.array([1]), 2), exc=VerifierOutputError,
        match="returned a pair"),
    bad("conformance.tokens_of floats", tokens_of, [0.5], exc=VerifierOutputError, match="not integer ids"),
    bad("conformance.tokens_of NaN", tokens_of, [NAN], exc=VerifierOutputError, match="not integer ids"),
    bad("conformance.tokens_of 2-D", tokens_of, [[0, 1]], exc=VerifierOutputError, match="expected a 1-D block"),
    # --- forced random source ---
    bad("conformance.inverse_cdf NaN", inverse_cdf, [NAN, 0.5], 0.3, match="probabilities contain NaN"),
    bad("conformance.inverse_cdf negative", inverse_cdf, [-1.0, 0.5], 0.3, match="inf or a negative entry"),
    bad("conformance.inverse_cdf zero mass", inverse_cdf, [0.0, 0.0], 0.3, match="zero total mass"),
    bad("conformance.inverse_cdf empty", inverse_cdf, [], 0.3, match="must be a non-empty 1-D vector"),
    bad("conformance.inverse_cdf u=1.5", inverse_cdf, [0.5, 0.5], 1.5, match=r"u must be a uniform in \[0, 1\)"),
    bad("conformance.inverse_cdf u=NaN", inverse_cdf, [0.5, 0.5], NAN, match=r"u must be a uniform in \[0, 1\)"),
    bad("conformance.ForcedUniforms 1.0", ForcedUniforms, 1.0, match=r"forced value must lie in \[0, 1\)"),
    bad("conformance.ForcedUniforms NaN", ForcedUniforms, NAN, match=r"forced value must lie in \[0, 1\)"),
    bad("conformance.ForcedUniforms name", ForcedUniforms, "bogus", match="forced value must be a float"),
    bad("conformance.torch_uniforms rng str", torch_uniforms, "x", exc=TypeError,
        match="rng must be a numpy Generator or ForcedUniforms"),
    # --- fake LMs ---
    bad("conformance.MarkovLM dtype", MarkovLM, SRC, "int8", match="dtype must be one of"),
    bad("conformance.MarkovLM source str", MarkovLM, "src", exc=TypeError, match="source must be a MarkovSource"),
    bad("conformance.MarkovLM flat contexts", LM, [0, 1], match="contexts must be a batch"),
    bad("conformance.MarkovLM token out of range", LM, [[0, 5]], match=r"token ids in \[0, 3\)"),
    bad("conformance.fake_lm lm", fake_lm, SRC, "jax", match="lm must be 'callable' or 'torch'"),
    bad("conformance.fake_lm source str", fake_lm, "x", exc=TypeError, match="source must be a MarkovSource"),
    bad("conformance.markov_torch_lm source str", markov_torch_lm, "x", exc=TypeError,
        match="source must be a MarkovSource"),
    bad("conformance.markov_torch_lm dtype", markov_torch_lm, SRC, "int8", match="dtype must be one of"),
    # --- references and reports ---
    bad("conformance.rule_verifier rule str", rule_verifier, "standard", exc=TypeError, match="rule must be an SDRule"),
    bad("conformance.rule_verifier bonus_row=5", rule_verifier, bonus_row=5, match="bonus_row must be 0"),
    bad("conformance.summary_rows not a report", sc.summary_rows, {}, match="report must be a conformance report dict"),
    bad("conformance.summary_rows str", sc.summary_rows, "x", match="report must be a conformance report dict"),
    bad("conformance.print_report no run", sc.print_report, {"claims": []}, match="with 'claims' and 'run'"),
    # --- command line: spectheory conformance ---
    bad("conformance.cli no colon", run_cli, "conformance", "spectheory", exc=CLIError,
        match="TARGET: expected MODULE:FUNCTION"),
    bad("conformance.cli no module", run_cli, "conformance", "nopkg_xyz:fn", exc=CLIError,
        match="TARGET: cannot import 'nopkg_xyz'"),
    bad("conformance.cli no attribute", run_cli, "conformance", "spectheory.conformance:nope", exc=CLIError,
        match="has no attribute 'nope'"),
    bad("conformance.cli not callable", run_cli, "conformance", "spectheory.conformance:GAMMAS", exc=CLIError,
        match="is not callable"),
    bad("conformance.cli missing file", run_cli, "conformance", "/nonexistent/x.py:fn", exc=CLIError,
        match="cannot import '/nonexistent/x.py'"),
    bad("conformance.cli kind", run_cli, "conformance", TARGET, "--kind", "x", exc=CLIError,
        match="--kind: kind must be 'block' or 'step'"),
    bad("conformance.cli gammas not ints", run_cli, "conformance", TARGET, "--gammas", "a,b", exc=CLIError,
        match="--gammas: expected comma-separated integers"),
    bad("conformance.cli gammas=0", run_cli, "conformance", TARGET, "--gammas", "0", exc=CLIError,
        match="gamma must be ≥ 1"),
    bad("conformance.cli n=0", run_cli, "conformance", TARGET, "--n", "0", exc=CLIError, match="n must be ≥ 50"),
    bad("conformance.cli alpha=2", run_cli, "conformance", TARGET, "--alpha", "2", exc=CLIError,
        match=r"alpha must lie in \(0, 1\)"),
    bad("conformance.cli adapter", run_cli, "conformance", TARGET, "--adapter", "bits", exc=CLIError,
        match="adapter must be one of"),
    bad("conformance.cli dtype", run_cli, "conformance", TARGET, "--dtype", "int8", exc=CLIError,
        match="dtype must be one of"),
    bad("conformance.cli framework", run_cli, "conformance", TARGET, "--framework", "jax", exc=CLIError,
        match="framework must be one of"),
    bad("conformance.cli instances", run_cli, "conformance", TARGET, "--instances", "nope", exc=CLIError,
        match="unknown instance 'nope'"),
    bad("conformance.cli seed=-1", run_cli, "conformance", TARGET, "--seed", "-1", exc=CLIError,
        match="seed must be ≥ 0"),
    bad("conformance.cli lm", run_cli, "conformance", TARGET, "--kind", "step", "--lm", "jax", exc=CLIError,
        match="lm must be 'callable' or 'torch'"),
]
