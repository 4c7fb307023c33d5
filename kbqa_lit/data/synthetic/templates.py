"""Question templates of the synthetic world: S-expression steps, sub-questions and paraphrases.

A :class:`Template` is a chain of :class:`Step` s. Each step is a complete S-expression (usually
built from the previous one, ``{prev}``) with the sub-question that asks for its answers; the last
step's S-expression is the gold logical form, and the steps with their executed answers make the
gold progressive decomposition ``[SUBQ] q1 [ANS] a1 [SUBQ] q2 [ANS] a2``. Placeholders:

- in S-expressions: ``{e0}``/``{e1}`` topic entity ids, ``{lit}`` the literal token, ``{prev}``
  the previous step's S-expression;
- in questions and sub-questions: ``{e0}``/``{e1}`` entity mentions, ``{lit}`` the literal's text,
  ``{prev}`` the previous step's answer names joined with `` | ``.

``role`` says where a template's questions may go: ``iid`` templates feed train, dev and the
i.i.d. part of test; ``compositional`` templates combine relations that never occur together in
an i.i.d. template; ``zero-shot`` templates use relations that no i.i.d. template uses. The last
two feed test only (their labels are re-checked against the train split in ``splits.py``).

The templates themselves are listed in :mod:`~kbqa_lit.data.synthetic.catalog`; this module holds
the model and the steps that several templates share.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbqa_lit.data.synthetic import bindings as b
from kbqa_lit.errors import check_choice

FUNCTIONS = ("none", "count", "argmax", "argmin", "comparative", "time")
ROLES = ("iid", "compositional", "zero-shot")


@dataclass(frozen=True)
class Step:
    """One hop or constraint: its S-expression and the sub-question it answers."""

    sexpr: str
    subq: str


@dataclass(frozen=True)
class Template:
    """A question template.

    Attributes:
        id: Unique template id.
        function: ``none``, ``count``, ``argmax``, ``argmin``, ``comparative`` or ``time``.
        hops: Entity-to-entity steps from the topic entity to the answer (a CVT hop counts once).
        binder: Proposes slot fillings (see :mod:`~kbqa_lit.data.synthetic.bindings`).
        paraphrases: Two to four phrasings of the question.
        steps: The decomposition; the last step's S-expression is the gold one.
        role: ``iid``, ``compositional`` or ``zero-shot``.
    """

    id: str
    function: str
    hops: int
    binder: b.Binder
    paraphrases: tuple[str, ...]
    steps: tuple[Step, ...]
    role: str = "iid"


def template(
    tid: str,
    function: str,
    hops: int,
    binder: b.Binder,
    paraphrases: list[str],
    steps: list[tuple[str, str]],
    role: str = "iid",
) -> Template:
    """Build a :class:`Template` from lists (steps as ``(S-expression, sub-question)`` pairs)."""
    check_choice("template role", role, ROLES, error=ValueError)
    check_choice("template function", function, FUNCTIONS, error=ValueError)
    return Template(tid, function, hops, binder, tuple(paraphrases), tuple(Step(s, q) for s, q in steps), role)


# steps shared by several templates
DIRECTOR = ("(JOIN (R film.film.directed_by) {e0})", "who directed {e0}?")
CAST = ("(JOIN (R film.performance.actor) (JOIN film.performance.film {e0}))", "who starred in {e0}?")
ACTOR_FILMS = (
    "(JOIN (R film.performance.film) (JOIN film.performance.actor {e0}))",
    "what films has {e0} appeared in?",
)
PLAYER_TEAMS = (
    "(JOIN (R sports.sports_team_roster.team) (JOIN sports.sports_team_roster.player {e0}))",
    "what teams has {e0} played for?",
)
TEAM_PLAYERS = (
    "(JOIN (R sports.sports_team_roster.player) (JOIN sports.sports_team_roster.team {e0}))",
    "who has played for {e0}?",
)
ALBUM_ARTIST = ("(JOIN (R music.album.artist) {e0})", "who recorded {e0}?")
ATTENDED = (
    "(JOIN (R education.education.institution) (JOIN education.education.student {e0}))",
    "where did {e0} study?",
)
SPOUSE = ("(JOIN (R people.person.spouse) {e0})", "who is {e0} married to?")
BIRTHPLACE = ("(JOIN (R people.person.place_of_birth) {prev})", "where was {prev} born?")
COUNTRY_OF = ("(JOIN (R location.location.containedby) {prev})", "which country is {prev} in?")
