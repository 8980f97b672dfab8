"""Words a person mistyped ("memroy", "waht", "comands"), read as the parser's own word one
edit away: a letter left out or two letters swapped, and in a word of six letters or more a
letter too many or changed ("reach" is no mistyped "each", nor "home" a mistyped "come").
Only a whole word the parser does not know is read again (not a part of a path), only when
one known word of four letters or more is that near, and never a word that names something
the log holds (a command, a file, a window).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = ["Speller", "edit"]

_WORD = re.compile(r"[a-z]{4,}")


def edit(typed: str, word: str) -> int | None:
    """Which one edit makes ``typed`` into ``word``, most likely first: 0 a letter left out,
    1 two neighbouring letters swapped, 2 a letter too many, 3 a letter changed; None when
    they are the same or further apart."""
    if typed == word or abs(len(typed) - len(word)) > 1:
        return None
    if len(word) == len(typed) + 1:
        return 0 if _dropped(word, typed) else None
    if len(typed) == len(word) + 1:
        return 2 if _dropped(typed, word) else None
    diff = [i for i, (x, y) in enumerate(zip(typed, word, strict=True)) if x != y]
    if len(diff) == 1:
        return 3
    i = diff[0]
    swapped = len(diff) == 2 and diff[1] == i + 1 and typed[i] == word[i + 1]
    return 1 if swapped and typed[i + 1] == word[i] else None


def _dropped(long: str, short: str) -> bool:
    """Whether taking one letter out of ``long`` gives ``short``."""
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


class Speller:
    """The parser's words (the words its lists hold and the whole words its patterns name),
    and how to read a question with its mistyped words mended."""

    def __init__(self, words: Iterable[str], patterns: Iterable[re.Pattern[str]]) -> None:
        self._patterns = tuple(patterns)
        said = {w for p in self._patterns for w in _WORD.findall(p.pattern)}
        self._words = frozenset(w for w in {*words, *said} if len(w) >= 4)

    def knows(self, word: str) -> bool:
        """Whether the parser reads ``word``: one of its words, or a word its patterns match."""
        return word in self._words or any(p.fullmatch(word) for p in self._patterns)

    def mend(self, text: str, names: Callable[[str], bool]) -> str:
        """``text`` with each word the parser does not know, and that ``names`` says names
        nothing in the log, read as the known word an edit away (the likeliest edit first;
        when two words are as likely, the word is left as it is)."""
        return re.sub(
            r"(?<![\w/.~-])[a-z]{4,}(?![\w/.~-])", lambda m: self._word(m[0], names), text
        )

    def _word(self, word: str, names: Callable[[str], bool]) -> str:
        if self.knows(word) or names(word):
            return word
        found = sorted((e, w) for w in self._words if (e := edit(word, w)) is not None)
        found = [(e, w) for e, w in found if e < 2 or len(word) > 5]
        best = [w for e, w in found if e == found[0][0]]
        return best[0] if len(best) == 1 else word
