"""H-RAD in simulation (SpecBranch, Shen et al., ICLR 2026): a three-way classifier of the draft
length decision, trained with numpy/scipy on synthetic Markov sources.

**Decision points.** After a branch survives, the pipeline decides how much of the
survivor's continuation (γ − 1 drafted tokens) to submit to the target next round
(posterior drafting): signal 0 all-reject (none), 1 confidence (up to the first position of
draft confidence < ε), 2 all-accept (all). The decision is taken in the source state x the
survivor's token leads to.

**Labels** come from what the target then accepts of the continuation if submitted whole:
the number τ' of leading continuation tokens accepted by SD; all-reject if τ' = 0,
all-accept if τ' = γ − 1, confidence otherwise (all-accept when γ = 1: nothing to reject).

**Features** (:class:`Features`): the source state (one-hot, optional), the draft's
confidence ``q(x) = max_y q(y|x)`` and a target-side feature of controllable
informativeness, ``z = z̄(x) + σ ξ`` with ξ ~ N(0, 1) fresh at each decision and ``z̄(x)`` the
target's expected accepted fraction of the continuation (it needs p, as the paper's target
hidden states do). σ = 0: exact; σ → ∞: no information. Every feature depends on the context
only (never on the draft's or the verifier's future randomness), so an H-RAD-driven
pipeline stays lossless; a label-leaking feature would not (docs/sb.md).

**Classifier.** Multinomial logistic regression (standardised features, L2 on the weights),
fitted by damped Newton steps in numpy: a small classifier in the core package (no torch). Held-out evaluation by
prompt: independent runs ("prompts") are split into train and test.

**Policy table.** :func:`policy_table` integrates the Gaussian noise of z exactly (the
classifier's logits are affine in z, so each signal wins on an interval of z) and gives
``P(signal | x)``, the (S, 3) table the exact engine and the kernels read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm

from .checks import check_int, check_real, check_type
from .markov import MarkovPair, stationary_distribution
from .closed_forms import sd as cf_sd
from .rng import check_random_state


@dataclass(frozen=True)
class Features:
    """Which features H-RAD sees. sigma: noise of the target-side feature. The source state
    (one-hot) is off by default: with it the classifier learns P(label | state), the Bayes
    ceiling of any context feature on a Markov source, and the target feature adds nothing."""

    sigma: float = 0.1
    use_state: bool = False
    use_conf: bool = True
    use_target: bool = True

    def __post_init__(self):
        object.__setattr__(self, "sigma", check_real(self.sigma, "sigma (target-feature noise)", lo=0.0))
        for f in ("use_state", "use_conf", "use_target"):
            if not isinstance(getattr(self, f), bool):
                raise TypeError(f"{f} must be a bool, got {getattr(self, f)!r}")
        if not (self.use_state or self.use_conf or self.use_target):
            raise ValueError("H-RAD needs at least one feature")


def _check(pair, gamma):
    check_type(pair, MarkovPair, "pair")
    return check_int(gamma, "gamma (draft length)", min=1)


def label_probabilities(pair: MarkovPair, gamma: int) -> np.ndarray:
    """(S, 3): exact P(label | x) for a continuation of γ − 1 tokens drafted in state x."""
    gamma = _check(pair, gamma)
    S = pair.n_states
    out = np.zeros((S, 3))
    if gamma == 1:
        out[:, 2] = 1.0
        return out
    A = cf_sd.acceptance_matrix(pair)
    beta = pair.acceptance_by_state()
    v = np.ones(S)
    for _ in range(gamma - 1):
        v = A @ v
    out[:, 0] = 1.0 - beta
    out[:, 2] = v
    out[:, 1] = np.clip(1.0 - out[:, 0] - out[:, 2], 0.0, None)
    return out


def target_signal(pair: MarkovPair, gamma: int) -> np.ndarray:
    """z̄(x): the expected accepted fraction E[τ'/(γ − 1) | x] of a continuation drafted in x
    (1 when γ = 1)."""
    gamma = _check(pair, gamma)
    if gamma == 1:
        return np.ones(pair.n_states)
    A = cf_sd.acceptance_matrix(pair)
    v = np.ones(pair.n_states)
    tot = np.zeros(pair.n_states)
    for _ in range(gamma - 1):
        v = A @ v
        tot += v
    return tot / (gamma - 1)


def features_of(pair: MarkovPair, gamma: int, states, feats: Features, rng) -> np.ndarray:
    """Feature rows for decision points in ``states`` (the noise of z drawn from ``rng``)."""
    check_type(feats, Features, "feats", " (spectheory.hrad.Features)")
    states = np.asarray(states, dtype=np.int64)
    cols = []
    if feats.use_state:
        cols.append(np.eye(pair.n_states)[states])
    if feats.use_conf:
        cols.append(pair.draft.table.max(axis=1)[states][:, None])
    if feats.use_target:
        z = target_signal(pair, gamma)[states] + feats.sigma * rng.standard_normal(states.size)
        cols.append(z[:, None])
    return np.hstack(cols)


@dataclass
class Dataset:
    X: np.ndarray
    y: np.ndarray
    prompt: np.ndarray
    state: np.ndarray


def sample_dataset(pair: MarkovPair, gamma: int, n_prompts: int, prompt_len: int, feats: Features,
                   seed=None) -> Dataset:
    """Decision points along ``n_prompts`` independent target texts of ``prompt_len`` tokens
    (each started from the target's stationary law), with features and labels: at each
    position a continuation of γ − 1 tokens is drafted from q and verified by SD."""
    gamma = _check(pair, gamma)
    n_prompts = check_int(n_prompts, "n_prompts", min=2)
    prompt_len = check_int(prompt_len, "prompt_len", min=1)
    rng = check_random_state(seed)
    V, S = pair.V, pair.n_states
    P, Q = pair.target.table, pair.draft.table
    pi = stationary_distribution(pair.target.transition_matrix())
    s = rng.choice(S, size=n_prompts, p=pi)
    states = np.empty((n_prompts, prompt_len), dtype=np.int64)
    cP = np.cumsum(P, axis=1)
    for t in range(prompt_len):
        states[:, t] = s
        u = rng.random(n_prompts)
        x = np.minimum((cP[s] <= u[:, None] * cP[s, -1:]).sum(axis=1), V - 1)
        s = (s * V + x) % S
    flat = states.ravel()
    # labels: draft γ − 1 tokens from each decision state and verify them by SD
    n = flat.size
    tau = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    cur = flat.copy()
    cQ = np.cumsum(Q, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(Q > 0, np.minimum(1.0, P / np.where(Q > 0, Q, 1.0)), 0.0)
    for _ in range(gamma - 1):
        u = rng.random(n)
        c = np.minimum((cQ[cur] <= u[:, None] * cQ[cur, -1:]).sum(axis=1), V - 1)
        ok = rng.random(n) < acc[cur, c]
        alive &= ok
        tau += alive
        cur = (cur * V + c) % S
    y = np.where(tau == gamma - 1, 2, np.where(tau == 0, 0, 1))
    X = features_of(pair, gamma, flat, feats, rng)
    prompt = np.repeat(np.arange(n_prompts), prompt_len)
    return Dataset(X, y, prompt, flat)


@dataclass
class SoftmaxClassifier:
    """Multinomial logistic regression over 3 classes with L2 penalty ``l2`` on the weights."""

    l2: float = 1e-3
    W: np.ndarray | None = field(default=None, repr=False)
    mu: np.ndarray | None = field(default=None, repr=False)
    sd: np.ndarray | None = field(default=None, repr=False)

    def fit(self, X, y, *, n_classes: int = 3) -> "SoftmaxClassifier":
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64)
        if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] == 0:
            raise ValueError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
        if y.min() < 0 or y.max() >= n_classes:
            raise ValueError(f"labels must lie in 0..{n_classes - 1}")
        self.mu = X.mean(axis=0)
        sd = X.std(axis=0)
        self.sd = np.where(sd > 0, sd, 1.0)
        Z = np.hstack([(X - self.mu) / self.sd, np.ones((X.shape[0], 1))])
        n, d = Z.shape
        Y = np.eye(n_classes)[y]
        K = n_classes - 1                      # class 0's logit is fixed at 0 (identifiable)
        reg = np.full(d, self.l2)
        reg[-1] = 1e-9                         # the bias is (almost) not penalised
        B = np.zeros((d, K))

        def loss(B):
            L = np.hstack([np.zeros((n, 1)), Z @ B])
            return float((logsumexp(L, axis=1) - (L * Y).sum(axis=1)).mean() + 0.5 * (reg[:, None] * B ** 2).sum())

        cur = loss(B)
        for _ in range(100):                   # damped Newton (a convex problem, a few steps)
            L = np.hstack([np.zeros((n, 1)), Z @ B])
            P = np.exp(L - logsumexp(L, axis=1, keepdims=True))
            G = Z.T @ (P[:, 1:] - Y[:, 1:]) / n + reg[:, None] * B
            H = np.zeros((d * K, d * K))
            for a in range(K):
                for b in range(K):
                    w = P[:, a + 1] * ((a == b) - P[:, b + 1])
                    H[a * d:(a + 1) * d, b * d:(b + 1) * d] = (Z * w[:, None]).T @ Z / n
            H += np.diag(np.tile(reg, K))
            step = np.linalg.solve(H + 1e-12 * np.eye(d * K), G.T.ravel()).reshape(K, d).T
            t = 1.0
            while t > 1e-8:
                new = loss(B - t * step)
                if new <= cur:
                    break
                t /= 2
            B -= t * step
            if cur - new < 1e-12:
                cur = new
                break
            cur = new
        self.W = np.hstack([np.zeros((d, 1)), B])
        return self

    def logits(self, X) -> np.ndarray:
        if self.W is None:
            raise ValueError("fit the classifier first")
        X = np.asarray(X, dtype=np.float64)
        return np.hstack([(X - self.mu) / self.sd, np.ones((X.shape[0], 1))]) @ self.W

    def predict(self, X) -> np.ndarray:
        return np.argmax(self.logits(X), axis=1)

    def predict_proba(self, X) -> np.ndarray:
        L = self.logits(X)
        return np.exp(L - logsumexp(L, axis=1, keepdims=True))


def confusion(y_true, y_pred, n_classes: int = 3) -> np.ndarray:
    """Counts, rows = true label, columns = predicted."""
    out = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(out, (np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)), 1)
    return out


def policy_table(clf: SoftmaxClassifier, pair: MarkovPair, gamma: int, feats: Features) -> np.ndarray:
    """(S, 3): P(H-RAD gives signal d | state x), the Gaussian noise of z integrated exactly."""
    gamma = _check(pair, gamma)
    check_type(clf, SoftmaxClassifier, "clf", " (spectheory.hrad)")
    S = pair.n_states
    states = np.arange(S)
    if not feats.use_target or feats.sigma == 0:
        base = features_of(pair, gamma, states, Features(0.0, feats.use_state, feats.use_conf, feats.use_target),
                           np.random.default_rng(0))
        return np.eye(3)[clf.predict(base)]
    zbar = target_signal(pair, gamma)
    base = features_of(pair, gamma, states, Features(0.0, feats.use_state, feats.use_conf, feats.use_target),
                       np.random.default_rng(0))
    L0 = clf.logits(base)                      # logits at z = z̄(x)
    slope = clf.W[-2] / clf.sd[-1]             # ∂ logits / ∂ z (z is the last feature)
    out = np.zeros((S, 3))
    for x in range(S):
        # logits(z) = L0 + slope (z − z̄); find where each class wins along z
        a, b = L0[x] - slope * zbar[x], slope
        cuts = []
        for i in range(3):
            for j in range(i + 1, 3):
                if b[i] != b[j]:
                    cuts.append((a[j] - a[i]) / (b[i] - b[j]))
        cuts = np.sort(np.array(cuts + [-np.inf, np.inf]))
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            if hi <= lo:
                continue
            mid = (lo + hi) / 2 if np.isfinite(lo) and np.isfinite(hi) else (hi - 1.0 if np.isfinite(hi) else
                                                                          lo + 1.0 if np.isfinite(lo) else 0.0)
            d = int(np.argmax(a + b * mid))
            mass = norm.cdf((hi - zbar[x]) / feats.sigma) - norm.cdf((lo - zbar[x]) / feats.sigma)
            out[x, d] += mass
    out /= out.sum(axis=1, keepdims=True)
    return out


@dataclass
class HRADResult:
    """A trained H-RAD and its held-out evaluation."""

    clf: SoftmaxClassifier
    feats: Features
    accuracy: float
    confusion: np.ndarray
    majority_rate: float
    bayes_state_accuracy: float
    n_train: int
    n_test: int
    policy: np.ndarray
    shuffled: bool


def train(pair: MarkovPair, gamma: int, feats: Features = Features(), *, n_prompts: int = 200,
          prompt_len: int = 64, test_fraction: float = 0.3, shuffle_labels: bool = False, l2: float = 1e-3,
          seed=None) -> HRADResult:
    """Train H-RAD on simulated prompts, evaluate on held-out prompts; ``shuffle_labels``
    trains on permuted labels (the negative control)."""
    gamma = _check(pair, gamma)
    check_real(test_fraction, "test_fraction", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if not isinstance(shuffle_labels, bool):
        raise TypeError(f"shuffle_labels must be a bool, got {shuffle_labels!r}")
    rng = check_random_state(seed)
    data = sample_dataset(pair, gamma, n_prompts, prompt_len, feats, rng)
    n_test = max(1, int(round(test_fraction * n_prompts)))
    test_prompts = rng.permutation(n_prompts)[:n_test]
    te = np.isin(data.prompt, test_prompts)
    ytr = data.y[~te].copy()
    if shuffle_labels:
        ytr = rng.permutation(ytr)
    clf = SoftmaxClassifier(l2=l2).fit(data.X[~te], ytr)
    pred = clf.predict(data.X[te])
    lab = label_probabilities(pair, gamma)
    counts = np.bincount(data.y[te], minlength=3)
    return HRADResult(clf, feats, float((pred == data.y[te]).mean()), confusion(data.y[te], pred),
                      float(counts.max() / counts.sum()),
                      float(np.bincount(data.state[te], minlength=pair.n_states) @ lab.max(axis=1) / te.sum()),
                      int((~te).sum()), int(te.sum()), policy_table(clf, pair, gamma, feats), shuffle_labels)
