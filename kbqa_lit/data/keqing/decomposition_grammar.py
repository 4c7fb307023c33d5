"""The character automaton of a well-formed decomposition whose sub-questions are template wordings.

The decomposer writes the paper's JSON on one line, as :func:`~kbqa_lit.data.keqing.decomposition.
render_decomposition` renders it (``json.dumps``: ``", "`` and ``": "`` separators)::

    [{"question_text": "who directed [mask]", "question_id": 0, "dep": [-1], "seed_entities": ["[E0]"]},
     {"question_text": "...", "question_id": 1, "dep": [0], "seed_entities": ["<ANSWER>-0"]}]

:class:`DecompositionAutomaton` accepts exactly such lists: at most ``max_subquestions`` objects,
numbered ``0, 1, ...`` in order, each with one ``question_text`` among the given texts (the template
bank's step wordings, JSON-escaped), one dependency (``-1`` or an earlier sub-question) and one seed
(an entity seed the caller gives — the slots ``[E0]``… of the question's mentions, or their names —
or ``<ANSWER>-j`` of an earlier sub-question). Leading spaces before the list are allowed. With
:class:`~kbqa_lit.decoding.char_constraint.CharConstraintProcessor` it is the shared constrained
decoding applied to Keqing's decomposer: every output parses, and every sub-question is worded as a
template the matcher knows.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence

from kbqa_lit.errors import UserInputError

_START = ("start",)
_END = ("end",)
#: Spaces allowed before the list (a prompt that ends without its space).
_MAX_LEADING_SPACES = 1


class _Trie:
    """A character trie of a closed set of strings (node 0 is the root)."""

    def __init__(self, words: Sequence[str]) -> None:
        self.children: list[dict[str, int]] = [{}]
        self.final: list[bool] = [False]
        for word in words:
            node = 0
            for char in word:
                nxt = self.children[node].get(char)
                if nxt is None:
                    nxt = len(self.children)
                    self.children[node][char] = nxt
                    self.children.append({})
                    self.final.append(False)
                node = nxt
            self.final[node] = True


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class DecompositionAutomaton:
    """Well-formed decompositions over given sub-question texts and seeds (see the module docstring).

    Args:
        texts: The allowed sub-question texts (template wordings, or chain texts).
        entity_seeds: The allowed entity seeds (``[E0]``… or names).
        max_subquestions: Most sub-questions in one decomposition.

    Raises:
        UserInputError: When there is no text or no entity seed, or ``max_subquestions < 1``.
    """

    def __init__(self, texts: Sequence[str], entity_seeds: Sequence[str], max_subquestions: int = 4) -> None:
        texts = [t for t in dict.fromkeys(texts) if t]
        seeds = [s for s in dict.fromkeys(entity_seeds) if s]
        if not texts or not seeds or max_subquestions < 1:
            raise UserInputError(
                f"a decomposition automaton needs texts, entity seeds and max_subquestions >= 1 "
                f"(got {len(texts)} texts, {len(seeds)} seeds, max {max_subquestions})"
            )
        self.max_subquestions = int(max_subquestions)
        self._texts = _Trie([json.dumps(t, ensure_ascii=False)[1:-1] for t in texts])
        self._deps = [_Trie(["-1", *map(str, range(k))]) for k in range(self.max_subquestions)]
        self._seeds = [
            _Trie([_quoted(s) for s in seeds] + [_quoted(f"<ANSWER>-{j}") for j in range(k)])
            for k in range(self.max_subquestions)
        ]
        self._ends = [
            _Trie([", ", "]"] if k + 1 < self.max_subquestions else ["]"]) for k in range(self.max_subquestions)
        ]
        self._pieces = [
            (
                '{"question_text": "',
                self._texts,
                f'", "question_id": {k}, "dep": [',
                self._deps[k],
                '], "seed_entities": [',
                self._seeds[k],
                "]}",
                self._ends[k],
            )
            for k in range(self.max_subquestions)
        ]

    def start(self) -> Hashable:
        """Before the list."""
        return (*_START, 0)

    def accepts(self, state: Hashable) -> bool:
        """After the closing ``]``."""
        return state == _END

    def step(self, state: Hashable, char: str) -> Hashable | None:
        """The state after ``char`` (``None``: the text would not be a well-formed decomposition)."""
        if state == _END:
            return None
        if state[0] == _START[0]:  # type: ignore[index]
            spaces = state[1]  # type: ignore[index]
            if char == " " and spaces < _MAX_LEADING_SPACES:
                return (*_START, spaces + 1)
            return (0, 0, 0) if char == "[" else None
        k, p, pos = state  # type: ignore[misc]
        piece = self._pieces[k][p]
        if isinstance(piece, str):
            if piece[pos] != char:
                return None
            return (k, p, pos + 1) if pos + 1 < len(piece) else (k, p + 1, 0)
        nxt = piece.children[pos].get(char)
        if nxt is not None:
            if p == len(self._pieces[k]) - 1 and piece.final[nxt]:  # the object's end: ", " or "]"
                return (k + 1, 0, 0) if char == " " else _END
            return (k, p, nxt)
        if piece.final[pos]:  # a whole option, then the next piece
            return self.step((k, p + 1, 0), char)
        return None


__all__ = ["DecompositionAutomaton"]
