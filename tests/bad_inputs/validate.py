"""Bad-input rows of the real-model validation package (the NumPy side: traces, replay of SD,
SE, ERSD and multi-draft, lumping, analysis, evidence) and of ``spectheory validate`` /
``spectheory sweep`` argument errors. No row loads or downloads a model: the CLI rows are all
refused before a model is installed."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from spectheory.distributions import DistributionError, softmax
from spectheory.validate import (CompactTrace, LogitTrace, compare, replay, sampling_probs, sufficient_statistics,
                      trace_exact_tokens)
from spectheory.validate.analysis import cost_profile, summarize
from spectheory.validate.compare import evidence_from_report
from spectheory.validate.capture import capture_logits, capture_trace
from spectheory.validate.evidence import logits_evidence, sd_evidence
from spectheory.validate.experiment import Run, check_run, load_run, run_experiment
from spectheory.validate.prompts import Prompt
from spectheory.validate.lumping import pooled, run_context, sample_lumped
from spectheory.validate.replay_ersd import ersd_brackets, evidence_ersd, race_indices, replay_ersd
from spectheory.validate.replay_ersd import logits_evidence as ersd_logits_evidence
from spectheory.validate.replay_multidraft import gamma1_brackets, replay_multidraft
from spectheory.validate.replay_multidraft import logits_evidence as md_logits_evidence
from spectheory.validate.replay_se import evidence as se_evidence
from spectheory.validate.replay_se import logits_evidence as se_logits_evidence
from spectheory.validate.replay_se import replay_se, trace_exact_tokens_no_bonus

from spectheory.validate.capture import HiddenSpec, capture_batch
from spectheory.validate.loops import LoopRun, run_loop
from spectheory.validate.models import resolve_dtype
from spectheory.validate.power import martingale_test, martingale_test_estimated, n_needed
from spectheory.validate.specdec import SDRun, speculative_decode_batch

from . import CLIError, bad, run_cli

NAN = float("nan")
_rng = np.random.default_rng(0)
T_, V_ = 12, 6
TL = _rng.normal(0, 2, (T_, V_))
DL = TL + _rng.normal(0, 1, (T_, V_))
TOKS = np.array([_rng.choice(V_, p=row) for row in softmax(TL)])
TRACE = LogitTrace(TL, DL, TOKS, name="syn")
CT = TRACE.compact()
P, Q = softmax(TL), softmax(DL)
ST = CT.stats
SP, SQ = CT.slice_p.astype(np.float64), CT.slice_q.astype(np.float64)
LP, LQ = CT.lumped()
RUN = Run(Path("/nonexistent-run"), {}, [CT], {})
POOL = pooled(RUN)
REP = replay(TRACE, 2, n_mc=20, seed=0)
SE_REP = replay_se(TRACE, n_mc=20, lambdas=(0.5,), mus=())
ERSD_REP = replay_ersd(TRACE, n_mc=20, k=2, m=2)
RNG = np.random.default_rng(1)
_TMP = Path(tempfile.mkdtemp(prefix="spectheory-bad-validate-"))
(_TMP / "junk.npz").write_bytes(b"not an archive")
np.savez(_TMP / "other.npz", a=np.zeros(2))


PROMPT = Prompt("p0", "code", "def f():", (("user", "def f():"),))
# a run directory whose run.json is not JSON, one of an unknown format, a truncated SD record
(_TMP / "badjson").mkdir()
(_TMP / "badjson" / "run.json").write_text("{not json")
(_TMP / "otherfmt").mkdir()
(_TMP / "otherfmt" / "run.json").write_text('{"format": "spectheory.validate-run/9"}')
_SDR = SDRun(2, np.array([1, 2]), np.array([2, 3]), np.full((2, 2), 0.5), np.full((2, 2), 0.5), np.zeros((2, 2)),
             np.zeros(2), np.array([3, 3]), np.zeros(2), np.array([5, 6, 7, 8, 9]))
_SDR.save(_TMP / "sd.npz")
(_TMP / "sd_cut.npz").write_bytes((_TMP / "sd.npz").read_bytes()[:60])
Y01 = np.array([0.0, 1.0, 1.0, 0.0])
MU = np.array([0.5, 0.5, 0.6, 0.4])


def _sdb(**kw):
    """speculative_decode_batch with no models: every row is refused before a model is touched."""
    args = dict(prompts=[[1, 2, 3]], gamma=2, max_new_tokens=4)
    args.update(kw)
    return speculative_decode_batch(None, None, args.pop("prompts"), args.pop("gamma"), args.pop("max_new_tokens"),
                                    **args)


def _capb(**kw):
    args = dict(prompts=[[1, 2, 3]], max_new_tokens=4)
    args.update(kw)
    return capture_batch(None, None, args.pop("prompts"), args.pop("max_new_tokens"), **args)


def _loop(name, **kw):
    return run_loop(name, None, None, [[1, 2, 3]], 4, **kw)


def _capture(**kw):
    """capture_trace with no models: every row is refused before a model (or torch) is touched."""
    args = dict(prompt_ids=[1, 2], max_new_tokens=4)
    args.update(kw)
    return capture_trace(None, None, args.pop("prompt_ids"), args.pop("max_new_tokens"), **args)


def _experiment(**kw):
    """run_experiment with no models: refused before the run directory is created."""
    return run_experiment(_TMP / "never-created", None, None, kw.pop("prompts", [PROMPT]),
                          kw.pop("encode", lambda p: [1, 2]), **kw)


def _ct(**kw):
    args = dict(tokens=TOKS, stats=ST, slice_ids=CT.slice_ids, slice_p=CT.slice_p, slice_q=CT.slice_q)
    args.update(kw)
    return CompactTrace(args.pop("tokens"), args.pop("stats"), args.pop("slice_ids"), args.pop("slice_p"),
                        args.pop("slice_q"), **args)


ROWS = [
    # --- traces (spectheory.validate.capture.LogitTrace, spectheory.validate.trace) ---
    bad("validate.LogitTrace temperature=0", LogitTrace, TL, DL, TOKS, temperature=0.0, exc=DistributionError,
        match="temperature must be a positive finite number"),
    bad("validate.LogitTrace logits NaN", LogitTrace, TL * NAN, DL, TOKS, exc=DistributionError,
        match="target_logits contains NaN"),
    bad("validate.LogitTrace.probs temperature<0", TRACE.probs, -1.0, exc=DistributionError,
        match="temperature must be a positive finite number"),
    bad("validate.LogitTrace.compact top_k=0", TRACE.compact, None, 0, match="top_k must be ≥ 1"),
    bad("validate.LogitTrace.compact top_k=1.5", TRACE.compact, None, 1.5, match="top_k must be an integer"),
    bad("validate.sampling_probs temperature<0", sampling_probs, TL, -1.0, match="temperature must be finite and ≥ 0"),
    bad("validate.sampling_probs top_k=0", sampling_probs, TL, 1.0, top_k=0, match="top_k must be ≥ 1"),
    bad("validate.sampling_probs top_k str", sampling_probs, TL, 1.0, top_k="3", exc=TypeError,
        match="top_k must be an integer"),
    bad("validate.sampling_probs top_p=0", sampling_probs, TL, 1.0, top_p=0.0, match=r"top_p must lie in \(0, 1\]"),
    bad("validate.sampling_probs top_p=NaN", sampling_probs, TL, 1.0, top_p=NAN, match="top_p must be finite"),
    bad("validate.sampling_probs scalar", sampling_probs, 1.0, exc=DistributionError,
        match="logits must be a non-empty array over the vocabulary"),
    bad("validate.sampling_probs empty vocabulary", sampling_probs, np.zeros((2, 0)), exc=DistributionError,
        match="logits must be a non-empty array over the vocabulary"),
    bad("validate.sufficient_statistics p not normalised", sufficient_statistics, 2 * P, Q, TOKS, exc=DistributionError,
        match="p does not sum to 1"),
    bad("validate.sufficient_statistics q NaN", sufficient_statistics, P, Q * NAN, TOKS, exc=DistributionError,
        match="q contains NaN"),
    bad("validate.sufficient_statistics top_k=1.5", sufficient_statistics, P, Q, TOKS, 1.5,
        match="top_k must be an integer"),
    bad("validate.sufficient_statistics token out of range", sufficient_statistics, P, Q, TOKS + V_,
        exc=DistributionError, match=r"tokens must lie in \[0, 6\)"),
    bad("validate.CompactTrace stats NaN", _ct, stats={k: v * NAN for k, v in ST.items()}, exc=DistributionError,
        match=r"stats\['beta'\] contains NaN"),
    bad("validate.CompactTrace beta > 1", _ct, stats={**ST, "beta": ST["beta"] + 1}, exc=DistributionError,
        match=r"stats\['beta'\] must lie in \[0, 1\]"),
    bad("validate.CompactTrace negative entropy", _ct, stats={**ST, "entropy_p": -ST["entropy_p"] - 1},
        exc=DistributionError, match=r"stats\['entropy_p'\] must lie in \[0, inf\]"),
    bad("validate.CompactTrace float tokens", _ct, tokens=TOKS + 0.5, match="tokens must hold integers"),
    bad("validate.CompactTrace negative tokens", _ct, tokens=-TOKS - 1, match="tokens must be ≥ 0"),
    bad("validate.CompactTrace negative slice_p", _ct, slice_p=-CT.slice_p, exc=DistributionError,
        match="slice_p must hold probabilities"),
    bad("validate.CompactTrace negative slice_ids", _ct, slice_ids=-CT.slice_ids - 1, exc=DistributionError,
        match="slice_ids must be token ids ≥ 0"),
    bad("validate.CompactTrace meta temperature<0", _ct, meta={"temperature": -1}, match=r"meta\['temperature'\]"),
    bad("validate.CompactTrace.load not an archive", CompactTrace.load, _TMP / "junk.npz",
        match="not a readable spectheory.trace/3 file .*Delete it and rerun"),
    bad("validate.CompactTrace.load other archive", CompactTrace.load, _TMP / "other.npz",
        match="not a spectheory.trace/3 file"),
    # --- SD replay (spectheory.validate.replay, spectheory.validate.compare) ---
    bad("spectheory.validate.replay not a trace", replay, "t", 2, exc=TypeError, match="expected a LogitTrace or CompactTrace"),
    bad("spectheory.validate.replay gamma=1.5", replay, TRACE, 1.5, match="gamma .*must be an integer ≥ 1"),
    bad("spectheory.validate.replay n_mc=0", replay, TRACE, 2, n_mc=0, match="n_mc must be an integer ≥ 1"),
    bad("spectheory.validate.replay seed=-1", replay, TRACE, 2, seed=-1, match="seed must be ≥ 0"),
    bad("spectheory.validate.replay rule str", replay, TRACE, 2, rule="standard", exc=TypeError, match="rule must be an SDRule"),
    bad("spectheory.validate.replay temperature=0", replay, TRACE, 2, temperature=0.0, match=r"temperature must lie in \(0"),
    bad("spectheory.validate.replay temperature str", replay, CT, 2, temperature="x", exc=TypeError,
        match="temperature must be a real number"),
    bad("validate.trace_exact_tokens beta NaN", trace_exact_tokens, [0.5, NAN, 0.5], 2, match="beta must be finite"),
    bad("validate.trace_exact_tokens beta > 1", trace_exact_tokens, [0.5, 2.0, 0.5], 2, match="beta must be ≤ 1"),
    bad("validate.trace_exact_tokens beta < 0", trace_exact_tokens, [0.5, -1.0, 0.5], 2, match="beta must be ≥ 0"),
    bad("validate.trace_exact_tokens 2-D beta", trace_exact_tokens, [[0.5, 0.5]], 1, match="beta must be a 1-D array"),
    bad("validate.evidence_from_report alpha=0", evidence_from_report, REP, 0.1, alpha=0.0,
        match=r"alpha must lie in \(0, 1\)"),
    bad("validate.evidence_from_report tolerance<0", evidence_from_report, REP, 0.1, tolerance=-1.0,
        match=r"tolerance must lie in \(0"),
    bad("validate.evidence_from_report rep str", evidence_from_report, "r", 0.1, exc=TypeError,
        match="rep must be a ReplayReport"),
    bad("spectheory.validate.compare alpha=2", compare, TRACE, 2, 0.1, alpha=2.0, match=r"alpha must lie in \(0, 1\)"),
    bad("spectheory.validate.compare trace str", compare, "t", 2, 0.1, exc=TypeError,
        match="expected a LogitTrace or CompactTrace"),
    # --- SE replay (spectheory.validate.replay_se) ---
    bad("validate.trace_exact_tokens_no_bonus alpha NaN", trace_exact_tokens_no_bonus, [0.5, NAN], 1,
        match=r"alpha \(per-position acceptance\) must be finite"),
    bad("validate.trace_exact_tokens_no_bonus alpha > 1", trace_exact_tokens_no_bonus, [0.5, 2.0], 1,
        match=r"alpha \(per-position acceptance\) must be ≤ 1"),
    bad("validate.trace_exact_tokens_no_bonus gamma=0", trace_exact_tokens_no_bonus, [0.5, 0.5], 0,
        match="γ must be ≥ 1"),
    bad("spectheory.validate.replay_se compact trace", replay_se, CT, exc=TypeError, match="expected a LogitTrace"),
    bad("spectheory.validate.replay_se lambdas float", replay_se, TRACE, lambdas=0.5, exc=TypeError,
        match="lambdas must be a sequence of numbers"),
    bad("spectheory.validate.replay_se empty grid", replay_se, TRACE, lambdas=(), mus=(), match="lambdas and mus are both empty"),
    bad("spectheory.validate.replay_se mu<0", replay_se, TRACE, mus=(-1.0,), match=r"μ must lie in \[0"),
    bad("spectheory.validate.replay_se temperature=0", replay_se, TRACE, temperature=0.0, match=r"temperature must lie in \(0"),
    bad("spectheory.validate.replay_se seed=-1", replay_se, TRACE, seed=-1, match="seed must be ≥ 0"),
    bad("spectheory.validate.replay_se rule str", replay_se, TRACE, rule="standard", exc=TypeError,
        match="rule must be an SERule"),
    bad("spectheory.validate.replay_se.evidence alpha=0", se_evidence, SE_REP, alpha=0.0, match=r"alpha must lie in \(0, 1\)"),
    bad("spectheory.validate.replay_se.evidence rep str", se_evidence, "r", exc=TypeError, match="rep must be an SEReplay"),
    bad("spectheory.validate.replay_se.logits_evidence run str", se_logits_evidence, "run", exc=TypeError,
        match="run must be a spectheory.validate.experiment.Run"),
    bad("spectheory.validate.replay_se.logits_evidence alpha=0", se_logits_evidence, RUN, 0.0,
        match=r"alpha must lie in \(0, 1\)"),
    bad("spectheory.validate.replay_se.logits_evidence n_mc=1", se_logits_evidence, RUN, n_mc=1, match="n_mc must be ≥ 2"),
    # --- ERSD replay (spectheory.validate.replay_ersd) ---
    bad("spectheory.validate.replay_ersd k=0", replay_ersd, TRACE, k=0, match="k must be ≥ 1"),
    bad("spectheory.validate.replay_ersd n_mc=1", replay_ersd, TRACE, n_mc=1, match="n_mc must be ≥ 2"),
    bad("spectheory.validate.replay_ersd tree deeper than the trace", replay_ersd, TRACE, k=100, n_mc=10,
        match="too short for a tree of depth"),
    bad("validate.race_indices NaN", race_indices, np.array([NAN, 1.0]), np.array([0.5, 0.5]), 3, RNG,
        exc=DistributionError, match=r"p \(target\) contains NaN"),
    bad("validate.race_indices mismatched V", race_indices, np.array([0.5, 0.5]), np.array([0.2, 0.3, 0.5]), 3, RNG,
        exc=DistributionError, match="mismatched vocabularies"),
    bad("validate.race_indices n=0", race_indices, np.array([0.5, 0.5]), np.array([0.5, 0.5]), 0, RNG,
        match="n must be ≥ 1"),
    bad("validate.race_indices rng int", race_indices, np.array([0.5, 0.5]), np.array([0.5, 0.5]), 3, 5,
        exc=TypeError, match="rng must be a Generator"),
    bad("validate.evidence_ersd alpha=0", evidence_ersd, ERSD_REP, alpha=0.0, match=r"alpha must lie in \(0, 1\)"),
    bad("validate.evidence_ersd rep str", evidence_ersd, "r", exc=TypeError, match="rep must be an ERSDReplay"),
    bad("validate.ersd_brackets slice shapes", ersd_brackets, SP, SQ[:, :2], ST["p_rest"], ST["q_rest"], ST["beta"],
        ST["beta_slice"], match=r"sp and sq must be \(N, k\) slices of one shape"),
    bad("validate.ersd_brackets NaN slice", ersd_brackets, SP * NAN, SQ, ST["p_rest"], ST["q_rest"], ST["beta"],
        ST["beta_slice"], match=r"sp \(target slice\) must be finite"),
    bad("validate.ersd_brackets short statistic", ersd_brackets, SP, SQ, ST["p_rest"][:2], ST["q_rest"], ST["beta"],
        ST["beta_slice"], match=r"per-position statistic 0 must have shape \(12,\)"),
    bad("spectheory.validate.replay_ersd.logits_evidence alpha=2", ersd_logits_evidence, RUN, 2.0,
        match=r"alpha must lie in \(0, 1\)"),
    bad("spectheory.validate.replay_ersd.logits_evidence k=0", ersd_logits_evidence, RUN, k=0, match="k must be ≥ 1"),
    # --- multi-draft replay (spectheory.validate.replay_multidraft) ---
    bad("spectheory.validate.replay_multidraft trace str", replay_multidraft, "t", 2, 2, exc=TypeError,
        match="trace must be a LogitTrace"),
    bad("spectheory.validate.replay_multidraft K=0", replay_multidraft, TRACE, 2, 0, match="K must be ≥ 1"),
    bad("spectheory.validate.replay_multidraft gamma ≥ T", replay_multidraft, TRACE, 20, 2, match="needs a trace longer than"),
    bad("spectheory.validate.replay_multidraft temperature<0", replay_multidraft, TRACE, 2, 2, temperature=-1.0,
        exc=DistributionError, match="temperature must be a positive finite number"),
    bad("validate.gamma1_brackets K=0", gamma1_brackets, LP, LQ, SP, SQ, ST, 0, match="K must be ≥ 1"),
    bad("validate.gamma1_brackets lumped shape", gamma1_brackets, LP[:2], LQ, SP, SQ, ST, 2,
        match=r"P and Q must be the lumped \(N, k\+1\)"),
    bad("validate.gamma1_brackets statistics missing", gamma1_brackets, LP, LQ, SP, SQ, {}, 2,
        match="st must hold the exact statistics"),
    bad("spectheory.validate.replay_multidraft.logits_evidence K=1", md_logits_evidence, RUN, Ks=(1,), match="K must be ≥ 2"),
    bad("spectheory.validate.replay_multidraft.logits_evidence alpha=0", md_logits_evidence, RUN, 0.0,
        match=r"alpha must lie in \(0, 1\)"),
    # --- lumping, analysis, evidence, run directories ---
    bad("validate.pooled run str", pooled, "run", exc=TypeError, match="run must be a spectheory.validate.experiment.Run"),
    bad("validate.run_context run str", run_context, "run", POOL, exc=TypeError,
        match="run must be a spectheory.validate.experiment.Run"),
    bad("validate.run_context pool str", run_context, RUN, "pool", exc=TypeError, match="pool must be a Pooled"),
    bad("validate.sample_lumped n=0", sample_lumped, LP, 0, RNG, match="n must be ≥ 1"),
    bad("validate.sample_lumped NaN", sample_lumped, LP * NAN, 3, RNG, exc=DistributionError,
        match=r"Q \(lumped distributions\) must be finite and non-negative"),
    bad("validate.sample_lumped zero row", sample_lumped, np.zeros((2, 3)), 3, RNG, exc=DistributionError,
        match="row with zero total mass"),
    bad("validate.sample_lumped 1-D", sample_lumped, LP[0], 3, RNG, match=r"Q must be an \(N, k\+1\) array"),
    bad("validate.sample_lumped rng str", sample_lumped, LP, 3, "x", exc=TypeError, match="rng must be a Generator"),
    bad("validate.cost_profile traces str", cost_profile, "t", [], exc=TypeError,
        match="traces must be a list of CompactTrace"),
    bad("validate.cost_profile sd_runs of traces", cost_profile, [CT], [CT], exc=TypeError,
        match="sd_runs must be a list of SDRun"),
    bad("validate.summarize run str", summarize, "run", exc=TypeError, match="run must be a spectheory.validate.experiment.Run"),
    bad("validate.sd_evidence run str", sd_evidence, "run", exc=TypeError,
        match="run must be a spectheory.validate.experiment.Run"),
    bad("validate.sd_evidence alpha=0", sd_evidence, RUN, 0.0, match=r"alpha must lie in \(0, 1\)"),
    bad("validate.logits_evidence alpha=0", logits_evidence, RUN, 0.0, match=r"alpha must lie in \(0, 1\)"),
    bad("validate.logits_evidence not a run directory", logits_evidence, _TMP, exc=FileNotFoundError,
        match="not a validate run directory"),
    bad("validate.load_run missing", load_run, _TMP / "nope", exc=FileNotFoundError,
        match="not a validate run directory"),
    # --- capture and run directories: refused before torch is imported or a model is called ---
    bad("validate.capture_logits max_new_tokens=0", capture_logits, None, None, None, "p", 0,
        match="max_new_tokens must be ≥ 1"),
    bad("validate.capture_logits temperature=0", capture_logits, None, None, None, "p", 4, 0.0,
        match=r"temperature must lie in \(0"),
    bad("validate.capture_logits seed=-1", capture_logits, None, None, None, "p", 4, seed=-1, match="seed must be ≥ 0"),
    bad("validate.capture_trace max_new_tokens=1.5", _capture, max_new_tokens=1.5,
        match="max_new_tokens must be an integer"),
    bad("validate.capture_trace temperature<0", _capture, temperature=-1.0, match="temperature must be finite and ≥ 0"),
    bad("validate.capture_trace top_k=0", _capture, top_k=0, match="top_k must be ≥ 1"),
    bad("validate.capture_trace top_p=2", _capture, top_p=2.0, match=r"top_p must lie in \(0, 1\]"),
    bad("validate.capture_trace seed=-1", _capture, seed=-1, match="seed must be ≥ 0"),
    bad("validate.capture_trace slice_k=0", _capture, slice_k=0, match="slice_k must be ≥ 1"),
    bad("validate.capture_trace empty prompt", _capture, prompt_ids=[],
        match="the prompt must hold at least one token"),
    bad("validate.capture_trace negative prompt id", _capture, prompt_ids=[-1], match="prompt_ids must be ≥ 0"),
    bad("validate.capture_trace prompt id ≥ vocab_size", _capture, prompt_ids=[7], vocab_size=6,
        match="prompt_ids must be ≤ 5"),
    bad("validate.run_experiment gammas empty", _experiment, gammas=(), match="gammas must be a non-empty sequence"),
    bad("validate.run_experiment gamma=0", _experiment, gammas=(0,), match="gamma must be ≥ 1"),
    bad("validate.run_experiment max_new_tokens=0", _experiment, max_new_tokens=0, match="max_new_tokens must be ≥ 1"),
    bad("validate.run_experiment temperature<0", _experiment, temperature=-1.0,
        match="temperature must be finite and ≥ 0"),
    bad("validate.run_experiment top_p=0", _experiment, top_p=0.0, match=r"top_p must lie in \(0, 1\]"),
    bad("validate.run_experiment seed=-1", _experiment, seed=-1, match="seed must be ≥ 0"),
    bad("validate.run_experiment slice_k=0", _experiment, slice_k=0, match="slice_k must be ≥ 1"),
    bad("validate.run_experiment probe_every=0", _experiment, probe_every=0, match="probe_every must be ≥ 1"),
    bad("validate.run_experiment prompts str", _experiment, prompts="p", exc=TypeError,
        match="prompts must be a list of spectheory.validate.prompts.Prompt"),
    bad("validate.run_experiment encode not callable", _experiment, encode=3, exc=TypeError,
        match="encode must be callable"),
    bad("validate.check_run str", check_run, "run", exc=TypeError, match="run must be a spectheory.validate.experiment.Run"),
    # --- command line: spectheory validate (refused before any model is installed or loaded) ---
    bad("validate.cli gammas not ints", run_cli, "validate", "--gammas", "a", exc=CLIError,
        match="--gammas must be comma-separated integers"),
    bad("validate.cli gammas=0", run_cli, "validate", "--gammas", "0", exc=CLIError,
        match="--gammas must be integers ≥ 1"),
    bad("validate.cli n=0", run_cli, "validate", "--n", "0", exc=CLIError,
        match="--n and --max-new-tokens must be ≥ 1"),
    bad("validate.cli max-new-tokens=0", run_cli, "validate", "--max-new-tokens", "0", exc=CLIError,
        match="--n and --max-new-tokens must be ≥ 1"),
    bad("validate.cli temperature<0", run_cli, "validate", "--temperature", "-1", exc=CLIError,
        match="--temperature must be finite and ≥ 0"),
    bad("validate.cli temperature=nan", run_cli, "validate", "--temperature", "nan", exc=CLIError,
        match="--temperature must be finite and ≥ 0"),
    bad("validate.cli top-k=0", run_cli, "validate", "--top-k", "0", exc=CLIError, match="--top-k must be ≥ 1"),
    bad("validate.cli top-p=1.5", run_cli, "validate", "--top-p", "1.5", exc=CLIError,
        match=r"--top-p must lie in \(0, 1\]"),
    bad("validate.cli slice-k=0", run_cli, "validate", "--slice-k", "0", exc=CLIError, match="--slice-k must be ≥ 1"),
    bad("validate.cli probe-every=0", run_cli, "validate", "--probe-every", "0", exc=CLIError,
        match="--probe-every must be ≥ 1"),
    bad("validate.cli threads=0", run_cli, "validate", "--threads", "0", exc=CLIError, match="--threads must be ≥ 1"),
    bad("validate.cli seed=-1", run_cli, "validate", "--seed", "-1", exc=CLIError, match="--seed must be ≥ 0"),
    bad("validate.cli unknown prompt set", run_cli, "validate", "--prompts", "nope", exc=CLIError,
        match="unknown prompt set 'nope'"),
    bad("validate.cli no prompt set", run_cli, "validate", "--prompts", ",", exc=CLIError,
        match="name at least one prompt set"),
    bad("validate.cli target without draft", run_cli, "validate", "--target", "x", exc=CLIError,
        match="give both --target and --draft"),
    bad("validate.cli report of a missing run", run_cli, "validate", "report", _TMP / "nope", exc=CLIError,
        match="not a validate run directory"),
    # --- batched SD and capture, family loops, power (spectheory.validate.specdec, capture, loops, power) ---
    bad("validate.speculative_decode_batch gamma=0", _sdb, gamma=0, match="gamma .*must be an integer ≥ 1"),
    bad("validate.speculative_decode_batch max_new_tokens=0", _sdb, max_new_tokens=0,
        match="max_new_tokens must be an integer ≥ 1"),
    bad("validate.speculative_decode_batch batch=0", _sdb, batch=0, match="batch must be ≥ 1"),
    bad("validate.speculative_decode_batch empty prompt", _sdb, prompts=[[]], match="each holding at least one token"),
    bad("validate.speculative_decode_batch seeds mismatch", _sdb, seeds=[0, 1],
        match="seeds, names and categories must have one entry per prompt"),
    bad("validate.speculative_decode_batch temperature<0", _sdb, temperature=-1.0,
        match="temperature must be finite and ≥ 0"),
    bad("validate.capture_batch batch=0", _capb, batch=0, match="batch must be ≥ 1"),
    bad("validate.capture_batch hidden not a spec", _capb, hidden=4, exc=TypeError,
        match="hidden must be a spectheory.validate.capture.HiddenSpec"),
    bad("validate.capture_batch seed=-1", _capb, seeds=[-1], match="seed must be ≥ 0"),
    bad("validate.HiddenSpec layers=0", HiddenSpec, 0, match="hidden layers must be ≥ 1"),
    bad("validate.HiddenSpec dims<0", HiddenSpec, 2, -1, match="hidden dims must be ≥ 0"),
    bad("validate.run_loop unknown", _loop, "nope", match="unknown family loop 'nope'"),
    bad("validate.run_loop se λ=2", _loop, "se", options=dict(lam=2.0), match="λ must lie in"),
    bad("validate.run_loop se γ_q=0", _loop, "se", options=dict(gamma_q=0), match="γ_q must be ≥ 1"),
    bad("validate.run_loop multidraft algorithm", run_loop, "spectr_gbv", None, None, [[1]], 4,
        options=dict(algorithm="nope"), match="multidraft algorithm must be one of"),
    bad("validate.run_loop kseq K=0", _loop, "kseq", options=dict(K=0), match="K .drafts. must be ≥ 1"),
    bad("validate.run_loop ersd k=0", _loop, "ersd", options=dict(k=0), match="k .alternatives. must be ≥ 1"),
    bad("validate.LoopRun.load not an archive", LoopRun.load, _TMP / "junk.npz",
        match="not a readable spectheory.looprun/1 file"),
    bad("validate.SDRun.load truncated", SDRun.load, _TMP / "sd_cut.npz",
        match="sd_cut.npz: not a readable spectheory.sdrun/2 file .*Delete it and rerun"),
    bad("validate.load_run run.json not JSON", load_run, _TMP / "badjson", match="not valid JSON"),
    bad("validate.load_run unknown format", load_run, _TMP / "otherfmt", match="this spectheory reads"),
    bad("validate.n_needed tolerance=0", n_needed, 0.1, 1e-3, 0.0, match="tolerance > 0"),
    bad("validate.n_needed var<0", n_needed, -0.1, 1e-3, 0.02, match="var_per_trial must be finite and ≥ 0"),
    bad("validate.martingale_test not indicators", martingale_test, "c", "i", Y01 + 0.5, MU, alpha=1e-3,
        tolerance=0.02, what="x", trials="t", match="0/1 indicators"),
    bad("validate.martingale_test lengths differ", martingale_test, "c", "i", Y01, MU[:3], alpha=1e-3,
        tolerance=0.02, what="x", trials="t", match="of one length"),
    bad("validate.martingale_test NaN", martingale_test, "c", "i", Y01, MU * NAN, alpha=1e-3,
        tolerance=0.02, what="x", trials="t", match="probs must be finite"),
    bad("validate.martingale_test_estimated one trial", martingale_test_estimated, "c", "i", Y01[:1], MU[:1],
        alpha=1e-3, tolerance=0.02, what="x", trials="t", match="of one length ≥ 2"),
    bad("validate.resolve_dtype unknown", resolve_dtype, "float8", match="dtype must be 'auto' or one of"),
    bad("validate.resolve_dtype int8 on cuda", resolve_dtype, "int8", "cuda", match="runs on the CPU only"),
    bad("validate.run_experiment batch=0", _experiment, batch=0, match="batch must be ≥ 1"),
    bad("validate.run_experiment unknown family", _experiment, families=("nope",), match="unknown family loops"),
    bad("validate.run_experiment capture not a subset", _experiment, capture=[Prompt("x", "c", "", ())],
        match="capture must be a sub-list of prompts"),
    bad("validate.run_experiment hidden not a spec", _experiment, hidden=3, exc=TypeError,
        match="hidden must be a spectheory.validate.capture.HiddenSpec"),
    bad("validate.cli batch=0", run_cli, "validate", "--batch", "0", exc=CLIError, match="--batch must be ≥ 1"),
    bad("validate.cli dtype unknown", run_cli, "validate", "--dtype", "float8", exc=CLIError,
        match="--dtype must be auto or one of"),
    bad("validate.cli unknown family", run_cli, "validate", "--families", "nope", exc=CLIError,
        match="unknown family loops"),
    bad("validate.cli capture-n<0", run_cli, "validate", "--capture-n", "-1", exc=CLIError,
        match="--capture-n must be ≥ 0"),
    bad("validate.cli hidden-layers<0", run_cli, "validate", "--hidden-layers", "-1", exc=CLIError,
        match="--hidden-layers must be ≥ 0"),
    bad("validate.cli family-n=0", run_cli, "validate", "--family-n", "0", exc=CLIError,
        match="--family-n must be ≥ 1"),
    # --- command line: spectheory sweep (argument errors, refused before any job runs) ---
    bad("sweep.cli unknown kind", run_cli, "sweep", "nope.kind", exc=CLIError, match="unknown job kind 'nope.kind'"),
    bad("sweep.cli missing module", run_cli, "sweep", "nomod_xyz:fn", exc=CLIError,
        match="No module named 'nomod_xyz'"),
    bad("sweep.cli reps=0", run_cli, "sweep", "sd.mc", "--reps", "0", exc=CLIError, match="--reps: reps must be ≥ 1"),
    bad("sweep.cli seed=-1", run_cli, "sweep", "sd.mc", "--seed", "-1", exc=CLIError, match="--seed: seed must be ≥ 0"),
    bad("sweep.cli workers=0", run_cli, "sweep", "sd.mc", "--workers", "0", exc=CLIError,
        match="--workers: workers must be ≥ 1"),
    bad("sweep.cli workers and scheduler", run_cli, "sweep", "sd.mc", "--workers", "2", "--scheduler", "tcp://x:1",
        exc=CLIError, match="give either --workers"),
    bad("sweep.cli grid without values", run_cli, "sweep", "sd.mc", "-g", "gamma=", exc=CLIError,
        match="--grid: expected NAME=V1,V2"),
    bad("sweep.cli grid without =", run_cli, "sweep", "sd.mc", "-g", "gamma", exc=CLIError,
        match="--grid: expected NAME=V1,V2"),
]
