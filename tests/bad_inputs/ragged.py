"""Bad-input rows of the ragged kind (``spectheory.conformance.check_ragged_sampler``,
``spectheory conformance --kind ragged``): refused by the argument checks or by the trial call
(a :class:`ConformanceUsageError`, a ValueError) before any statistics are run."""
from __future__ import annotations

from spectheory.conformance import check_ragged_sampler
from spectheory.conformance.kinds.ragged import RaggedSampler, from_block
from spectheory.conformance.references import reference_verifier

from . import CLIError, bad, run_cli

REF = from_block(reference_verifier)
QUICK = dict(n=100, gammas=(0, 1), instances=("iid-V1",), controls=False, probes=False)


def _crs(**kw):
    return check_ragged_sampler(REF, **{**QUICK, **kw})


def _block(p, q, draft, rng):
    return [0]


ROWS = [
    bad("conformance.ragged gamma=-1", _crs, gammas=(-1, 1), match="gamma must be ≥ 0"),
    bad("conformance.ragged gamma=5", _crs, gammas=(5,), match="gamma must be ≤ 4"),
    bad("conformance.ragged no gammas", _crs, gammas=(), match="gammas must name at least one draft length"),
    bad("conformance.ragged gammas int", _crs, gammas=2, exc=TypeError, match="gammas must be a sequence"),
    bad("conformance.ragged n=10", _crs, n=10, match="n must be ≥ 50"),
    bad("conformance.ragged alpha=0", _crs, alpha=0.0, match=r"alpha must lie in \(0, 1\)"),
    bad("conformance.ragged unknown instance", _crs, instances=("nope",), exc=KeyError, match="unknown instance"),
    bad("conformance.ragged offsets", _crs, offsets="starts", match="offsets must be one of"),
    bad("conformance.ragged bonus", _crs, bonus="none", match="bonus must be one of"),
    bad("conformance.ragged batched", RaggedSampler, REF, batched=True, match="batched does not apply"),
    bad("conformance.ragged fn not callable", check_ragged_sampler, 3, **QUICK, exc=TypeError,
        match="the verifier must be callable"),
    bad("conformance.ragged block signature", check_ragged_sampler, _block, **QUICK,
        match="cannot be called as fn\\(draft_token_ids"),
    bad("conformance.ragged bonus inside on a given-bonus sampler", _crs, bonus="inside", match="--bonus given"),
    bad("cli.conformance ragged --batched", run_cli, "conformance", "spectheory.conformance:reference_verifier",
        "--kind", "ragged", "--batched", "--n", "100", exc=CLIError, match="--batched does not apply"),
]
