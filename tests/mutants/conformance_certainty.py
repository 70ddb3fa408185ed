"""Mutants of issue 35's conformance logic: impossible tokens as proof, severity from the triggering
event's probability, faithful forcing, probes that hit their target, compiled code found through
objects, one rerunnable call per bug, and the kinds' shared core. Each must be caught by the fast
tier's conformance tests."""

CLAIMS = None  # the conformance API runs no registered claim: the fast tier must catch these
TESTS = ("tests/test_conformance_certainty.py tests/test_conformance_subchecks.py tests/test_conformance.py "
         "tests/test_conformance_accounting.py tests/test_conformance_fixtures.py")

CK = "spectheory/conformance/checks.py"
SV = "spectheory/conformance/severity.py"
RU = "spectheory/conformance/runs.py"
FO = "spectheory/conformance/forced.py"
PR = "spectheory/conformance/probes.py"
CO = "spectheory/conformance/compiled.py"
BK = "spectheory/conformance/kinds/block.py"

MUTANTS = [
    # --- impossible outputs are proof ---
    dict(path=CK, old="    bad = live & (table[np.maximum(st, 0), np.maximum(trace.emitted, 0)] <= 0)",
         new="    bad = live & (table[np.maximum(st, 0), np.maximum(trace.emitted, 0)] < 0)",
         why="the impossible-token check never sees a token of probability 0"),
    dict(path=BK, old='                 "iid-V1", SPARSE)',
         new='                 "iid-V1")',
         why="the large sparse vocabulary dropped from the defaults: a clamp bug is found by chance again"),
    dict(path=RU, old="        if p_list[s][t] <= 0.0:",
         new="        if p_list[s][t] < 0.0:",
         why="the runs never note an impossible token, so none is traced to its trigger or given a call"),
    # --- severity from the event's probability ---
    dict(path=SV, old="    return \"boundary\" if probability is not None and probability < THRESHOLD else otherwise",
         new="    return \"boundary\" if probability is not None and probability > THRESHOLD else otherwise",
         why="an event of probability below the threshold is not a boundary failure (u = 0 in float32 a crash)"),
    dict(path=RU, old="                if nudged.nudged and not still_fails(out):",
         new="                if nudged.nudged:",
         why="any failure in a call that drew an extreme is blamed on the extreme, law bugs included"),
    dict(path=RU, old="        if trig is not None and (trig.get(\"output\") is not None or trig.get(\"seen\")):",
         new="        if False:",
         why="a crash triggered by u = 0 ends the block as a crash on ordinary inputs"),
    dict(path=FO, old="            if v == 0.0 or v == top:\n                object.__setattr__(self, \"extremes\", self.extremes + 1)",
         new="            if v == top:\n                object.__setattr__(self, \"extremes\", self.extremes + 1)",
         why="a uniform of exactly 0 is not counted as an extreme: its crash is never traced to it"),
    # --- faithful forcing ---
    dict(path=FO, old='        u = np.asarray(rng.random(shape, dtype=np.float64), dtype=np.float64)\n    if isinstance(rng, Forced',
         new='        u = np.asarray(rng.random(shape, dtype=np.float32), dtype=np.float64)\n    if isinstance(rng, Forced',
         why="exponential_ from float32 uniforms: exactly 0 at 2^-24, where torch's kernel gives 0 at 2^-53"),
    dict(path=FO, old="    return np.where(v == 1, v.dtype.type(0), v)  # torch: a value that rounds to 1.0 wraps to 0",
         new="    return v",
         why="float16/bfloat16 uniforms that round to 1.0 kept (torch wraps them to 0: outside its domain)"),
    # --- probes that hit their target ---
    dict(path=PR, old="    uniforms = sum(1 for i in range(min(tau + 1, g)) if 0.0 < p[i, req.draft[i]] < q[i, req.draft[i]])",
         new="    uniforms = min(tau + 1, g)",
         why="every decision needs a uniform: a sampler rejecting a p = 0 draft without drawing is never graded"),
    dict(path=PR, old="    last = int(req.last_drawn and (law > 0).sum() >= 2)",
         new="    last = 0",
         why="the correction's draw not counted: a decision uniform reused for it passes the accounting"),
    dict(path="spectheory/conformance/report.py", old='    if verdict == "holds" and any(e.outcome == "info" for e in evidence):\n        verdict = "inconclusive"',
         new='    if False:\n        verdict = "inconclusive"',
         why="a probe claim holds with probes not applied (some pass, the rest info)"),
    dict(path=PR, old="        if masked:\n            z[0] = -np.inf",
         new="        if False:\n            z[0] = -np.inf",
         why="the masked zero-mass probes keep token 0 possible: a NaN falling back to token 0 passes"),
    dict(path=PR, old="        if crash is not None or unsupported is not None or not sampler.sources.escaped_in(label):\n            break",
         new="        break",
         why="a probe whose draws escaped is made once, from whatever state torch's generator is in (seed-dependent)"),
    # --- compiled code through objects ---
    dict(path=CO, old="            visit(obj.__self__, f\"the instance of {obj.__qualname__}\", depth + 1)",
         new="            pass",
         why="a bound method's instance not walked: TorchScript kept as a module attribute goes unnamed"),
    dict(path=CO, old="                visit(v, f\"class attribute {c.__name__}.{key}\", depth + 1)",
         new="                pass",
         why="class attributes not walked"),
    # --- one rerunnable call per bug ---
    dict(path=SV, old="        key = f.get(\"signature\") or repr(f)",
         new="        key = f.get(\"check\") or f.get(\"kind\")",
         why="one call per failing check, not per bug: the zero-mass crash loses its call behind the u = 0 probe"),
    # --- the plan ---
    dict(path=BK, old="            elif i == ONE_TOKEN_CALLS:",
         new="            elif i == ONE_TOKEN_CALLS and g > 1:",
         why="first_tokens kept on iid-V3-disjoint at γ = 1 (the plan's check subsets and α split disagree with the docs)"),
]
