"""Grammar-constrained decoding: a batched ``transformers`` logits processor over a word grammar.

:class:`GrammarLogitsProcessor` lets beam search (any ``num_beams``, a batch of questions) emit
only prefixes of what a *word grammar* accepts, and end (EOS) only where the grammar says the
text is complete. The grammar is any object with the four methods of :class:`WordGrammar` —
in this project :class:`kbqa_lit.decoding.grammar.SExprGrammar` (normalised S-expressions), built by
the caller, since this floor imports nothing of the project.

Words and tokens. The project's tokenizers (and T5's sentencepiece) pre-tokenise on whitespace
with Metaspace: every word's first token starts with ``▁`` and the others do not, so a token
that starts with ``▁`` begins a new word, and a word's tokens do not depend on its neighbours
(an added token such as ``[E0]`` comes as ``▁`` + ``[E0]``). :class:`~kbqa_lit.decoding.tokens.TokenIndex` holds, per
tokenizer, each token's text, whether it starts a word, each closed word's token ids (its
*canonical* tokenisation, read in context after an anchor word) and, per open word class
(:class:`OpenWordClass`: numbers, free bracket text...), the tokens that may start or continue
such a word, as boolean masks.

Per row the processor keeps ``(grammar state, tokens of the unfinished word)``, derived from
``input_ids`` alone: beam search reorders rows, so each row's parent is found among the last
call's rows and its state advanced by one token (states are interned to small numbers,
:mod:`~kbqa_lit.decoding.row_states`); a row without a parent is replayed from the start. The
allowed next tokens of a state are

- the continuations of the unfinished word: children in a token-id trie of the allowed closed
  words (relations, labels, operators: a multi-token word is followed token by token), and
  tokens that keep an open word a valid prefix of its class;
- when the unfinished word is a whole allowed word: the tokens that start a word allowed after
  it, and EOS when the grammar is then complete.

Masks are cached per state and banked once as rows of one tensor; a step takes its rows' masks
with one ``index_select`` and the scores of disallowed tokens become ``-inf`` (one add of a 0 /
``-inf`` table kept beside the scores). A row with no allowed token (a dead end, e.g. after an
invalid word) may only end: EOS stays allowed, so no row is all ``-inf``. Rows are
``batch_index * num_beams + beam``; each example may have its own grammar (its entity labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import LogitsProcessor, PreTrainedTokenizerBase

from kbqa_lit.decoding.option_masks import option_masks
from kbqa_lit.decoding.row_states import InternedStates, MaskBank, parent_rows
from kbqa_lit.decoding.row_tables import Guarded, RowTables, WordGrammar, WordOptionsLike
from kbqa_lit.decoding.tokens import TokenIndex


@dataclass
class _Step:
    """One call's rows: masks' bank rows, guarded rows, rows with a state, copies, parents, last tokens (``_plan``)."""

    masks: list[int]
    guarded: list[Guarded]
    live: list[int]
    copies: list[int]
    parents: list[int] | None
    toks: list[int]
    first: bool


class GrammarLogitsProcessor(LogitsProcessor):
    """Mask the scores of tokens that would leave the grammar (see the module docstring).

    Args:
        index: The tokenizer's :class:`TokenIndex` (or the tokenizer; an index is built).
        grammars: One grammar per example of the batch, or a single grammar for all.
        num_beams: Beams per example (rows are ``batch_index * num_beams + beam``).
        prefix_length: Leading tokens of every row that were not generated (1 for an
            encoder-decoder's decoder start token; a decoder-only model's prompt length).
        max_new_tokens: The search's token budget (``None``: unguarded). When a row's shortest
            way to the end (the grammar's ``closing``) comes within ``budget_slack`` tokens of
            what is left, or, within the last ``budget_window`` tokens, one more token could start
            a word whose way to the end no longer fits (:meth:`RowTables.longest`), only tokens
            after which the expression can still end in time are allowed, so beams end complete
            instead of being cut off.
        budget_slack: How early (in tokens) the budget guard starts checking a row.
        budget_window: The last tokens of the budget in which the guard also bounds the longest
            way to the end (a bracket spelled in many tokens); earlier it costs time and never
            fires unless a single word's way to the end is longer than the window.
        budget_top_k: How many candidates per example the search takes each step (beam search:
            ``2 * num_beams``, ``generate``'s ``beams_to_keep``; greedy: 1). When set, the guard
            checks tokens in the search's order until that many fit instead of checking every
            allowed token: per example by beam score + token score (the beam scores rebuilt from
            what this processor returned), per row where those are unknown (greedy). A guarded
            row's unchecked tokens become ``-inf``; the search picks exactly what it would pick
            under the full check, at a fraction of the cost. ``None`` (the default) checks every
            allowed token, which sampling needs.
    """

    def __init__(
        self,
        index: TokenIndex | PreTrainedTokenizerBase,
        grammars: WordGrammar | Sequence[WordGrammar],
        num_beams: int = 1,
        prefix_length: int = 1,
        max_new_tokens: int | None = None,
        budget_slack: int = 16,
        budget_window: int = 48,
        budget_top_k: int | None = None,
    ) -> None:
        self.index = index if isinstance(index, TokenIndex) else TokenIndex(index)
        self.grammars = [grammars] if hasattr(grammars, "options") else list(grammars)  # type: ignore[arg-type]
        if not self.grammars:
            raise ValueError("GrammarLogitsProcessor needs at least one grammar")
        self.num_beams = max(1, int(num_beams))
        self.prefix_length = int(prefix_length)
        self.max_new_tokens = None if max_new_tokens is None else int(max_new_tokens)
        self.budget_slack = int(budget_slack)
        self.budget_window = int(budget_window)
        self.budget_top_k = None if budget_top_k is None else max(1, int(budget_top_k))
        shared = option_masks(self.index)
        tables: dict[int, RowTables] = {}
        self._tables = [tables.setdefault(id(g), RowTables(g, shared)) for g in self.grammars]
        self._bank = MaskBank(shared.eos.shape[-1])
        self._interns: dict[int, InternedStates] = {}  # by id of the row tables (examples of one grammar share them)
        #: The last call's rows and their state numbers (-1: none), where this call's rows find their parents.
        self._last_ids: torch.Tensor | None = None
        self._last_sids: list[int] = []
        #: The last step's beam scores and returned scores (the beam scores of the next step).
        self._last: tuple[torch.Tensor, torch.Tensor] | None = None
        #: The beam search being followed (``follow_search``): which examples are finished.
        self._progress: Any = None
        self._idle_mask: torch.Tensor | None = None

    def follow_search(self, progress: Any) -> None:
        """Follow a beam search's progress (``None``: stop): rows of finished examples are not worked on.

        ``progress.finished(batch)`` names the examples for which ``generate``'s stopping heuristic
        holds: their finished beams are final, so what their running rows get can no longer reach the
        output. Such rows get one fixed token that is not EOS (:meth:`_idle`), no grammar state and no
        budget guard; every other row gets exactly what it got before. Set by
        :func:`kbqa_lit.backbones.beam_cache.beam_search` for the length of one search.
        """
        self._progress = progress

    def _finished(self, rows: int) -> frozenset[int]:
        if self._progress is None or self.num_beams <= 1 or rows % self.num_beams:
            return frozenset()
        return self._progress.finished(rows // self.num_beams)

    def _idle(self) -> torch.Tensor:
        """The mask of a finished example's row: one token, neither EOS nor one that ends the search."""
        if self._idle_mask is None:
            pad = getattr(self.index.tokenizer, "pad_token_id", None)
            token = next(t for t in (pad, 0, 1, 2) if t is not None and t != self.index.eos_id)
            self._idle_mask = self.index.mask([int(token)])
        return self._idle_mask

    def _interned(self, example: int) -> InternedStates:
        """The interned row states of an example's grammar (examples with one grammar share them)."""
        at = 0 if len(self._tables) == 1 else example
        if at >= len(self._tables):
            raise ValueError(f"rows of example {example} were given, but only {len(self._tables)} grammars")
        tables = self._tables[at]
        found = self._interns.get(id(tables))
        if found is None:
            found = self._interns[id(tables)] = InternedStates(tables, self._bank)
        return found

    def state_after(self, example: int, tokens: Sequence[int]) -> tuple[Any, ...]:
        """The row state of an example's grammar after the generated ``tokens``."""
        states = self._interned(example)
        return states.states[states.replay(tokens)]

    def row_masks(self, input_ids: torch.LongTensor, finished: frozenset[int] = frozenset()) -> torch.Tensor:
        """The ``[rows, vocab]`` boolean mask of allowed next tokens (the budget guard's full check).

        Rows of the ``finished`` examples (see :meth:`follow_search`) get the idle mask.
        """
        step = self._plan(input_ids, finished)
        masks = self._bank.take(step.masks)
        for r, tables, state, left in step.guarded:
            masks[r] = tables.budget_mask(state, left)
        return masks

    def _plan(self, input_ids: torch.LongTensor, finished: frozenset[int] = frozenset()) -> _Step:
        """Each row's state and mask, the rows the budget guard must check, and what the beam scores need.

        A row's state is its parent row's (the last call's row with its tokens but the last;
        :func:`parent_rows`) advanced by its last token, else replayed from the start. Rows of
        ``finished`` examples get the idle mask and no state.
        """
        count, width = input_ids.shape
        new = width - self.prefix_length  # tokens generated so far (equal for every row)
        parents = parent_rows(input_ids, self._last_ids, self.num_beams) if new > 0 else None
        toks = input_ids[:, -1].tolist() if new > 0 else []
        before, rows = self._last_sids, None
        left = None if self.max_new_tokens is None else self.max_new_tokens - new
        slack, window, nb = self.budget_slack, self.budget_window, self.num_beams
        sids: list[int] = []
        mask_rows: list[int] = []
        guarded: list[Guarded] = []
        live: list[int] = []
        copies: list[int] = []
        seen: set[tuple[Any, ...]] = set()
        for r in range(count):
            example = r // nb
            if finished and example in finished:
                sids.append(-1)
                mask_rows.append(self._bank.row(self._idle()))
                continue
            states = self._interned(example)
            parent = -1 if parents is None else parents[r]
            if new == 0:
                sid, key = states.start, (example,)
            elif parent >= 0 and before[parent] >= 0:
                sid, key = states.step(before[parent], toks[r]), (parent, toks[r])
            else:  # replayed: the first call, or rows of another search
                rows = input_ids.tolist() if rows is None else rows
                seq = rows[r][self.prefix_length :]
                sid, key = states.replay(seq), (example, tuple(seq))
            if key in seen:
                copies.append(r)
            else:
                seen.add(key)
            sids.append(sid)
            live.append(r)
            mask_rows.append(states.mask_row[sid])
            if left is None:
                continue
            path = states.finish_length(sid)
            if path is not None and (path + slack >= left or (left <= window and states.longest(sid) >= left)):
                guarded.append((r, states.tables, states.states[sid], left))
        self._last_ids, self._last_sids = input_ids.clone(), sids  # a search may write into its rows' buffer
        return _Step(mask_rows, guarded, live, copies, parents, toks, new == 0)

    def _beam_scores(self, step: _Step) -> torch.Tensor | None:
        """Each row's running beam score as ``generate``'s beam search holds it (``None``: unknown).

        The search adds each step's processed scores (what this processor returned) to its beams'
        scores, so a row's score is its parent row's plus the returned score of its last token. At
        the first step every row of an example is the same prefix: the first counts (score 0), the
        others never win (``-inf``), as in ``generate``; so do later copies of a row. Rows of
        finished examples get ``-inf``: the guard never ranks them.
        """
        beam = torch.full((len(step.masks),), float("-inf"))
        if not step.live:
            return beam
        at = torch.as_tensor(step.live, dtype=torch.long)
        if step.first:
            beam[at] = 0.0
        elif self._last is None or step.parents is None:
            return None
        else:
            parents = [step.parents[r] for r in step.live]
            if min(parents) < 0:
                return None
            last_beam, last_out = self._last
            toks = torch.as_tensor([step.toks[r] for r in step.live], dtype=torch.long)
            index = torch.as_tensor(parents, dtype=torch.long)
            beam[at] = last_beam[index] + last_out[index.to(last_out.device), toks.to(last_out.device)].float().cpu()
        if step.copies:
            beam[step.copies] = float("-inf")
        return beam

    def _guard(
        self,
        scores: torch.FloatTensor,
        out: torch.FloatTensor,
        guarded: list[Guarded],
        beam: torch.Tensor,
        groups: list[list[int]],
    ) -> None:
        """Check each group's tokens in the search's order (beam score + token score) until ``budget_top_k`` fit.

        A group is an example's rows (beam search) or one guarded row (greedy, or beam scores unknown:
        ``beam`` is then 0). Every token of a guarded row that was not checked, or did not fit, becomes ``-inf``.
        The first ``2 * budget_top_k`` candidates of every group are ranked at once (:meth:`_ranked`); a group
        that needs more is ranked again by itself with twice as many, as often as needed.
        """
        k = int(self.budget_top_k or 1)
        width = out.shape[-1]
        info = {g[0]: g for g in guarded}
        keep_rows: dict[int, list[int]] = {r: [] for r in info}
        on = beam.to(out.device)  # ranked where the scores are: only the top tokens' ids come back to the host
        for rows, (values, indices) in zip(groups, self._ranked(out, on, groups, 2 * k), strict=True):
            fitting, done = self._scan(rows, values, indices, width, info, keep_rows, k, 0)
            numel, seen = len(rows) * width, len(values)
            while not done and seen < numel:
                n = min(numel, 2 * seen)
                top = (out[rows].float() + on[rows, None]).flatten().topk(n)
                values, indices = top.values.tolist()[seen:], top.indices.tolist()[seen:]
                fitting, done = self._scan(rows, values, indices, width, info, keep_rows, k, fitting)
                seen = n
        rows = list(keep_rows)
        self._keep_only(scores, out, rows, [keep_rows[r] or [info[r][1].fallback(info[r][2])] for r in rows])

    @staticmethod
    def _ranked(
        out: torch.Tensor, on: torch.Tensor, groups: list[list[int]], n: int
    ) -> list[tuple[list[float], list[int]]]:
        """Each group's ``n`` best candidates (``beam + score``, best first) as ``(values, flat indices)``.

        Groups of one size are ranked by one ``topk`` over their rows laid end to end (a group's flat
        index ``i`` is token ``i % vocab`` of its row ``i // vocab``), as ranking each group alone would.
        """
        by_size: dict[int, list[int]] = {}
        for g, rows in enumerate(groups):
            by_size.setdefault(len(rows), []).append(g)
        ranked: list[tuple[list[float], list[int]]] = [([], [])] * len(groups)
        for size, members in by_size.items():
            idx = torch.as_tensor([r for g in members for r in groups[g]], dtype=torch.long, device=out.device)
            rows = out.index_select(0, idx).float().view(len(members), size, -1)  # whole rows: faster than out[idx]
            flat = (rows + on.index_select(0, idx).view(len(members), size, 1)).flatten(1)  # [groups, size * vocab]
            top = flat.topk(min(n, flat.shape[1]), dim=1)
            for g, values, indices in zip(members, top.values.tolist(), top.indices.tolist(), strict=True):
                ranked[g] = (values, indices)
        return ranked

    @staticmethod
    def _scan(
        rows: list[int],
        values: list[float],
        indices: list[int],
        width: int,
        info: dict[int, Guarded],
        keep_rows: dict[int, list[int]],
        k: int,
        fitting: int,
    ) -> tuple[int, bool]:
        """Check ranked candidates of one group in order, noting the guarded rows' tokens that fit in ``keep_rows``.

        A candidate of an unguarded row counts as fitting. Returns the number fitting so far (``fitting``
        before) and whether the group is done: ``k`` fit, or the candidates reached ``-inf``.
        """
        for v, i in zip(values, indices, strict=True):
            if v == float("-inf"):
                return fitting, True
            r, t = rows[i // width], i % width
            g = info.get(r)
            if g is None:
                fitting += 1
            elif g[1].fits(g[2], t, g[3]):
                fitting += 1
                keep_rows[r].append(t)
            if fitting >= k:
                return fitting, True
        return fitting, False

    @staticmethod
    def _keep_only(scores: torch.FloatTensor, out: torch.FloatTensor, rows: list[int], keep: list[list[int]]) -> None:
        """Set every token of ``rows`` in ``out`` to ``-inf`` except ``keep`` (which get their ``scores``)."""
        out[rows] = float("-inf")
        at_rows = torch.as_tensor([r for r, ids in zip(rows, keep, strict=True) for _ in ids], dtype=torch.long)
        at_tokens = torch.as_tensor([t for ids in keep for t in ids], dtype=torch.long)
        at_rows, at_tokens = at_rows.to(out.device), at_tokens.to(out.device)
        out[at_rows, at_tokens] = scores[at_rows, at_tokens]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Set the scores of disallowed tokens to ``-inf``."""
        finished = self._finished(input_ids.shape[0])
        if self.budget_top_k is None:
            return masked_scores(scores, self.row_masks(input_ids, finished))
        step = self._plan(input_ids, finished)
        out = self._bank.apply(scores, step.masks)
        beam = self._beam_scores(step) if self.num_beams > 1 else None
        guarded = step.guarded
        if guarded and beam is None:  # each guarded row by itself
            self._guard(scores, out, guarded, torch.zeros(out.shape[0]), [[g[0]] for g in guarded])
        elif guarded:  # each example's rows together
            nb, examples = self.num_beams, sorted({g[0] // self.num_beams for g in guarded})
            groups = [list(range(e * nb, min((e + 1) * nb, out.shape[0]))) for e in examples]
            self._guard(scores, out, guarded, beam, groups)
        self._last = None if beam is None else (beam, out)
        return out


def masked_scores(scores: torch.FloatTensor, allowed: torch.Tensor) -> torch.FloatTensor:
    """``scores`` with ``-inf`` where ``allowed`` (``[rows, vocab]`` booleans, padded or cut to the width) is false."""
    allowed = allowed.to(scores.device)
    width = scores.shape[-1]
    if allowed.shape[-1] < width:
        allowed = torch.nn.functional.pad(allowed, (0, width - allowed.shape[-1]), value=False)
    elif allowed.shape[-1] > width:
        allowed = allowed[:, :width]
    return torch.where(allowed, scores, float("-inf"))  # type: ignore[return-value]  # one pass (masked_fill(~allowed) takes two)


__all__ = ["GrammarLogitsProcessor", "WordGrammar", "WordOptionsLike", "masked_scores"]
