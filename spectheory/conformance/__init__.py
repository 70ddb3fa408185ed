"""Conformance: test anyone's speculative-sampling implementation for losslessness.

Five lines::

    from spectheory import conformance as sc
    def verify(p, q, draft, rng): ...          # your sampler: (γ+1,V), (γ,V), γ ids, rng -> tokens
    report = sc.check_block_verifier(verify)   # adapter="logits", dtype="float32", batched=True, ...
    sc.print_report(report)                    # lossless? standard? then every check with p-values and power

See docs/conformance.md. Two verdicts: *lossless* (what any lossless verifier must satisfy,
whatever its rule) and *matches standard speculative sampling* (Leviathan et al. 2023, Alg. 1;
for multi-draft and tree verifiers, the named rule's exact engine). spectheory's broken rules
run through the same pipeline as negative controls; every random source the sampler draws from
is routed through the checker's or flagged; a trial call turns usage mistakes into a
:class:`ConformanceUsageError` with a hint.

Each kind of sampler is one module of :mod:`.kinds` implementing the protocol of :mod:`.kind`
over a shared core (:mod:`.driver`, :mod:`.runs`, :mod:`.sources`, :mod:`.forced`,
:mod:`.severity`, :mod:`.sequential`, :mod:`.probes`, :mod:`.trial`, :mod:`.replay`, :mod:`.report`).
"""
from .adapters import ADAPTERS, BlockVerifier, VerifierOutputError, tokens_of
from .checks import CHECKS
from .fake_lm import MarkovLM, fake_lm, markov_torch_lm
from .forced import ForcedUniforms, inverse_cdf
from .kinds.assisted import check_assisted_generation
from .kinds.block import BlockKind, check_block_verifier
from .kinds.multidraft import check_multidraft_verifier
from .kinds.ragged import RaggedSampler, check_ragged_sampler
from .kinds.step import check_decoding_step, step_from_block_verifier
from .references import CONTROLS, accept_p_verifier, reference_verifier, rule_verifier
from .replay import replay_check, rerun
from .report import print_report, summary_rows, verdict_lines
from .severity import EXIT_CODES
from .sources import RandomSources, torch_uniforms
from .trial import ConformanceUsageError

#: the default instances and draft lengths of a block verifier
INSTANCES, GAMMAS = BlockKind.INSTANCES, BlockKind.GAMMAS

__all__ = ["ADAPTERS", "BlockVerifier", "VerifierOutputError", "tokens_of", "GAMMAS", "INSTANCES",
           "check_block_verifier", "check_decoding_step", "check_multidraft_verifier", "check_assisted_generation",
           "check_ragged_sampler", "RaggedSampler", "step_from_block_verifier", "CHECKS",
           "MarkovLM", "fake_lm", "markov_torch_lm", "ForcedUniforms", "inverse_cdf", "torch_uniforms",
           "CONTROLS", "accept_p_verifier", "reference_verifier", "rule_verifier", "print_report", "summary_rows",
           "verdict_lines", "RandomSources", "ConformanceUsageError", "rerun", "replay_check", "EXIT_CODES"]
