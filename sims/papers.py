"""The bibliography: every paper a registered claim comes from, cited by authors, title, venue
and year. A claim names its paper by key (``register(paper="leviathan2023", ...)``, or a tuple
of keys when a claim belongs to several papers); reports print the citation."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Paper:
    key: str
    authors: str
    title: str
    venue: str
    year: int
    note: str = ""

    def cite(self) -> str:
        """``Authors, "Title", Venue Year`` (the form every report prints)."""
        venue = self.venue if str(self.year) in self.venue else f"{self.venue} {self.year}"
        return f'{self.authors}, "{self.title}", {venue}' + (f" ({self.note})" if self.note else "")

    def short(self) -> str:
        """``First author et al. year`` (``A & B year`` for two authors)."""
        names = [a.strip() for a in self.authors.replace(" & ", ", ").split(",") if a.strip()]
        lead = names[0] if names else self.authors
        if len(names) == 2:
            lead = f"{names[0]} & {names[1]}"
        elif len(names) > 2:
            lead = f"{names[0]} et al."
        return f"{lead} {self.year}"

    def to_json(self) -> dict:
        return {**asdict(self), "citation": self.cite()}


PAPERS: dict[str, Paper] = {p.key: p for p in (
    Paper("leviathan2023", "Leviathan, Kalman & Matias",
          "Fast Inference from Transformers via Speculative Decoding", "ICML", 2023),
    Paper("chen2023", "Chen, Borgeaud, Irving, Lespiau, Sifre & Jumper",
          "Accelerating Large Language Model Decoding with Speculative Sampling", "arXiv", 2023),
    Paper("fu2025", "Fu, Jiang, Chen, Fan, Geng & Yang",
          "Speculative Ensemble: Fast Large Language Model Ensemble via Speculation", "ICML", 2025),
    Paper("lin2026", "Lin, Sheng, Cai & Zhou",
          "SpecTr-GBV: Multi-Draft Block Verification Accelerating Speculative Decoding",
          "arXiv:2604.25925", 2026),
    Paper("sun2023", "Sun, Suresh, Ro, Beirami, Jain & Yu",
          "SpecTr: Fast Speculative Decoding via Optimal Transport", "NeurIPS", 2023),
    Paper("kobus2025", "Kobus & Gündüz", "Speculative Decoding via Exponential Races", "arXiv", 2025),
    Paper("shen2026", "Shen, Shen, Kong, Liu, Lu & Wang",
          "SpecBranch: Speculative Decoding via Hybrid Drafting and Rollback-Aware Branch Parallelism",
          "ICLR 2026 (arXiv:2506.01979)", 2026),
    Paper("ecsv2026", "Anonymous", "Error-Correcting Speculative Decoding via Branch Voting (ECSV)",
          "manuscript under revision", 2026),
    Paper("liu2025", "Liu et al.", "PEARL: Parallel Speculative Decoding with Adaptive Draft Length",
          "ICLR", 2025),
)}


#: the keys the package ships (a user's papers, added with :func:`add`, are the others)
BUILTIN = frozenset(PAPERS)


def add(paper: Paper) -> Paper:
    """Add a paper to the bibliography (a user's claim module cites its own paper this way:
    ``papers.add(Paper("mypaper2026", "A. Author & B. Author", "Title", "arXiv", 2026))``, then
    ``register(paper="mypaper2026", ...)``). Adding the same record again is a no-op; a different
    paper under a key already taken is refused."""
    if not isinstance(paper, Paper):
        raise TypeError(f"add() takes a Paper(key, authors, title, venue, year), got {type(paper).__name__}")
    old = PAPERS.get(paper.key)
    if old is not None and old != paper:
        raise ValueError(f"paper key {paper.key!r} is taken by {old.cite()}; choose another key")
    PAPERS[paper.key] = paper
    return paper


class UnknownPaperError(KeyError):
    def __str__(self):
        return str(self.args[0])


def keys_of(paper) -> tuple[str, ...]:
    """A claim's ``paper`` (a key or a tuple of keys) as a tuple of known keys."""
    keys = (paper,) if isinstance(paper, str) else tuple(paper)
    unknown = [k for k in keys if k not in PAPERS]
    if not keys or unknown:
        raise UnknownPaperError(f"unknown paper key(s) {unknown or keys!r}; add the paper with spectheory.sims.papers.add(Paper(...)) "
                                f"(known: {', '.join(PAPERS)})")
    return keys


def cite(paper) -> str:
    """The citation(s) of a key or tuple of keys, joined by '; '."""
    return "; ".join(PAPERS[k].cite() for k in keys_of(paper))
