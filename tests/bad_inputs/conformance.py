"""Bad-input rows of the conformance tester (``spectheory.conformance``: API, adapters, forced
random sources, fake LMs, references, reports, multi-draft and tree verifiers, the sequential
design, the trial call) and of ``spectheory conformance``. Every row is refused by the argument
checks or by the trial call (a :class:`ConformanceUsageError`, a ValueError) before any
statistics are run."""
from __future__ import annotations

import numpy as np

from spectheory import conformance as sc
from spectheory.conformance.adapters import BlockVerifier, VerifierOutputError, tokens_of
from spectheory.conformance.fake_lm import MarkovLM, fake_lm, markov_torch_lm
from spectheory.conformance.forced import ForcedUniforms, inverse_cdf
from spectheory.conformance.sources import torch_uniforms
from spectheory.conformance.kinds import multidraft as md
from spectheory.conformance import check_multidraft_verifier
from spectheory.conformance import sequential
from spectheory.conformance.references import rule_verifier
from spectheory.conformance.trial import ConformanceUsageError
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


def _cmd(fn=md.specinfer_verifier, **kw):
    return check_multidraft_verifier(fn, **{**QUICK, **kw})


def _sd(p, q, draft, rng):
    return sc.reference_verifier(p, q, draft, rng)


def _cag(**kw):
    from spectheory.conformance.kinds.assisted import assisted_reference
    return sc.check_assisted_generation(assisted_reference, **{"n": 100, "gammas": (1,), "settings": ("T=1",),
                                                               "controls": False, **kw})


def _cds(**kw):
    quick = {k: v for k, v in QUICK.items() if k != "probes"}   # decoding steps have no probes
    return sc.check_decoding_step(lambda *a: None, **{**quick, **kw})


ROWS = [
    # --- check_block_verifier / check_decoding_step (spectheory.conformance.kinds.block, .step) ---
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
    bad("conformance.fake_lm lm", fake_lm, SRC, "jax", match="lm must be 'callable', 'torch' or 'hf'"),
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
    # --- the trial call: usage errors (ConformanceUsageError, a ValueError) ---
    bad("conformance.block arity 3", sc.check_block_verifier, lambda p, q, d: [0], **QUICK,
        exc=ConformanceUsageError, match=r"cannot be called as fn\(p, q, draft_tokens, rng\)"),
    bad("conformance.block returns None", sc.check_block_verifier, lambda p, q, d, rng: None, **QUICK,
        exc=ConformanceUsageError, match="the function returned None"),
    bad("conformance.block returns dict", sc.check_block_verifier, lambda p, q, d, rng: {"t": [0]}, **QUICK,
        exc=ConformanceUsageError, match="the function returned a dict"),
    bad("conformance.block returns float", sc.check_block_verifier, lambda p, q, d, rng: 0.5, **QUICK,
        exc=ConformanceUsageError, match=r"returned shape \(\)"),
    bad("conformance.block returns str", sc.check_block_verifier, lambda p, q, d, rng: "0", **QUICK,
        exc=ConformanceUsageError, match="the function returned a str"),
    bad("conformance.block needs batched", sc.check_block_verifier,
        lambda p, q, d, rng: [_sd(p[0], q[0], list(d[0]), rng)], **QUICK, exc=ConformanceUsageError,
        match="could not be run as configured"),
    bad("conformance.block out of range", sc.check_block_verifier, lambda p, q, d, rng: [7], **QUICK,
        exc=ConformanceUsageError, match=r"ids in \[0, 3\)"),
    bad("conformance.block too many tokens", sc.check_block_verifier, lambda p, q, d, rng: [0, 0, 0, 0], **QUICK,
        exc=ConformanceUsageError, match=r"1\.\.γ\+1 = 1\.\.2"),
    bad("conformance.step arity 3", sc.check_decoding_step, lambda t, d, g: None, n=100, instances=("iid-V1",),
        gammas=(1,), controls=False, exc=ConformanceUsageError, match="cannot be called as make_step"),
    bad("conformance.step not a function", sc.check_decoding_step, lambda t, d, g, rng: 3, n=100,
        instances=("iid-V1",), gammas=(1,), controls=False, exc=ConformanceUsageError,
        match="make_step returned int, not a function"),
    # --- multi-draft and tree verifiers (spectheory.conformance.kinds.multidraft) ---
    bad("conformance.multidraft K=0", _cmd, K=0, match=r"K \(number of drafts\) must be ≥ 1"),
    bad("conformance.multidraft K=5", _cmd, K=5, match=r"K \(number of drafts\) must be ≤ 4"),
    bad("conformance.multidraft K=1.5", _cmd, K=1.5, match="must be an integer"),
    bad("conformance.multidraft tree str", _cmd, md.specinfer_tree_verifier, tree="2,2", exc=TypeError,
        match="tree must be a sequence of branching factors"),
    bad("conformance.multidraft tree 0", _cmd, md.specinfer_tree_verifier, tree=(0, 2),
        match="branching factor must be ≥ 1"),
    bad("conformance.multidraft tree depth 4", _cmd, md.specinfer_tree_verifier, tree=(1, 1, 1, 1),
        match="tree depth must be 1..3"),
    bad("conformance.multidraft tree too big", _cmd, md.specinfer_tree_verifier, tree=(8, 8),
        match="has 72 nodes; at most 64"),
    bad("conformance.multidraft rule", _cmd, rule="spectr", match="rule must be one of"),
    bad("conformance.multidraft rule on a tree", _cmd, md.specinfer_tree_verifier, tree=(2,), rule="kseq",
        match="a tree verifier can be matched with rule='specinfer' only"),
    bad("conformance.multidraft gbv K=2", _cmd, rule="gbv", K=2, match="GBV verifies a single draft"),
    bad("conformance.multidraft gamma=4", _cmd, gammas=(4,), match="gamma must be ≤ 3"),
    bad("conformance.multidraft V=50", _cmd, instances=("markov1-V50-strong",), match="the exact engines need V ≤ 4"),
    bad("conformance.multidraft n=10", _cmd, n=10, match="n must be ≥ 50"),
    bad("conformance.multidraft alpha=1", _cmd, alpha=1.0, match=r"alpha must lie in \(0, 1\)"),
    bad("conformance.multidraft fn not callable", check_multidraft_verifier, 3, exc=TypeError,
        match="the verifier must be callable"),
    bad("conformance.multidraft arity 5 without a tree", _cmd, md.specinfer_tree_verifier, exc=ConformanceUsageError,
        match=r"cannot be called as fn\(p, q, drafts, rng\)"),
    bad("conformance.multidraft arity 4 with a tree", _cmd, md.specinfer_verifier, tree=(2,),
        exc=ConformanceUsageError, match=r"cannot be called as fn\(p, q, tokens, parents, rng\)"),
    bad("conformance.MultiDraftVerifier K=0", md.MultiDraftVerifier, md.specinfer_verifier, K=0,
        match=r"K \(number of drafts\) must be ≥ 1"),
    bad("conformance.specinfer_drafts_law V=50", md.specinfer_drafts_law, __import__("spectheory.instances").instances.get(
        "markov1-V50-strong"), 1, 2, match="V ≤ 4"),
    bad("conformance.specinfer_drafts_law pair", md.specinfer_drafts_law, "pair", 1, 2, exc=TypeError,
        match="pair must be a MarkovPair"),
    bad("conformance.specinfer_drafts_law state", md.specinfer_drafts_law,
        __import__("spectheory.instances").instances.get("iid-V1"), 1, 2, 3, match="state must be ≤ 0"),
    bad("conformance.specinfer_tree_law tree", md.specinfer_tree_law,
        __import__("spectheory.instances").instances.get("iid-V1"), (0,), match="branching factor must be ≥ 1"),
    bad("conformance.sequential.design n=0", sequential.design, 0, match="n must be ≥ 1"),
    bad("conformance.verdict_lines not a report", sc.verdict_lines, [], match="report must be a conformance report"),
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
        match="--kind: kind must be 'block', 'step', 'multidraft', 'assisted' or 'ragged'"),
    bad("conformance.cli usage error", run_cli, "conformance", "spectheory.conformance:CONTROLS", exc=CLIError,
        match="is not callable"),
    bad("conformance.cli trial usage error", run_cli, "conformance", TARGET, "--batched", exc=CLIError,
        match=r"exit 2: usage error: .* hint: it runs correctly on the trial inputs with --unbatched"),
    bad("conformance.cli K=0", run_cli, "conformance", "spectheory.conformance.kinds.multidraft:specinfer_verifier",
        "--kind", "multidraft", "--K", "0", exc=CLIError, match=r"K \(number of drafts\) must be ≥ 1"),
    bad("conformance.cli tree not ints", run_cli, "conformance",
        "spectheory.conformance.kinds.multidraft:specinfer_tree_verifier", "--kind", "multidraft", "--tree", "a", exc=CLIError,
        match="--tree: expected comma-separated integers"),
    bad("conformance.cli rule", run_cli, "conformance", "spectheory.conformance.kinds.multidraft:specinfer_verifier",
        "--kind", "multidraft", "--rule", "nope", exc=CLIError, match="rule must be one of"),
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
    # --- rerunnable calls and the pytest helpers (issue 26) ---
    bad("conformance.rerun no source", sc.rerun, TARGET, p=[[1.0], [1.0]], q=[[1.0]], draft=[0],
        match="give exactly one random source"),
    bad("conformance.rerun two sources", sc.rerun, TARGET, p=[[1.0], [1.0]], q=[[1.0]], draft=[0], forced="zero",
        rng_state={}, match="give exactly one random source"),
    bad("conformance.rerun no drafts", sc.rerun, TARGET, p=[[1.0], [1.0]], q=[[1.0]], forced="zero",
        match="give draft"),
    bad("conformance.rerun bad target", sc.rerun, "no_colon", p=[[1.0]], q=[[1.0]], draft=[0], forced="zero",
        match="target must be 'MODULE:FUNCTION'"),
    bad("conformance.replay_check unknown check", sc.replay_check, TARGET, check="nope", instance="iid-V1", gamma=1,
        runs=10, alpha=0.01, match="unknown check 'nope'"),
    bad("conformance.replay_check bad kind", sc.replay_check, TARGET, check="conformance.first_tokens",
        instance="iid-V1", gamma=1, runs=10, alpha=0.01, kind="tree", match="kind must be 'block', 'step', 'multidraft', 'assisted' or 'ragged'"),
    bad("testing.assert_lossless bad kind", lambda: __import__("spectheory.testing").testing.assert_lossless(
        REF, kind="tree"), match="kind must be one of"),
    bad("testing.assert_lossless not callable", lambda: __import__("spectheory.testing").testing.assert_lossless(
        3), exc=TypeError, match="fn must be the sampler"),
    # --- end-to-end generation stacks (spectheory.conformance.kinds.assisted; issue 26 5(a)) ---
    bad("conformance.assisted lm", _cag, lm="jax", match="lm must be 'hf', 'torch' or 'callable'"),
    bad("conformance.assisted setting key", _cag, settings=("temp=2",), match="cannot read setting"),
    bad("conformance.assisted setting value", _cag, settings=("T=hot",), match="not a number"),
    bad("conformance.assisted temperature 0", _cag, settings=("T=0",), match="temperature"),
    bad("conformance.assisted top_p 1.5", _cag, settings=("top_p=1.5",), match="top_p"),
    bad("conformance.assisted top_k 0", _cag, settings=("top_k=0",), match="top_k"),
    bad("conformance.assisted no settings", _cag, settings=(), match="at least one processor setting"),
    bad("conformance.assisted setting type", _cag, settings=(0.7,), exc=TypeError, match="a setting must be"),
    bad("conformance.assisted max_new_tokens 0", _cag, max_new_tokens=0, match="max_new_tokens"),
    bad("conformance.assisted too many cells", _cag, max_new_tokens=8, match="too many cells"),
    bad("conformance.assisted instance", _cag, instances=("nope",), exc=KeyError, match="nope"),
    bad("conformance.assisted signature", sc.check_assisted_generation, lambda target, draft: None,
        exc=ConformanceUsageError, match="cannot be called as a generation stack"),
    bad("conformance.assisted not callable", sc.check_assisted_generation, 3, exc=TypeError,
        match="generation stack must be callable"),
    bad("conformance.cli assisted settings", run_cli, "conformance", "spectheory.conformance.kinds.assisted:assisted_reference",
        "--kind", "assisted", "--settings", "T=x", exc=CLIError, match="not a number"),

]
