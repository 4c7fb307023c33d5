"""The Freebase schema: relation domains and ranges, reverse relations, class hierarchy.

Read from the schema files GrailQA distributes (``../shared/data/ontology`` next to this project):

- ``fb_roles``: ``domain_class relation range_class`` per line;
- ``fb_types``: ``class meta.subclassOf superclass`` per line, optionally ending in `` .``;
- ``reverse_properties``: ``relation<TAB>reverse_relation`` per line.

The distributed files hold a few lines where a newline is missing, so two records run together
(``... type.intbase.litcentral.financial_support_provider ...``). Such a line is split when
exactly one split point makes the second record consistent (its domain is the prefix of its
relation in ``fb_roles``; its class is known from the other lines in ``fb_types``). Any other
malformed line raises :class:`kbqa_lit.errors.DataFormatError` naming the file and line.
When a relation is listed twice the first line wins.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kbqa_lit.errors import DataFormatError

ROLES_FILE = "fb_roles"
TYPES_FILE = "fb_types"
REVERSE_FILE = "reverse_properties"
SUBCLASS_OF = "meta.subclassOf"
#: Freebase mediator (CVT) classes that ``fb_types`` nevertheless files under ``common.topic``:
#: a mailing address and the relationship records of the popstra base (who dated whom, which
#: religion a celebrity chose). Three of them were found by the gold-SPARQL agreement check
#: (``benchmarks/bench_gold_sparql_agreement.py``), where CWQ's gold queries treat them as CVTs.
MEDIATORS_FILED_AS_TOPICS = frozenset(
    {
        "location.mailing_address",
        "base.popstra.dated",
        "base.popstra.religion_choice",
        "base.popstra.canoodled",
        "base.popstra.friendship",
        "base.popstra.breakup",
    }
)

#: A schema id as the files spell it: dotted, and Freebase ids may hold hyphens
#: (``base.services.e-commerce_service``); one file line names a relation ``null``.
ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$")
_DOTTED_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+$")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, stripped line) for every non-blank line."""
    if not path.is_file():
        raise DataFormatError(path, None, "ontology file not found")
    with path.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.strip()
            if line:
                yield lineno, line


def _check_ids(path: Path, lineno: int, ids: Iterable[str]) -> None:
    for token in ids:
        if not ID_RE.match(token):
            raise DataFormatError(path, lineno, f"{token!r} is not a schema id")


def _split_glued(token: str, accept: Callable[[str, str], bool]) -> tuple[str, str] | None:
    """Split ``token`` into two ids run together, when exactly one split point is accepted."""
    splits = [
        (token[:i], token[i:])
        for i in range(1, len(token))
        if _DOTTED_RE.match(token[:i]) and _DOTTED_RE.match(token[i:]) and accept(token[:i], token[i:])
    ]
    return splits[0] if len(splits) == 1 else None


def _read_roles(path: Path) -> list[tuple[str, str, str]]:
    records: list[tuple[str, str, str]] = []
    for lineno, line in _lines(path):
        fields = line.split()
        if len(fields) == 5:  # two records glued: d1 r1 (g1+d2) r2 g2
            d1, r1, glued, r2, g2 = fields
            split = _split_glued(glued, lambda _g1, d2, r2=r2: r2.startswith(d2 + "."))
            if split is None:
                raise DataFormatError(path, lineno, f"expected 'domain relation range', got {len(fields)} fields")
            _check_ids(path, lineno, (d1, r1, r2, g2))
            records += [(d1, r1, split[0]), (split[1], r2, g2)]
            continue
        if len(fields) != 3:
            raise DataFormatError(path, lineno, f"expected 'domain relation range', got {len(fields)} fields")
        _check_ids(path, lineno, fields)
        records.append((fields[0], fields[1], fields[2]))
    return records


def _read_types(path: Path, known_classes: set[str]) -> list[tuple[str, str]]:
    records: list[tuple[str, str]] = []
    glued_lines: list[tuple[int, list[str]]] = []
    for lineno, line in _lines(path):
        fields = line.split()
        if len(fields) in (3, 4) and fields[1] == SUBCLASS_OF and fields[3:] in ([], ["."]):
            _check_ids(path, lineno, (fields[0], fields[2]))
            records.append((fields[0], fields[2]))
        elif fields.count(SUBCLASS_OF) == 2:
            glued_lines.append((lineno, fields))
        else:
            raise DataFormatError(path, lineno, f"expected 'class {SUBCLASS_OF} superclass', got {line!r}")
    known = known_classes | {c for pair in records for c in pair}
    for lineno, fields in glued_lines:  # c1 meta.subclassOf s1[ .][ ]c2 meta.subclassOf s2[ .]
        first, second = (i for i, f in enumerate(fields) if f == SUBCLASS_OF)
        split: tuple[str, str] | None = None
        if first == 1 and 3 <= second < len(fields) - 1 and fields[second + 2 :] in ([], ["."]):
            middle = [f for f in fields[2 : second - 1] if f != "."]
            glued = fields[second - 1].removeprefix(".")
            if len(middle) == 1 and glued:  # the records are apart; only the newline is missing
                split = (middle[0], glued)
            elif not middle:
                split = _split_glued(glued, lambda s1, c2: s1 in known and c2 in known)
        if split is None:
            raise DataFormatError(path, lineno, f"expected 'class {SUBCLASS_OF} superclass', got {' '.join(fields)!r}")
        pairs = [(fields[0], split[0]), (split[1], fields[second + 1])]
        for pair in pairs:
            _check_ids(path, lineno, pair)
        records += pairs
    return records


def _read_reverse(path: Path) -> list[tuple[str, str]]:
    records: list[tuple[str, str]] = []
    for lineno, line in _lines(path):
        fields = line.split("\t") if "\t" in line else line.split()
        fields = [f.strip() for f in fields]
        if len(fields) != 2:
            raise DataFormatError(path, lineno, f"expected 'relation<TAB>reverse', got {len(fields)} fields")
        _check_ids(path, lineno, fields)
        records.append((fields[0], fields[1]))
    return records


@dataclass
class Ontology:
    """Freebase schema facts used by S-expression conversion and logical-form matching.

    Build one with :meth:`load`. Unknown relations and classes give ``None`` or empty tuples.

    Attributes:
        domains: Relation → domain class.
        ranges: Relation → range class.
        reverses: Relation → its reverse relation (both directions present).
        parents: Class → direct superclasses, in file order.

    """

    domains: dict[str, str] = field(default_factory=dict)
    ranges: dict[str, str] = field(default_factory=dict)
    reverses: dict[str, str] = field(default_factory=dict)
    parents: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _by_domain: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, directory: str | Path) -> Ontology:
        """Read ``fb_roles``, ``fb_types`` and ``reverse_properties`` from a directory.

        Raises:
            DataFormatError: When a file is missing or a line is malformed (file and line named).

        """
        root = Path(directory)
        onto = cls()
        by_domain: dict[str, list[str]] = {}
        for domain, rel, rng in _read_roles(root / ROLES_FILE):
            if rel in onto.domains:
                continue
            onto.domains[rel] = domain
            onto.ranges[rel] = rng
            by_domain.setdefault(domain, []).append(rel)
        onto._by_domain = {c: tuple(rels) for c, rels in by_domain.items()}
        known = set(onto.domains.values()) | set(onto.ranges.values())
        parents: dict[str, list[str]] = {}
        for child, parent in _read_types(root / TYPES_FILE, known):
            bucket = parents.setdefault(child, [])
            if parent not in bucket and parent != child:
                bucket.append(parent)
        onto.parents = {c: tuple(ps) for c, ps in parents.items()}
        for rel, rev in _read_reverse(root / REVERSE_FILE):
            onto.reverses.setdefault(rel, rev)
            onto.reverses.setdefault(rev, rel)
        return onto

    @property
    def relations(self) -> frozenset[str]:
        """Every relation with a known domain and range."""
        return frozenset(self.domains)

    def domain(self, relation: str) -> str | None:
        """Return the class a relation starts from (``people.person.nationality`` → ``people.person``)."""
        return self.domains.get(relation)

    def range(self, relation: str) -> str | None:
        """Return the class (or literal type such as ``type.datetime``) a relation leads to."""
        return self.ranges.get(relation)

    def reverse(self, relation: str) -> str | None:
        """Return the relation that links the same pairs the other way, if Freebase has one."""
        return self.reverses.get(relation)

    def relations_of_class(self, cls: str) -> tuple[str, ...]:
        """Relations whose domain is exactly ``cls``, in file order."""
        return self._by_domain.get(cls, ())

    def is_cvt(self, cls: str) -> bool:
        """Whether ``cls`` is a mediator (CVT) class: a schema class that is not a ``common.topic``.

        The schema files carry no CVT flag; Freebase's topic classes all descend from
        ``common.topic`` in ``fb_types`` while mediators (``people.place_lived``,
        ``government.government_position_held``) have no superclass there; the few mediators
        filed as topics are listed in :data:`MEDIATORS_FILED_AS_TOPICS`. Literal types
        (``type.int``, ``type.datetime``) and unknown classes are not CVTs.
        """
        if cls in MEDIATORS_FILED_AS_TOPICS:
            return True
        known = cls in self.parents or cls in self._by_domain
        return known and not cls.startswith("type.") and "common.topic" not in self.superclasses(cls)

    def superclasses(self, cls: str) -> tuple[str, ...]:
        """Every ancestor of ``cls`` (transitively, nearest first), ``cls`` itself excluded."""
        seen: dict[str, None] = {}
        queue = deque(self.parents.get(cls, ()))
        while queue:
            parent = queue.popleft()
            if parent == cls or parent in seen:
                continue
            seen[parent] = None
            queue.extend(self.parents.get(parent, ()))
        return tuple(seen)
