"""The synthetic world's knowledge base in memory: entities, facts, indexes and N-Triples output.

A :class:`World` holds named entities and unnamed CVT nodes (each with its classes), and facts
``(subject, relation, object)`` whose object is an entity id or a typed :class:`Lit`. Relations
with a reverse property (:data:`~kbqa_lit.data.synthetic.world_schema.REVERSE_PROPERTIES`) are stored in
both directions automatically. :meth:`World.ntriples` renders the whole KB as sorted N-Triples
lines under the Freebase namespace, so equal worlds give byte-identical files.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from kbqa_lit.data.synthetic.world_schema import CLASS_BY_ID, RELATION_BY_ID, REVERSE_PROPERTIES
from kbqa_lit.kb.lf.iri import ALIAS_RELATION, NAME_RELATION, NS, TYPE_RELATION

_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, order=True)
class Lit:
    """A typed literal object.

    Attributes:
        value: Lexical value, e.g. ``"2004"``, ``"1.87"``, ``"1975-03-14"``.
        datatype: Full XSD datatype IRI.
    """

    value: str
    datatype: str


Obj = str | Lit


@dataclass
class Entity:
    """A node of the world.

    Attributes:
        id: Freebase-style id without namespace (``m.syn_...``).
        name: English name; ``None`` for CVT nodes.
        classes: Class ids in the order they were added.
        aliases: Alternative names (``common.topic.alias``).
    """

    id: str
    name: str | None
    classes: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)

    @property
    def is_cvt(self) -> bool:
        """Whether the node is an unnamed mediator (CVT) node."""
        return self.name is None


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


class World:
    """Entities, facts and lookup indexes of one synthetic world.

    Args:
        rng: The world's random generator; entity ids are drawn from it.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.entities: dict[str, Entity] = {}
        self.facts: list[tuple[str, str, Obj]] = []
        self._fact_set: set[tuple[str, str, Obj]] = set()
        self._out: dict[tuple[str, str], list[Obj]] = defaultdict(list)
        self._in: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._by_class: dict[str, list[str]] = defaultdict(list)

    # -- building -------------------------------------------------------------------------
    def _mint(self) -> str:
        while True:
            eid = "m.syn_" + "".join(self.rng.choices(_ID_ALPHABET, k=7))
            if eid not in self.entities:
                return eid

    def add_entity(self, name: str, classes: list[str], aliases: list[str] | None = None) -> str:
        """Create a named entity and return its id."""
        eid = self._mint()
        self.entities[eid] = Entity(eid, name, [], list(aliases or []))
        for cls in classes:
            self.add_class(eid, cls)
        return eid

    def add_cvt(self, cls: str) -> str:
        """Create an unnamed CVT node of class ``cls`` and return its id."""
        if not CLASS_BY_ID[cls].cvt:
            raise ValueError(f"{cls} is not a CVT class")
        eid = self._mint()
        self.entities[eid] = Entity(eid, None, [])
        self.add_class(eid, cls)
        return eid

    def add_class(self, eid: str, cls: str) -> None:
        """Give entity ``eid`` the class ``cls`` (no-op when it has it already)."""
        if cls not in CLASS_BY_ID:
            raise KeyError(f"unknown class {cls}")
        ent = self.entities[eid]
        if cls not in ent.classes:
            ent.classes.append(cls)
            self._by_class[cls].append(eid)

    def add_alias(self, eid: str, alias: str) -> None:
        """Add an alternative name to a named entity."""
        ent = self.entities[eid]
        if alias and alias != ent.name and alias not in ent.aliases:
            ent.aliases.append(alias)

    def rename(self, eid: str, name: str) -> None:
        """Change the name of a named entity (used to plant deliberate name clashes)."""
        self.entities[eid].name = name

    def add(self, s: str, rel: str, o: Obj) -> None:
        """Add a fact (and its reverse, for relations with a reverse property); duplicates are ignored."""
        if rel not in RELATION_BY_ID:
            raise KeyError(f"unknown relation {rel}")
        self._add_one(s, rel, o)
        rev = REVERSE_PROPERTIES.get(rel)
        if rev is not None and isinstance(o, str):
            self._add_one(o, rev, s)

    def _add_one(self, s: str, rel: str, o: Obj) -> None:
        key = (s, rel, o)
        if key in self._fact_set:
            return
        self._fact_set.add(key)
        self.facts.append(key)
        self._out[(s, rel)].append(o)
        if isinstance(o, str):
            self._in[(o, rel)].append(s)

    # -- reading --------------------------------------------------------------------------
    def name(self, eid: str) -> str:
        """The name of an entity (its id for CVT nodes)."""
        return self.entities[eid].name or eid

    def objects(self, s: str, rel: str) -> list[Obj]:
        """Objects of ``(s, rel, ?)`` in insertion order."""
        return list(self._out.get((s, rel), ()))

    def entity_objects(self, s: str, rel: str) -> list[str]:
        """Entity objects of ``(s, rel, ?)``."""
        return [o for o in self._out.get((s, rel), ()) if isinstance(o, str)]

    def value(self, s: str, rel: str) -> Lit | None:
        """The first literal object of ``(s, rel, ?)``, or ``None``."""
        for o in self._out.get((s, rel), ()):
            if isinstance(o, Lit):
                return o
        return None

    def subjects(self, o: str, rel: str) -> list[str]:
        """Subjects of ``(?, rel, o)`` in insertion order."""
        return list(self._in.get((o, rel), ()))

    def instances(self, cls: str) -> list[str]:
        """Entities of class ``cls`` in creation order."""
        return list(self._by_class.get(cls, ()))

    def has_class(self, eid: str, cls: str) -> bool:
        """Whether entity ``eid`` has class ``cls``."""
        return cls in self.entities[eid].classes

    def named_entities(self) -> list[Entity]:
        """Every named (non-CVT) entity, in creation order."""
        return [e for e in self.entities.values() if not e.is_cvt]

    # -- output ---------------------------------------------------------------------------
    def triples(self) -> list[tuple[str, str, Obj]]:
        """Every triple of the KB: names, aliases, classes and facts."""
        out: list[tuple[str, str, Obj]] = []
        for ent in self.entities.values():
            for cls in ent.classes:
                out.append((ent.id, TYPE_RELATION, cls))
            if ent.name is not None:
                out.append((ent.id, NAME_RELATION, Lit(ent.name, "@en")))
            for alias in ent.aliases:
                out.append((ent.id, ALIAS_RELATION, Lit(alias, "@en")))
        out.extend(self.facts)
        return out

    def ntriples(self) -> str:
        """Render the KB as N-Triples text, one triple per line, lines sorted."""
        lines = []
        for s, rel, o in self.triples():
            if isinstance(o, Lit):
                suffix = o.datatype if o.datatype.startswith("@") else f"^^<{o.datatype}>"
                obj = f'"{_escape(o.value)}"{suffix}'
            else:
                obj = f"<{NS}{o}>"
            lines.append(f"<{NS}{s}> <{NS}{rel}> {obj} .")
        lines.sort()
        return "\n".join(lines) + "\n"

    def stats(self) -> dict[str, int]:
        """Counts of triples, named entities and CVT nodes."""
        named = sum(1 for e in self.entities.values() if not e.is_cvt)
        return {
            "triples": len(self.triples()),
            "entities": named,
            "cvt_nodes": len(self.entities) - named,
        }
