"""Row states of a search step by step, interned to small ids and found from each row's parent row.

:class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor` needs, every step, each row's state
``(grammar state, tokens of the unfinished word)``, its token mask and its way to the end. A search
step adds one token to every row and reorders the rows, so a row's state is its parent's state
advanced by its last token. :func:`parent_rows` finds each row's parent among the last step's rows
with one tensor comparison per example (no prefix is copied to the host or hashed); :class:`InternedStates`
numbers the states of one :class:`~kbqa_lit.decoding.row_tables.RowTables` and memoises, per number,
the step by each token, the row of its mask in a :class:`MaskBank`, and the length of its way to the
end. A step of a row is then one dictionary lookup by two integers; a state is worked out by the
row tables only the first time it is met. Rows without a parent (the first call, rows of another
search) are replayed from the grammar's start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from kbqa_lit.decoding.row_tables import RowTables

_UNKNOWN = -2


class MaskBank:
    """Distinct token masks stacked as rows of one tensor, so a step's masks are one ``index_select``.

    :meth:`take` gives boolean masks; :meth:`apply` adds a penalty table (0 where allowed, ``-inf``
    elsewhere) to a step's scores, kept beside them (on their device, in float16 for float32 scores:
    both values are exact) and brought up to date with the masks banked since. A bank lives as long as
    its processor (one batch): it holds each distinct mask once, 1 byte a token on the host and 2 on
    the scores' device (measured: about 250 masks a batch of 50 on the quickstart's `schema` rules,
    1,900 on FC-KBQA's pair rules; with T5's 32,128 tokens the latter would be about 60 MB and 120 MB).

    Args:
        width: The masks' length (the token index's vocabulary size).
    """

    def __init__(self, width: int) -> None:
        self.width = int(width)
        self._rows: dict[int, int] = {}
        self._held: list[torch.Tensor] = []  # keeps every banked mask alive, so its id stays its own
        self.table = torch.zeros(64, self.width, dtype=torch.bool)
        self._penalties: dict[tuple[Any, ...], list[Any]] = {}  # (device, dtype, width) -> [table, rows synced]

    def row(self, mask: torch.Tensor) -> int:
        """The bank row holding ``mask`` (added the first time this tensor is seen)."""
        found = self._rows.get(id(mask))
        if found is None:
            found = len(self._held)
            self.table = _room(self.table, found + 1)
            self.table[found] = mask
            self._held.append(mask)
            self._rows[id(mask)] = found
        return found

    def take(self, rows: Sequence[int]) -> torch.Tensor:
        """The ``[len(rows), width]`` boolean masks of the given bank rows (a new tensor on the host)."""
        return self.table.index_select(0, torch.as_tensor(rows, dtype=torch.long))

    def apply(self, scores: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        """``scores`` (``[len(rows), vocab]``) with ``-inf`` where the rows' masks disallow a token.

        Tokens past the masks' width (a model vocabulary larger than the tokenizer's) are disallowed.
        """
        width = scores.shape[-1]
        dtype = torch.float16 if scores.dtype == torch.float32 else scores.dtype
        key = (scores.device, dtype, width)
        held = self._penalties.get(key)
        if held is None:
            held = self._penalties[key] = [torch.empty(0, width, dtype=dtype, device=scores.device), 0]
        count = len(self._held)
        if held[1] < count:
            table = _room(held[0], count, float("-inf"))
            fresh = self.table[held[1] : count, : min(width, self.width)]
            part = torch.zeros(fresh.shape, dtype=dtype).masked_fill_(~fresh, float("-inf"))
            table[held[1] : count, : part.shape[1]] = part.to(scores.device)
            held[0], held[1] = table, count
        index = torch.as_tensor(rows, dtype=torch.long).to(scores.device)
        return torch.add(scores, held[0].index_select(0, index))


def _room(table: torch.Tensor, rows: int, fill: float = 0) -> torch.Tensor:
    """``table``, or a copy with twice the rows (new rows ``fill``) when it has fewer than ``rows``."""
    if table.shape[0] >= rows:
        return table
    grown = torch.full((max(64, 2 * rows), *table.shape[1:]), fill, dtype=table.dtype, device=table.device)
    grown[: table.shape[0]] = table
    return grown


class InternedStates:
    """The row states of one :class:`RowTables`, numbered, with their steps, mask rows and ways to the end.

    Args:
        tables: The grammar's row tables.
        bank: Where the states' masks are stacked.
    """

    def __init__(self, tables: RowTables, bank: MaskBank) -> None:
        self.tables = tables
        self.bank = bank
        self.states: list[Any] = []
        self.mask_row: list[int] = []
        self._ids: dict[Any, int] = {}
        self._next: dict[int, int] = {}
        self._finish: list[int | None] = []
        self._longest: list[int] = []
        self.start = self.intern((tables.grammar.start(), ()))

    def intern(self, state: Any) -> int:
        """The number of a row state (a new one for a state not met before)."""
        found = self._ids.get(state)
        if found is None:
            found = self._ids[state] = len(self.states)
            self.states.append(state)
            self.mask_row.append(self.bank.row(self.tables.mask(state)))
            self._finish.append(_UNKNOWN)  # type: ignore[arg-type]
            self._longest.append(_UNKNOWN)
        return found

    def step(self, sid: int, tok: int) -> int:
        """The number of the state after token ``tok`` from state number ``sid``."""
        key = sid << 32 | tok
        found = self._next.get(key)
        if found is None:
            found = self._next[key] = self.intern(self.tables.advance(self.states[sid], tok))
        return found

    def replay(self, tokens: Sequence[int]) -> int:
        """The number of the state after ``tokens`` from the grammar's start."""
        sid = self.start
        for tok in tokens:
            sid = self.step(sid, tok)
        return sid

    def finish_length(self, sid: int) -> int | None:
        """The length of a short way to EOS (:meth:`RowTables.finish`; ``None``: none known)."""
        found = self._finish[sid]
        if found == _UNKNOWN:
            path = self.tables.finish(self.states[sid])
            found = self._finish[sid] = None if path is None else len(path)
        return found

    def longest(self, sid: int) -> int:
        """:meth:`RowTables.longest` of the state."""
        found = self._longest[sid]
        if found == _UNKNOWN:
            found = self._longest[sid] = self.tables.longest(self.states[sid])
        return found


def parent_rows(ids: torch.Tensor, last: torch.Tensor | None, group: int) -> list[int] | None:
    """Each row's parent among the last step's rows: the first whose tokens are the row's without its last.

    Rows are compared within groups of ``group`` consecutive rows (an example's beams); a row with
    no parent gets ``-1``. ``None`` when ``last`` is not the step before (``None``, another row count
    or not one token shorter).
    """
    rows, width = ids.shape
    if last is None or last.shape[0] != rows or last.shape[1] != width - 1 or last.device != ids.device:
        return None
    size = group if group > 0 and rows % group == 0 else rows
    if rows == 0:
        return []
    now = ids[:, :-1].reshape(rows // size, size, 1, width - 1)
    before = last.reshape(rows // size, 1, size, width - 1)
    same = (now == before).all(dim=-1)  # [groups, size, size]: row i of a group against last row j
    first = same.to(torch.uint8).argmax(dim=-1)  # the first equal row (argmax returns the first maximum)
    base = torch.arange(0, rows, size, device=ids.device).view(-1, 1)
    found = torch.where(same.any(dim=-1), first + base, torch.full_like(first, -1))
    return found.flatten().tolist()


__all__ = ["InternedStates", "MaskBank", "parent_rows"]
