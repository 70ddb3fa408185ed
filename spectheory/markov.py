"""n-th order Markov sources over V tokens: the synthetic "language models" of spectheory.

A source of order ``n`` has ``S = V**n`` states, one per context of the last ``n`` tokens,
encoded in base V with the most recent token as the least significant digit, so that the
next state after emitting ``x`` in state ``s`` is ``(s·V + x) mod S`` (order 0: one state).
Each state points to a row of a conditional table; rows may be shared between states
(``row_of_state``), which lets a first-order source over V = 32,000 tokens fit in memory.

A :class:`MarkovPair` is a target ``p`` and a draft ``q`` over the same state space.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .distributions import DistributionError, check_distribution
from .rng import check_random_state

#: Largest state space for which dense S×S matrices are built.
DENSE_STATE_LIMIT = 4096


def next_state(state, token, V: int, n_states: int):
    """State after emitting ``token`` in ``state`` (works for scalars and arrays)."""
    return (state * V + token) % n_states


def token_to_state_matrix(weights: np.ndarray, V: int, n_states: int) -> np.ndarray:
    """Dense M[s, s'] = Σ_{x: next(s,x)=s'} weights[s, x] for an (S, V) weight table."""
    if n_states > DENSE_STATE_LIMIT:
        raise ValueError(f"{n_states} states is too many for a dense S×S matrix (limit {DENSE_STATE_LIMIT})")
    M = np.zeros((n_states, n_states))
    nxt = next_state(np.arange(n_states)[:, None], np.arange(V)[None, :], V, n_states)
    np.add.at(M, (np.repeat(np.arange(n_states), V), nxt.ravel()), weights.ravel())
    return M


@dataclass(frozen=True, eq=False)
class MarkovSource:
    """Conditional next-token tables of an order-``order`` Markov source.

    Parameters
    ----------
    rows : (R, V) array, each row a distribution.
    order : context length n ≥ 0.
    row_of_state : (V**n,) int array mapping each state to its row; default ``arange``
        (requires R == V**n).
    """

    rows: np.ndarray
    order: int
    row_of_state: np.ndarray = field(default=None)

    def __post_init__(self):
        rows = check_distribution(self.rows, name="conditional table")
        if rows.ndim != 2:
            raise DistributionError(f"conditional table must be 2-D (rows × V), got shape {rows.shape}")
        if int(self.order) != self.order or self.order < 0:
            raise ValueError(f"order must be a non-negative integer, got {self.order!r}")
        V = rows.shape[1]
        S = V ** int(self.order)
        ros = self.row_of_state
        if ros is None:
            if rows.shape[0] != S:
                raise ValueError(
                    f"an order-{self.order} source over V={V} has {S} states; got {rows.shape[0]} rows "
                    "(pass row_of_state to share rows between states)")
            ros = np.arange(S, dtype=np.int64)
        ros = np.asarray(ros, dtype=np.int64)
        if ros.shape != (S,):
            raise ValueError(f"row_of_state must have shape ({S},), got {ros.shape}")
        if ros.min() < 0 or ros.max() >= rows.shape[0]:
            raise ValueError("row_of_state points outside the table")
        rows.setflags(write=False)
        ros.setflags(write=False)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "order", int(self.order))
        object.__setattr__(self, "row_of_state", ros)

    @property
    def V(self) -> int:
        return self.rows.shape[1]

    @property
    def n_states(self) -> int:
        return self.row_of_state.shape[0]

    def conditional(self, state: int) -> np.ndarray:
        """Next-token distribution in ``state``."""
        return self.rows[self.row_of_state[state]]

    @cached_property
    def table(self) -> np.ndarray:
        """Dense (S, V) table (materialised; only for small S·V)."""
        return self.rows[self.row_of_state]

    def state_of_context(self, context) -> int:
        """State index of a context (sequence of tokens, oldest first); shorter contexts are
        left-padded with token 0."""
        s = 0
        for tok in list(context)[-self.order:] if self.order else []:
            s = next_state(s, int(tok), self.V, self.n_states)
        return s

    def sequence_probs(self, length: int, start_state: int = 0) -> np.ndarray:
        """Exact ``p(x^length | start)`` for all V**length sequences (first token most
        significant in the flat index). Enumeration: use for small V and length."""
        V, S = self.V, self.n_states
        probs = np.ones(1)
        states = np.array([start_state], dtype=np.int64)
        for _ in range(length):
            probs = (probs[:, None] * self.rows[self.row_of_state[states]]).ravel()
            states = next_state(states[:, None], np.arange(V)[None, :], V, S).ravel()
        return probs

    def transition_matrix(self) -> np.ndarray:
        """Dense S×S state transition matrix."""
        return token_to_state_matrix(self.table, self.V, self.n_states)

    def stationary(self) -> np.ndarray:
        """A stationary distribution over states (the left eigenvector for eigenvalue 1;
        for a reducible chain, the one reached from state 0 by long-run averaging)."""
        return stationary_distribution(self.transition_matrix())

    def entropy_rate(self, base: float = np.e) -> float:
        """Stationary entropy rate Σ_s π(s) H(p(·|s)) (nats by default)."""
        from .divergences import entropy
        return float(self.stationary() @ entropy(self.table, base))

    def sample(self, length: int, seed=None, start_state: int = 0) -> np.ndarray:
        """Sample ``length`` tokens autoregressively (plain NumPy, for tests and examples)."""
        rng = check_random_state(seed)
        out = np.empty(length, dtype=np.int64)
        s = start_state
        for i in range(length):
            x = rng.choice(self.V, p=self.conditional(s))
            out[i] = x
            s = next_state(s, x, self.V, self.n_states)
        return out


def stationary_distribution(T: np.ndarray, start: int = 0, tol: float = 1e-13) -> np.ndarray:
    """Stationary distribution of a row-stochastic matrix.

    Solves ``πT = π`` by least squares; if the chain is reducible (solution not unique),
    falls back to the Cesàro limit of ``e_start Tᵗ``, the long-run state frequencies seen
    from ``start``.
    """
    S = T.shape[0]
    A = np.vstack([T.T - np.eye(S), np.ones((1, S))])
    b = np.zeros(S + 1)
    b[-1] = 1.0
    pi, _, rank, _ = np.linalg.lstsq(A, b, rcond=None)
    if rank == S and np.all(pi > -1e-12):
        pi = np.clip(pi, 0, None)
        return pi / pi.sum()
    v = np.zeros(S)
    v[start] = 1.0
    acc = np.zeros(S)
    n = 0
    while True:
        for _ in range(256):
            acc += v
            v = v @ T
            n += 1
        if n > 1 << 20 or np.abs(acc / n - (acc + v) / (n + 1)).max() < tol:
            return acc / n


@dataclass(frozen=True, eq=False)
class MarkovPair:
    """A target ``p`` and a draft ``q`` over the same vocabulary and state space."""

    target: MarkovSource
    draft: MarkovSource
    name: str = "pair"
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.target.V != self.draft.V:
            raise DistributionError(
                f"mismatched vocabularies: target has V={self.target.V}, draft has V={self.draft.V}")
        if self.target.order != self.draft.order:
            raise ValueError(
                f"target has order {self.target.order}, draft order {self.draft.order}: "
                "lift the lower-order one with lift_order() first")

    @property
    def V(self) -> int:
        return self.target.V

    @property
    def order(self) -> int:
        return self.target.order

    @property
    def n_states(self) -> int:
        return self.target.n_states

    def acceptance_by_state(self) -> np.ndarray:
        """β(s) = Σ_x min(p(x|s), q(x|s)) for every state (CLAIMS ``sd.acceptance``)."""
        from .divergences import overlap
        return overlap(self.target.table, self.draft.table)

    def describe(self) -> dict:
        return {"name": self.name, "V": self.V, "order": self.order, **self.params}


def lift_order(source: MarkovSource, order: int) -> MarkovSource:
    """The same source viewed as an order-``order`` source (order ≥ source.order): each
    longer context uses the row of its last ``source.order`` tokens."""
    if order < source.order:
        raise ValueError("can only lift to a higher order")
    V = source.V
    S_new = V ** order
    S_old = source.n_states
    states = np.arange(S_new, dtype=np.int64) % S_old  # last `source.order` tokens
    return MarkovSource(source.rows, order, source.row_of_state[states])
