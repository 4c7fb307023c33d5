"""A word-level incremental grammar of *normalised* S-expressions, for constrained decoding.

A generator writes normalised S-expressions (:mod:`kbqa_lit.kb.lf.normalize`) word by word:
``( join [ people , person , place of birth ] [E0] )``. :class:`SExprGrammar` follows those words
with a pushdown automaton and says, after any prefix, which next words are allowed
(:meth:`~SExprGrammar.options`: closed words plus open word classes such as "a number"), what a
word leads to (:meth:`~SExprGrammar.step`, ``None`` when it is not allowed) and whether the
expression is complete (:meth:`~SExprGrammar.complete`; only then may generation stop, and
nothing may follow the end). It checks what :func:`kbqa_lit.kb.lf.sexpr.parse_sexpr` checks:
balanced parentheses, each operator's arity and the kind of each argument (a set, a relation,
``( reverse relation )``, a relation path of ``ARGMAX``/comparisons, a literal), bracket content
that spells a schema id where a relation or class stands, literals as the normaliser writes them
(``13``, ``1998 year``, ``2008-07-08 date``, ``1.0 float``, ``"Young Forrest"``, ``NOW``).

States are immutable and hashable, so a caller may cache anything by state. The token-level
side (a ``transformers`` logits processor) is :mod:`kbqa_lit.decoding.processor`.

Rule sets decide what may stand in brackets (and as bare entity words such as the slots
``[E0]``) for each role ``relation``, ``class``, ``entity`` and ``literal``:

- :class:`BaseRules`: any schema id for relations and classes, any label for entities, the
  given bare entity words (slot tokens), literals;
- :class:`SchemaRules`: relations (and, when given, classes) from an inventory of schema ids;
- :class:`EntityRules`: entity labels from a given list (a question's linked candidates) plus
  its slot tokens.

``SExprGrammar([BaseRules(...), SchemaRules(...), EntityRules(...)])`` asks the rules from the
last to the first; the first that answers for a role (returns a :class:`RoleVocab`, not
``None``) decides it. A stricter rule set is one more object with the same method
``vocab(role, context)``: ``context`` holds the enclosing calls, innermost last, each as
``(operator, items)`` where ``items`` are ``(argument index, role, text)`` of the atoms already
written in that call, those of its closed sub-calls included (under the sub-call's argument
index: in ``( join ( reverse [ r ] ) ...`` the join holds ``(0, "relation", r)`` and, for the
direction, ``(0, "reverse", r)``), so the items of all contexts are every atom written so far.
FC-KBQA's KB-connected pairs (:class:`kbqa_lit.decoding.pairs.PairRules`) allow relations by
what was written before them; :class:`kbqa_lit.decoding.anchor.AnchoredEntityRules` returns for
``entity`` inside ``( join [ r ] ...`` only the entities with an ``r`` edge in that direction. Set
``context_free = False`` on such a rule so the grammar does not cache its answer per role alone. A rule
that reads only some atoms may say which (``reduce_items(items) -> items``, as ``PairRules`` does: the
last relation or class); when it is the one context-dependent rule set, every call keeps only those, so
beams that differ in atoms no rule reads reach equal states and share their computed masks.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from kbqa_lit.decoding.rules import (
    ANY_WORD,
    NONE,
    QUOTED,
    QUOTED_DONE,
    QUOTED_OPEN,
    VALUE,
    BaseRules,
    Context,
    EntityRules,
    FreeLabel,
    FreeSchema,
    OpenWord,
    PhraseVocab,
    RoleVocab,
    SchemaRules,
    State,
    Vocab,
    WordOptions,
    entity_bracket,
    word_options,
)
from kbqa_lit.kb.lf.normalize import DATATYPE_WORDS, OPERATOR_WORDS
from kbqa_lit.kb.lf.sexpr import NUMBER_RE

# --------------------------------------------------------------------------- the grammar

# Argument kinds: what may stand at an argument position.
EXPR, REL, RELATION, ARG, RELPATH, RELPATH_NO_R, LITERAL = "expr", "rel", "relation", "arg", "relpath", "path", "lit"
_SET_OPS = ("and", "join", "count", "argmax", "argmin", "less", "greater", "time")
#: Operator words after ``(`` allowed for each kind of argument.
_OPS_FOR: dict[str, tuple[str, ...]] = {
    EXPR: _SET_OPS,
    ARG: _SET_OPS,
    REL: ("reverse",),
    RELPATH: ("reverse", "join"),
    RELPATH_NO_R: ("join",),
}
#: Bracket roles for each kind of argument.
_BRACKET_ROLES: dict[str, tuple[str, ...]] = {
    EXPR: ("class",),
    ARG: ("class", "entity"),
    REL: ("relation",),
    RELATION: ("relation",),
    RELPATH: ("relation",),
    RELPATH_NO_R: ("relation",),
}
_OP_FROM_WORDS = {words: op for op, words in OPERATOR_WORDS.items()}
#: Operator words whose first argument is a relation (path): a dead end when no relation may be written.
_RELATION_FIRST = frozenset({"join", "less", "greater", "reverse"})
_TWO_WORD = {"less": ("than", "equal"), "greater": ("than", "equal"), "time": ("constraint",)}
#: Operator → (kinds of the arguments, the last repeating when max is None; min; max).
_SIGNATURES: dict[str, tuple[tuple[str, ...], int, int | None]] = {
    "AND": ((EXPR,), 2, None),
    "JOIN": ((REL, ARG), 2, 2),
    "JOIN@path": ((REL, RELPATH_NO_R), 2, 2),
    "R": ((RELATION,), 1, 1),
    "COUNT": ((EXPR,), 1, 1),
    "ARGMAX": ((EXPR, RELPATH), 2, 2),
    "ARGMIN": ((EXPR, RELPATH), 2, 2),
    **{cmp: ((RELPATH, LITERAL), 2, 2) for cmp in ("lt", "le", "gt", "ge")},
    "TC": ((EXPR, REL, LITERAL), 3, 3),
}
#: Datatype phrases after a literal's value (the normaliser's words, plus ``boolean``).
DATATYPE_PHRASES: tuple[str, ...] = (*DATATYPE_WORDS.values(), "boolean")

# A frame is (signature key, arguments done, items); the state is (frames, mode).
# Modes: ("arg",) before an argument; ("op", kind) after "("; ("op2", kind, head) after a two-word
# operator's head; ("br", (role, vocab, cursor) alternatives, text) in brackets; ("num",) after a bare number;
# ("val",) after a value that needs a datatype; ("dt", node) in a datatype phrase; ("q", text) in a
# quoted literal; ("done",) after the end.


class SExprGrammar:
    """The incremental grammar (see the module docstring).

    Args:
        rules: Rule sets, asked from the last to the first per role (default: ``[BaseRules()]``).
        datatypes: Datatype phrases allowed after literal values.
    """

    def __init__(self, rules: Sequence[Any] | None = None, datatypes: Iterable[str] = DATATYPE_PHRASES) -> None:
        self.rules = list(rules) if rules else [BaseRules()]
        self.context_free = all(getattr(r, "context_free", False) for r in self.rules)
        readers = [r for r in self.rules if not getattr(r, "context_free", False)]
        #: What a call's items are cut to as they are written: the one context-dependent rule set's own
        #: ``reduce_items`` (the atoms it reads), so that states differing only in atoms no rule reads are
        #: equal and share every cache; ``None`` (every item kept) with several such rule sets or none.
        self._reduce = readers[0].reduce_items if len(readers) == 1 and hasattr(readers[0], "reduce_items") else None
        self._datatypes = PhraseVocab(datatypes)
        self._vocab_cache: dict[tuple[str, Context], RoleVocab] = {}
        self._opts_cache: dict[Hashable, WordOptions] = {}
        self._datatype_phrases = tuple(datatypes)
        #: Steps so far that opened an entity bracket: the one step whose result depends on more than
        #: :meth:`share_key` says (the question's entity labels); a caller sharing caches watches it.
        self.private_steps = 0

    def share_key(self) -> Hashable | None:
        """A key equal for grammars that answer alike up to :attr:`private_steps` (``None``: share nothing).

        Context-free grammars whose rule sets all have a ``share_key`` (:class:`BaseRules` and
        :class:`EntityRules` by value: bare words, whether labels exist; :class:`SchemaRules` by
        identity) share one: options, closings and steps of states outside entity brackets are then
        the same for every question, and a state inside an entity bracket holds that question's
        label vocabulary, so it is never equal to another question's.
        """
        if not self.context_free:
            return None
        keys = []
        for rule in self.rules:
            key = getattr(rule, "share_key", None)
            if not callable(key):
                return None
            keys.append(key())
        return (tuple(keys), self._datatype_phrases)

    # -- public API ----------------------------------------------------------------------
    def start(self) -> State:
        """The state before the first word."""
        return ((), ("arg",))

    def complete(self, state: State) -> bool:
        """Whether the words so far are a whole S-expression (generation may stop)."""
        return state[1][0] == "done"  # type: ignore[index]

    def accepts(self, words: Iterable[str]) -> bool:
        """Whether ``words`` (e.g. ``text.split()``) are a complete normalised S-expression."""
        state: State | None = self.start()
        for w in words:
            state = self.step(state, w)
            if state is None:
                return False
        return self.complete(state)

    def vocab(self, role: str, context: Context) -> RoleVocab:
        """The rules' vocabulary for ``role`` in ``context`` (the last rule that answers)."""
        key = (role, () if self.context_free else context)
        found = self._vocab_cache.get(key)
        if found is None:
            found = RoleVocab()
            for rule in reversed(self.rules):
                answer = rule.vocab(role, context)
                if answer is not None:
                    found = answer
                    break
            self._vocab_cache[key] = found
        return found

    def options(self, state: State) -> WordOptions:
        """The words allowed after ``state``."""
        frames, mode = state  # type: ignore[misc]
        kind = mode[0]
        if kind == "arg":
            return self._arg_options(frames)
        if kind == "op":
            return word_options(self._ops(mode[1], frames))
        if kind == "op2":
            return word_options(frozenset(_TWO_WORD[mode[2]]))
        if kind == "br":
            key = ("br", mode[1])
            if key not in self._opts_cache:
                opts = NONE
                for _, vocab, cur in mode[1]:
                    opts = opts | vocab.options(cur)
                    if vocab.accepts(cur):
                        opts = opts | word_options(frozenset({"]"}))
                self._opts_cache[key] = opts
            return self._opts_cache[key]
        if kind == "num":
            return self._datatypes.options(0) | self.options(self._close_atom(frames, ("literal", mode[1])))
        if kind == "val":
            return self._datatypes.options(0)
        if kind == "dt":
            opts = self._datatypes.options(mode[1])
            if self._datatypes.accepts(mode[1]):
                opts = opts | self.options(self._close_atom(frames, ("literal", mode[2])))
            return opts
        if kind == "q":
            return word_options(frozenset(), (ANY_WORD,))
        return NONE

    def step(self, state: State | None, word: str) -> State | None:
        """The state after ``word``, or ``None`` when ``word`` is not allowed."""
        if state is None:
            return None
        frames, mode = state  # type: ignore[misc]
        kind = mode[0]
        if kind == "arg":
            return self._step_arg(frames, word)
        if kind == "op":
            if word not in self._ops(mode[1], frames):
                return None
            if word in _TWO_WORD:
                return (frames, ("op2", mode[1], word))
            return self._push(frames, _OP_FROM_WORDS[word], mode[1])
        if kind == "op2":
            return (
                self._push(frames, _OP_FROM_WORDS[f"{mode[2]} {word}"], mode[1]) if word in _TWO_WORD[mode[2]] else None
            )
        if kind == "br":
            return self._step_bracket(frames, mode, word)
        if kind == "num":
            nxt = self._datatypes.step(0, word)
            if nxt is not None:
                return (frames, ("dt", nxt, mode[1]))
            return self.step(self._close_atom(frames, ("literal", mode[1])), word)
        if kind == "val":
            nxt = self._datatypes.step(0, word)
            return None if nxt is None else (frames, ("dt", nxt, mode[1]))
        if kind == "dt":
            nxt = self._datatypes.step(mode[1], word)
            if nxt is not None:
                return (frames, ("dt", nxt, mode[2]))
            if not self._datatypes.accepts(mode[1]):
                return None
            return self.step(self._close_atom(frames, ("literal", mode[2])), word)
        if kind == "q":
            return self._quoted(frames, f"{mode[1]} {word}")
        return None

    def closing(self, state: State | None, limit: int = 400) -> tuple[str, ...] | None:
        """A short word sequence that completes ``state`` (``None``: none found).

        Deterministic and cheap (one word at a time: close what may be closed, else fill the
        cheapest argument: a bare entity word, ``0``, a bracket's shortest content); a decoder
        follows it when its token budget runs out.
        """
        words: list[str] = []
        while state is not None and not self.complete(state) and len(words) < limit:
            word = self.closing_word(state)
            if word is None:
                return None
            state = self.step(state, word)
            words.append(word)
        return tuple(words) if state is not None and self.complete(state) else None

    def closing_word(self, state: State) -> str | None:
        """The first word of :meth:`closing` from ``state`` (``None``: none; a complete state has none).

        :meth:`closing` is this word, then the closing of the state it leads to, so a caller may
        build closings one word at a time and memoise them by state.
        """
        frames, mode = state  # type: ignore[misc]
        kind = mode[0]
        if kind == "arg":
            expected, may_close = self._expected(frames)
            if may_close or expected is None:
                return ")" if may_close else None
            context = () if self.context_free else self._context(frames)
            entity = self.vocab("entity", context)
            if expected == ARG and entity.bare:
                return min(entity.bare)
            if expected in (ARG, LITERAL) and self.vocab("literal", context).literals:
                return "0"
            if any(self.vocab(r, context).brackets for r in _BRACKET_ROLES.get(expected, ())):
                return "["
            return "(" if expected in _OPS_FOR else None
        if kind == "op":
            ops = self._ops(mode[1], frames)
            return "join" if "join" in ops else min(ops, default=None)
        if kind == "op2":
            return _TWO_WORD[mode[2]][0]
        if kind == "br":
            if any(vocab.accepts(cur) for _, vocab, cur in mode[1]):
                return "]"
            return next((w for _, v, c in mode[1] if (w := _shortest_next(v, c)) is not None), None)
        if kind in ("num", "dt") and (kind == "num" or self._datatypes.accepts(mode[1])):
            return self.closing_word(self._close_atom(frames, ("literal", mode[-1])))
        if kind in ("val", "dt"):
            return _shortest_next(self._datatypes, 0 if kind == "val" else mode[1])
        return '"' if kind == "q" else None

    # -- arguments -----------------------------------------------------------------------
    def _expected(self, frames: tuple[Any, ...]) -> tuple[str | None, bool]:
        """The kind of the next argument (``None``: the call is full) and whether ``)`` may come."""
        if not frames:
            return EXPR, False
        sig, done, _ = frames[-1]
        kinds, lo, hi = _SIGNATURES[sig]
        nxt = None if hi is not None and done >= hi else kinds[min(done, len(kinds) - 1)]
        return nxt, done >= lo

    def _ops(self, kind: str, frames: tuple[Any, ...]) -> frozenset[str]:
        """Operator words allowed after ``(`` at an argument of ``kind``.

        Those whose first argument is a relation (path) only when the rules allow a relation in
        the current context (else the call could not be written: a dead end for a decoder).
        """
        ops = frozenset(_OPS_FOR[kind])
        context = () if self.context_free else self._context(frames)
        return ops if self.vocab("relation", context).brackets else ops - _RELATION_FIRST

    def _context(self, frames: tuple[Any, ...]) -> Context:
        return tuple((sig.split("@")[0], items) for sig, _, items in frames)

    def _arg_options(self, frames: tuple[Any, ...]) -> WordOptions:
        expected, may_close = self._expected(frames)
        key = ("arg", expected, may_close, None if self.context_free else self._context(frames))
        opts = self._opts_cache.get(key)
        if opts is None:
            words: set[str] = {")"} if may_close else set()
            open_: tuple[OpenWord, ...] = ()
            if expected is not None:
                if expected in _OPS_FOR and self._ops(expected, frames):
                    words.add("(")
                context = () if self.context_free else self._context(frames)
                if any(self.vocab(r, context).brackets for r in _BRACKET_ROLES.get(expected, ())):
                    words.add("[")
                if expected == ARG:
                    words |= self.vocab("entity", context).bare
                if expected in (ARG, LITERAL) and self.vocab("literal", context).literals:
                    words |= {"NOW", "true", "false"}
                    open_ = (VALUE, QUOTED)
            opts = self._opts_cache[key] = word_options(frozenset(words), open_)
        return opts

    def _step_arg(self, frames: tuple[Any, ...], word: str) -> State | None:
        expected, may_close = self._expected(frames)
        if word == ")":
            return self._close_call(frames) if may_close else None
        if expected is None:
            return None
        if word == "(":
            return (frames, ("op", expected)) if expected in _OPS_FOR else None
        context = () if self.context_free else self._context(frames)
        if word == "[":
            roles = _BRACKET_ROLES.get(expected, ())
            alts = tuple((r, vocab, vocab.start()) for r in roles for vocab in self.vocab(r, context).brackets)
            if any(r == "entity" for r, _, _ in alts):
                self.private_steps += 1
            return (frames, ("br", alts, "")) if alts else None
        if expected == ARG and word in self.vocab("entity", context).bare:
            return self._close_atom(frames, ("entity", word))
        if expected not in (ARG, LITERAL) or not self.vocab("literal", context).literals:
            return None
        if word == "NOW":
            return self._close_atom(frames, ("literal", word))
        if word in ("true", "false"):
            return (frames, ("val", word))
        if VALUE.word.fullmatch(word):
            return (frames, ("num", word)) if NUMBER_RE.match(word) else (frames, ("val", word))
        if word.startswith('"'):
            return self._quoted(frames, word)
        return None

    def _quoted(self, frames: tuple[Any, ...], text: str) -> State | None:
        if QUOTED_DONE.fullmatch(text):
            return self._close_atom(frames, ("literal", text))
        return (frames, ("q", text)) if QUOTED_OPEN.fullmatch(text) else None

    def _step_bracket(self, frames: tuple[Any, ...], mode: tuple[Any, ...], word: str) -> State | None:
        _, alts, text = mode
        if word == "]":
            done = [role for role, vocab, cur in alts if vocab.accepts(cur)]
            return self._close_atom(frames, (done[0], text)) if done else None
        moved = tuple((r, vocab, nxt) for r, vocab, cur in alts if (nxt := vocab.step(cur, word)) is not None)
        if not moved:
            return None
        return (frames, ("br", moved, f"{text} {word}".strip() if not self.context_free else ""))

    # -- frames --------------------------------------------------------------------------
    def _push(self, frames: tuple[Any, ...], op: str, kind: str) -> State:
        sig = "JOIN@path" if op == "JOIN" and kind in (RELPATH, RELPATH_NO_R) else op
        return (frames + ((sig, 0, ()),), ("arg",))

    def _close_call(self, frames: tuple[Any, ...]) -> State:
        rest = frames[:-1]
        if not rest:
            return ((), ("done",))
        sig, done, items = rest[-1]
        if not self.context_free:  # the closed call's atoms, under its argument index in the parent
            closed_sig, _, closed = frames[-1]
            items = items + tuple((done, role, text) for _, role, text in closed)
            if closed_sig == "R":  # ( reverse [ r ] ): also (done, "reverse", r), so a rule sees the direction
                items = items + tuple((done, "reverse", text) for _, role, text in closed if role == "relation")
            if self._reduce is not None:
                items = self._reduce(items)
        return (rest[:-1] + ((sig, done + 1, items),), ("arg",))

    def _close_atom(self, frames: tuple[Any, ...], item: tuple[str, str]) -> State:
        if not frames:
            return ((), ("done",))
        sig, done, items = frames[-1]
        if not self.context_free:
            items = items + ((done, *item),)
            if self._reduce is not None:
                items = self._reduce(items)
        return (frames[:-1] + ((sig, done + 1, items),), ("arg",))


@lru_cache(maxsize=65536)
def _shortest_next(vocab: Any, cur: Hashable) -> str | None:
    """The next word on a shortest way to an accepted end of ``vocab`` from ``cur`` (breadth first)."""
    if isinstance(vocab, FreeSchema):
        seg, n, first = cur  # type: ignore[misc]
        return "a" if n == 0 else ","
    if isinstance(vocab, FreeLabel):
        return "a"
    first_words: dict[Hashable, str] = {}
    queue, seen = [cur], {cur}
    while queue:
        node = queue.pop(0)
        for word in sorted(vocab.options(node).words):
            nxt = vocab.step(node, word)
            if nxt is None or nxt in seen:
                continue
            first_words[nxt] = first_words.get(node, word)
            if vocab.accepts(nxt):
                return first_words[nxt]
            seen.add(nxt)
            queue.append(nxt)
    return None


__all__ = [
    "DATATYPE_PHRASES",
    "BaseRules",
    "EntityRules",
    "FreeLabel",
    "FreeSchema",
    "OpenWord",
    "PhraseVocab",
    "RoleVocab",
    "SExprGrammar",
    "SchemaRules",
    "Vocab",
    "WordOptions",
    "entity_bracket",
]
