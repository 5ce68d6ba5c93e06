"""The compact Thai dictionary segments exactly as pythainlp's trie of the same words."""

from __future__ import annotations

import random
import re

import pytest
from pythainlp.tokenize import word_dict_trie, word_tokenize
from pythainlp.util import Trie

from core.language import lexicons as LEX
from core.language.lexicons.thai_words import WordList, dictionary, thai_tokens


def test_prefixes_are_the_tries_shortest_first() -> None:
    words = ["ก", "กา", "กาแฟ", "กาแฟเย็น", "แฟ", "เย็น", " เย็นชา "]
    trie, listed = Trie(words), WordList(words)
    for text in ("กาแฟเย็นชา", "กาแฟ", "ก", "แฟเย็น", "ขนม", "", "เย็นชา"):
        for start in range(len(text) + 1):
            assert listed.prefixes(text, start) == trie.prefixes(text, start), (text, start)
    assert len(listed) == len(trie) == 7 and "เย็นชา" in listed and " เย็นชา " not in listed


def _lexicon_thai() -> list[str]:
    return sorted({m.group(0) for lx in LEX.lexicons() for phrases in lx.lists.values() for p in phrases
                   for m in re.finditer(r"[\u0E00-\u0E7F]+", p)})


@pytest.mark.parametrize("keep_whitespace", [True, False])
def test_segmentation_is_pythainlps_own(keep_whitespace: bool) -> None:
    rnd = random.Random(7)
    vocabulary = sorted(dictionary()._words)
    made = ["".join(rnd.choice(vocabulary) for _ in range(rnd.randint(1, 6))) for _ in range(400)]
    texts = [*_lexicon_thai(), *made, "อยากได้เมาส์ไร้สาย งบ 1500 บาท", "งบหมื่นห้าบาท", "มือถือค้าง ร้านเปิดกี่โมง"]
    default = word_dict_trie()
    for text in texts:
        assert thai_tokens(text, keep_whitespace) == word_tokenize(text, custom_dict=default, engine="newmm",
                                                                   keep_whitespace=keep_whitespace), text


def test_the_dictionary_is_pythainlps_words() -> None:
    from pythainlp.corpus import thai_words

    assert len(dictionary()) == len(thai_words()) and all(w in dictionary() for w in list(thai_words())[:500])


def test_the_engine_never_builds_pythainlps_trie() -> None:
    """The trie costs ~60 MB in every process: a workspace with Thai text loads and reads without it."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("from core.language import text as T\n"
            "from pythainlp.tokenize import word_dict_trie\n"
            "assert T.tokens('อยากได้เมาส์ไร้สาย งบหมื่นห้าบาท')\n"
            "print(word_dict_trie.cache_info().currsize)\n")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"
