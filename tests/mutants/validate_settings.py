"""Plausible bugs in the real decoding settings (validate/processing.py, validate/drafters.py, the
point-mass SD path, validate/settings.py, validate/table.py) and in the branches of the planner and
the real-pair grading that last round's seeded bugs slipped through; the targeted tests must catch
each."""

CLAIMS = None  # validate code runs under `verify --logits` and `validate table`, not the built-in tier
TESTS = ("tests/test_validate_settings.py tests/test_validate_processing.py tests/test_validate_lookup.py "
         "tests/test_validate_plan.py")

MUTANTS = [
    # --- transformers' warpers -------------------------------------------------------------------
    dict(path="validate/processing.py",
         old="    if n_keep < order.size and scores[order[n_keep - 1]] == scores[order[n_keep]]:\n        return None",
         new="    if False:\n        return None",
         why="a tie straddling the top-p cut decided by float64 order instead of transformers' sort"),
    dict(path="validate/processing.py", old="    if np.abs(near - top_p).min() <= CUT_MARGIN:",
         new="    if np.abs(near - top_p).min() < 0:",
         why="a cumulative mass within rounding of 1 − top_p decided in float64"),
    dict(path="validate/processing.py", old="        s = s / np.float32(temperature)",
         new="        s = s * np.float32(temperature)", why="temperature multiplies the logits"),
    dict(path="validate/processing.py", old="    n_keep = max(int(np.count_nonzero(before < top_p)), int(min_keep))",
         new="    n_keep = int(np.count_nonzero(before < top_p))", why="min_tokens_to_keep ignored"),
    dict(path="validate/processing.py", old="        kth = -np.partition(-s, int(top_k) - 1, axis=-1)[..., int(top_k) - 1:int(top_k)]",
         new="        kth = -np.partition(-s, int(top_k), axis=-1)[..., int(top_k):int(top_k) + 1]",
         why="top-k keeps k + 1 tokens"),
    dict(path="validate/processing.py", old="        if total >= top_p + CUT_MARGIN or covers:",
         new="        if total >= top_p or covers:",
         why="candidates stop at a mass within rounding of top_p (a later token's fate decided unseen)"),
    # --- prompt lookup -------------------------------------------------------------------------------
    dict(path="validate/drafters.py", old="            for idx in np.flatnonzero((win == ids[-n:]).all(axis=1)):     # earliest first",
         new="            for idx in np.flatnonzero((win == ids[-n:]).all(axis=1))[::-1]:",
         why="prompt lookup takes the latest match instead of the earliest (transformers' choice)"),
    dict(path="validate/drafters.py", old="                            chosen = chosen[:hit[0]]",
         new="                            chosen = chosen[:hit[0] + 1]", why="draft keeps the stop token"),
    dict(path="validate/drafters.py", old="        for n in range(min(self.max_matching_ngram_size, L - 1), 0, -1):",
         new="        for n in range(1, min(self.max_matching_ngram_size, L - 1) + 1):",
         why="1-grams tried before 2-grams"),
    dict(path="validate/specdec.py", old="        k = np.minimum(self.tau + 1, self.drafted)             # verified drafts per iteration",
         new="        k = np.minimum(self.tau + 1, self.gamma)             # verified drafts per iteration",
         why="positions a point-mass drafter never drafted counted as verified"),
    dict(path="validate/specdec.py", old="                Pb = P[b] if P is not None else probs(zt[b, width - len(r.xs) - 1:])",
         new="                Pb = P[b] if P is not None else probs(zt[b, :len(r.xs) + 1])",
         why="a row with fewer drafts verified against the padded (left) logits rows"),
    # --- settings and the table ------------------------------------------------------------------------
    dict(path="validate/settings.py", old='    Rule(("ecsv.*",), "point_mass",', new='    Rule(("ecsv.*",), "no_draft_model",',
         why="ECSV's branch vote run on greedy drafts (B copies of one draft)"),
    dict(path="validate/settings.py", old="        return cls(d, float(config.get(\"temperature\", 1.0) or 0.0),",
         new="        return cls(d, float(config.get(\"temperature\", 1.0) or 1.0),",
         why="a greedy run read as temperature 1 (its point-mass rules never fire)"),
    dict(path="validate/evidence.py",
         old='        out[cid] = [e]',
         new='        out.setdefault(cid, []).append(e)',
         why="an inapplicable claim keeps its replays' rows beside the 'does not apply' one"),
    dict(path="validate/table.py", old="            reach = (tau >= j) & (k > j)                 # drafts 1..j accepted, a draft at depth j + 1",
         new="            reach = (tau >= j)", why="depth-wise acceptance counts iterations that drafted nothing there"),
    dict(path="validate/table.py",
         old="            need = None if na or ctl else (0 if exact and e.p_value is None else n_needed(e))",
         new="            need = None if na or ctl else e.n", why="n needed reported as n had"),
    # --- last round's holes: the planner and the real-pair grading -----------------------------------
    dict(path="validate/plan.py", old="                out[name] = max(out.get(name, 0), r.per_set)",
         new="                out[name] = r.per_set", why="a loop gets the prompts of its last row, not its largest need"),
    dict(path="validate/plan.py", old="    lo = d - 2 * se if np.isfinite(se) else 0.0",
         new="    lo = d - se if np.isfinite(se) else 0.0", why="a control sized for |d̂| − se (too optimistic)"),
    dict(path="validate/plan.py", old="    eff = max(tolerance, lo)", new="    eff = min(tolerance, lo)",
         why="a control sized below the subject's tolerance"),
    dict(path="spectheory/judge/verdicts.py", old="        _, e, nn = min(sized, key=lambda r: r[0])",
         new="        _, e, nn = max(sized, key=lambda r: r[0])",
         why="the real-pair verdict named by its best-powered test instead of its least"),
    dict(path="spectheory/judge/verdicts.py",
         old='        verdict, pool = "underpowered", [e for e in graded if e.outcome == "underpowered"]',
         new='        verdict, pool = "underpowered", graded',
         why="a passing test can decide an underpowered real-pair verdict"),
    dict(path="validate/replay_sb.py", old="            fold[i] = j % k", new="            fold[i] = i % k",
         why="cross-validation folds dealt by prompt index (a category on every k-th prompt lands in one fold)"),
    dict(path="validate/replay_sb.py", old="    for c in cats:\n        for i in rng.permutation(",
         new="    for c in cats:\n        j = 0\n        for i in rng.permutation(",
         why="the deal restarts at fold 0 in every category (the first folds get more prompts)"),
]
