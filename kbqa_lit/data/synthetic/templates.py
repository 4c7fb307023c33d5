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
"""

from __future__ import annotations

from dataclasses import dataclass

from kbqa_lit.data.synthetic import bindings as b
from kbqa_lit.data.synthetic.generate import CURRENT_YEAR

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


def _t(
    tid: str,
    function: str,
    hops: int,
    binder: b.Binder,
    paraphrases: list[str],
    steps: list[tuple[str, str]],
    role: str = "iid",
) -> Template:
    return Template(
        tid, function, hops, binder, tuple(paraphrases), tuple(Step(s, q) for s, q in steps), role
    )


# reusable steps
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

_film = b.instances("film.film")
_person = b.instances("people.person")
_director = b.instances("film.director")
_team = b.instances("sports.sports_team")
_country = b.instances("location.country")

IID_TEMPLATES: tuple[Template, ...] = (
    # ---- one hop
    _t(
        "film_director",
        "none",
        1,
        _film,
        [
            "Who directed {e0}?",
            "Who was the director of the film {e0}?",
            "{e0} was directed by whom?",
            "Which filmmaker made {e0}?",
        ],
        [DIRECTOR],
    ),
    _t(
        "film_release_year",
        "none",
        1,
        _film,
        ["When was {e0} released?", "In what year did {e0} come out?", "What is the release year of {e0}?"],
        [("(JOIN (R film.film.release_year) {e0})", "when was {e0} released?")],
    ),
    _t(
        "film_country",
        "none",
        1,
        _film,
        [
            "Which country produced {e0}?",
            "In what country was the film {e0} made?",
            "{e0} is a film from which country?",
        ],
        [("(JOIN (R film.film.country) {e0})", "which country produced {e0}?")],
    ),
    _t(
        "person_birthplace",
        "none",
        1,
        _person,
        ["Where was {e0} born?", "What is the birthplace of {e0}?", "In which city was {e0} born?"],
        [("(JOIN (R people.person.place_of_birth) {e0})", "where was {e0} born?")],
    ),
    _t(
        "person_birth_date",
        "none",
        1,
        _person,
        ["When was {e0} born?", "What is the date of birth of {e0}?", "On what date was {e0} born?"],
        [("(JOIN (R people.person.date_of_birth) {e0})", "when was {e0} born?")],
    ),
    _t(
        "director_films",
        "none",
        1,
        _director,
        [
            "What films did {e0} direct?",
            "Which movies were directed by {e0}?",
            "Name the films directed by {e0}.",
        ],
        [("(JOIN (R film.director.film) {e0})", "what films did {e0} direct?")],
    ),
    _t(
        "album_artist",
        "none",
        1,
        b.instances("music.album"),
        ["Who recorded the album {e0}?", "Which artist released {e0}?", "Whose album is {e0}?"],
        [ALBUM_ARTIST],
    ),
    _t(
        "album_genre",
        "none",
        1,
        b.instances("music.album"),
        [
            "What genre is the album {e0}?",
            "What kind of music is on {e0}?",
            "Which musical genre does {e0} belong to?",
        ],
        [("(JOIN (R music.album.genre) {e0})", "what genre is {e0}?")],
    ),
    _t(
        "city_country",
        "none",
        1,
        b.instances("location.city"),
        [
            "Which country is {e0} in?",
            "{e0} is located in which country?",
            "In what country can you find {e0}?",
        ],
        [("(JOIN (R location.location.containedby) {e0})", "which country is {e0} in?")],
    ),
    _t(
        "country_capital",
        "none",
        1,
        _country,
        ["What is the capital of {e0}?", "Which city is the capital of {e0}?"],
        [("(JOIN (R location.country.capital) {e0})", "what is the capital of {e0}?")],
    ),
    _t(
        "team_sport",
        "none",
        1,
        _team,
        ["What sport does {e0} play?", "Which sport is {e0} a team in?"],
        [("(JOIN (R sports.sports_team.sport) {e0})", "what sport does {e0} play?")],
    ),
    _t(
        "team_founded",
        "none",
        1,
        _team,
        ["When was {e0} founded?", "In what year was {e0} established?"],
        [("(JOIN (R sports.sports_team.founded) {e0})", "when was {e0} founded?")],
    ),
    _t(
        "university_city",
        "none",
        1,
        b.instances("education.university"),
        ["Where is {e0} located?", "In which city is {e0}?", "What city is {e0} in?"],
        [("(JOIN (R education.university.city) {e0})", "in which city is {e0}?")],
    ),
    _t(
        "university_students",
        "none",
        1,
        b.instances("education.university"),
        ["How many students does {e0} have?", "What is the student population of {e0}?"],
        [("(JOIN (R education.university.number_of_students) {e0})", "how many students does {e0} have?")],
    ),
    _t(
        "actors_born_in",
        "none",
        1,
        b.instances("location.city"),
        [
            "Which actors were born in {e0}?",
            "Name the actors born in {e0}.",
            "What actors are natives of {e0}?",
        ],
        [
            ("(JOIN people.person.place_of_birth {e0})", "who was born in {e0}?"),
            ("(AND film.actor {prev})", "which of {prev} are actors?"),
        ],
    ),
    _t(
        "athletes_born_in",
        "none",
        1,
        b.instances("location.city"),
        [
            "Which athletes were born in {e0}?",
            "Name the professional athletes born in {e0}.",
            "What sportspeople are natives of {e0}?",
        ],
        [
            ("(JOIN people.person.place_of_birth {e0})", "who was born in {e0}?"),
            ("(AND sports.pro_athlete {prev})", "which of {prev} are athletes?"),
        ],
    ),
    _t(
        "director_genre_films",
        "none",
        1,
        b.linked_pairs("film.film", "film.film.directed_by", "film.film.genre"),
        ["Which {e1} films did {e0} direct?", "What {e1} movies were directed by {e0}?"],
        [
            ("(JOIN film.film.directed_by {e0})", "what films did {e0} direct?"),
            ("(AND {prev} (JOIN film.film.genre {e1}))", "which of {prev} are {e1} films?"),
        ],
    ),
    # ---- CVT hops
    _t(
        "film_cast",
        "none",
        1,
        _film,
        [
            "Who starred in {e0}?",
            "Who are the actors in {e0}?",
            "Which actors appeared in {e0}?",
            "Who was in the cast of {e0}?",
        ],
        [CAST],
    ),
    _t(
        "actor_films",
        "none",
        1,
        b.instances("film.actor"),
        ["What films has {e0} appeared in?", "Which movies did {e0} act in?", "What has {e0} starred in?"],
        [ACTOR_FILMS],
    ),
    _t(
        "film_character_actor",
        "none",
        1,
        b.linked_pairs("film.performance", "film.performance.film", "film.performance.character"),
        [
            "Who played {e1} in {e0}?",
            "Which actor portrayed {e1} in {e0}?",
            "In {e0}, who played the part of {e1}?",
        ],
        [
            (
                "(JOIN (R film.performance.actor) (AND (JOIN film.performance.film {e0}) "
                "(JOIN film.performance.character {e1})))",
                "who played {e1} in {e0}?",
            )
        ],
    ),
    _t(
        "film_actor_character",
        "none",
        1,
        b.linked_pairs("film.performance", "film.performance.film", "film.performance.actor"),
        [
            "Which character did {e1} play in {e0}?",
            "Who did {e1} portray in {e0}?",
            "What role did {e1} have in {e0}?",
        ],
        [
            (
                "(JOIN (R film.performance.character) (AND (JOIN film.performance.film {e0}) "
                "(JOIN film.performance.actor {e1})))",
                "which character did {e1} play in {e0}?",
            )
        ],
    ),
    _t(
        "player_teams",
        "none",
        1,
        b.instances("sports.pro_athlete"),
        [
            "What teams has {e0} played for?",
            "Which teams did {e0} play on?",
            "For which teams has {e0} played?",
        ],
        [PLAYER_TEAMS],
    ),
    _t(
        "person_universities",
        "none",
        1,
        b.instances("people.person", into="education.education.student"),
        ["Where did {e0} go to college?", "Which university did {e0} attend?", "Where did {e0} study?"],
        [ATTENDED],
    ),
    _t(
        "stint_start",
        "none",
        1,
        b.linked_pairs(
            "sports.sports_team_roster", "sports.sports_team_roster.player", "sports.sports_team_roster.team"
        ),
        ["When did {e0} join {e1}?", "In what year did {e0} start playing for {e1}?"],
        [
            (
                "(JOIN (R sports.sports_team_roster.from) (AND (JOIN sports.sports_team_roster.player {e0}) "
                "(JOIN sports.sports_team_roster.team {e1})))",
                "when did {e0} join {e1}?",
            )
        ],
    ),
    _t(
        "stint_end",
        "none",
        1,
        b.linked_pairs(
            "sports.sports_team_roster",
            "sports.sports_team_roster.player",
            "sports.sports_team_roster.team",
            require="sports.sports_team_roster.to",
        ),
        ["When did {e0} leave {e1}?", "In which year did {e0} stop playing for {e1}?"],
        [
            (
                "(JOIN (R sports.sports_team_roster.to) (AND (JOIN sports.sports_team_roster.player {e0}) "
                "(JOIN sports.sports_team_roster.team {e1})))",
                "when did {e0} leave {e1}?",
            )
        ],
    ),
    _t(
        "education_degree",
        "none",
        1,
        b.linked_pairs(
            "education.education", "education.education.student", "education.education.institution"
        ),
        ["What degree did {e0} earn at {e1}?", "Which degree did {e0} get from {e1}?"],
        [
            (
                "(JOIN (R education.education.degree) (AND (JOIN education.education.student {e0}) "
                "(JOIN education.education.institution {e1})))",
                "what degree did {e0} earn at {e1}?",
            )
        ],
    ),
    _t(
        "actor_alumni",
        "none",
        1,
        b.instances("education.university"),
        [
            "Which actors studied at {e0}?",
            "Name the actors who went to {e0}.",
            "What actors are alumni of {e0}?",
        ],
        [
            (
                "(JOIN (R education.education.student) (JOIN education.education.institution {e0}))",
                "who studied at {e0}?",
            ),
            ("(AND film.actor {prev})", "which of {prev} are actors?"),
        ],
    ),
    # ---- two hops
    _t(
        "director_birthplace",
        "none",
        2,
        _film,
        [
            "Where was the director of {e0} born?",
            "In which city was the director of {e0} born?",
            "What is the birthplace of the person who directed {e0}?",
        ],
        [DIRECTOR, BIRTHPLACE],
    ),
    _t(
        "album_artist_nationality",
        "none",
        2,
        b.instances("music.album"),
        [
            "What nationality is the artist who recorded {e0}?",
            "Which country is the musician behind {e0} a citizen of?",
            "The artist of {e0} holds which citizenship?",
        ],
        [ALBUM_ARTIST, ("(JOIN (R people.person.nationality) {prev})", "what is the nationality of {prev}?")],
    ),
    _t(
        "director_other_films",
        "none",
        2,
        _film,
        [
            "What other films did the director of {e0} make?",
            "Which other movies were directed by the director of {e0}?",
            "The director of {e0} also directed which films?",
        ],
        [DIRECTOR, ("(JOIN (R film.director.film) {prev})", "what other films did {prev} direct?")],
    ),
    _t(
        "costars",
        "none",
        2,
        b.instances("film.actor"),
        [
            "Who has {e0} acted alongside?",
            "Which actors have appeared in a film with {e0}?",
            "Who are {e0}'s co-stars?",
        ],
        [
            ACTOR_FILMS,
            (
                "(JOIN (R film.performance.actor) (JOIN film.performance.film {prev}))",
                "who else starred in {prev}?",
            ),
        ],
    ),
    _t(
        "spouse_birthplace",
        "none",
        2,
        b.instances("people.person", out="people.person.spouse"),
        ["Where was {e0}'s spouse born?", "In which city was the husband or wife of {e0} born?"],
        [SPOUSE, BIRTHPLACE],
    ),
    _t(
        "player_team_cities",
        "none",
        2,
        b.instances("sports.pro_athlete"),
        [
            "In which cities has {e0} played professionally?",
            "Which cities are home to the teams {e0} played for?",
        ],
        [PLAYER_TEAMS, ("(JOIN (R sports.sports_team.location) {prev})", "where are {prev} based?")],
    ),
    _t(
        "actor_directors",
        "none",
        2,
        b.instances("film.actor"),
        ["Which directors has {e0} worked with?", "Who directed the films that {e0} starred in?"],
        [ACTOR_FILMS, ("(JOIN (R film.film.directed_by) {prev})", "who directed {prev}?")],
    ),
    # ---- three hops
    _t(
        "director_birth_country",
        "none",
        3,
        _film,
        [
            "In which country was the director of {e0} born?",
            "Which country was the director of {e0} born in?",
        ],
        [DIRECTOR, BIRTHPLACE, COUNTRY_OF],
    ),
    _t(
        "album_artist_origin_country",
        "none",
        3,
        b.instances("music.album"),
        [
            "Which country does the artist who recorded {e0} come from?",
            "The artist of {e0} hails from which country?",
        ],
        [ALBUM_ARTIST, ("(JOIN (R music.artist.origin) {prev})", "where does {prev} come from?"), COUNTRY_OF],
    ),
    _t(
        "player_team_countries",
        "none",
        3,
        b.instances("sports.pro_athlete"),
        [
            "In which countries has {e0} played for a team?",
            "Which countries were the teams of {e0} based in?",
        ],
        [
            PLAYER_TEAMS,
            ("(JOIN (R sports.sports_team.location) {prev})", "where are {prev} based?"),
            COUNTRY_OF,
        ],
    ),
    _t(
        "spouse_birth_country",
        "none",
        3,
        b.instances("people.person", out="people.person.spouse"),
        [
            "In which country was {e0}'s spouse born?",
            "What is the country of birth of {e0}'s husband or wife?",
        ],
        [SPOUSE, BIRTHPLACE, COUNTRY_OF],
    ),
    # ---- COUNT
    _t(
        "count_director_films",
        "count",
        1,
        _director,
        [
            "How many films has {e0} directed?",
            "How many movies did {e0} direct?",
            "What is the number of films directed by {e0}?",
        ],
        [
            ("(JOIN (R film.director.film) {e0})", "what films did {e0} direct?"),
            ("(COUNT {prev})", "how many films are in {prev}?"),
        ],
    ),
    _t(
        "count_film_cast",
        "count",
        1,
        _film,
        ["How many actors appeared in {e0}?", "How many people are in the cast of {e0}?"],
        [CAST, ("(COUNT {prev})", "how many actors are in {prev}?")],
    ),
    _t(
        "count_team_players",
        "count",
        1,
        _team,
        ["How many players have played for {e0}?", "How many athletes have been on the roster of {e0}?"],
        [TEAM_PLAYERS, ("(COUNT {prev})", "how many players are in {prev}?")],
    ),
    _t(
        "count_artist_albums",
        "count",
        1,
        b.instances("music.artist"),
        ["How many albums has {e0} released?", "How many records has {e0} put out?"],
        [
            ("(JOIN (R music.artist.album) {e0})", "which albums did {e0} record?"),
            ("(COUNT {prev})", "how many albums are in {prev}?"),
        ],
    ),
    # ---- ARGMAX / ARGMIN
    _t(
        "tallest_team_player",
        "argmax",
        1,
        b.unique_extreme("sports.sports_team", b.team_players, "people.person.height_meters", largest=True),
        [
            "Who is the tallest player to have played for {e0}?",
            "Which player of {e0} is the tallest?",
            "Who was the tallest athlete on the roster of {e0}?",
        ],
        [TEAM_PLAYERS, ("(ARGMAX {prev} people.person.height_meters)", "who is the tallest of {prev}?")],
    ),
    _t(
        "first_director_film",
        "argmin",
        1,
        b.unique_extreme("film.director", b.director_films, "film.film.release_year", largest=False),
        ["What was the first film {e0} directed?", "Which is the earliest film directed by {e0}?"],
        [
            ("(JOIN (R film.director.film) {e0})", "what films did {e0} direct?"),
            ("(ARGMIN {prev} film.film.release_year)", "which of {prev} was released first?"),
        ],
    ),
    _t(
        "longest_actor_film",
        "argmax",
        1,
        b.unique_extreme("film.actor", b.actor_films, "film.film.runtime_minutes", largest=True),
        [
            "What is the longest film {e0} has appeared in?",
            "Which of {e0}'s films has the longest running time?",
        ],
        [ACTOR_FILMS, ("(ARGMAX {prev} film.film.runtime_minutes)", "which of {prev} is the longest?")],
    ),
    _t(
        "largest_city",
        "argmax",
        1,
        b.unique_extreme("location.country", b.country_cities, "location.city.population", largest=True),
        [
            "What is the largest city in {e0}?",
            "Which city in {e0} has the most inhabitants?",
            "What is the most populous city of {e0}?",
        ],
        [
            ("(AND location.city (JOIN location.location.containedby {e0}))", "which cities are in {e0}?"),
            ("(ARGMAX {prev} location.city.population)", "which of {prev} has the largest population?"),
        ],
    ),
    _t(
        "latest_album",
        "argmax",
        1,
        b.unique_extreme("music.artist", b.artist_albums, "music.album.release_date", largest=True),
        ["What is the latest album by {e0}?", "Which album did {e0} release most recently?"],
        [
            ("(JOIN (R music.artist.album) {e0})", "which albums did {e0} record?"),
            ("(ARGMAX {prev} music.album.release_date)", "which of {prev} was released last?"),
        ],
    ),
    _t(
        "oldest_cast_member",
        "argmin",
        1,
        b.unique_extreme("film.film", b.film_cast, "people.person.date_of_birth", largest=False),
        ["Who is the oldest actor in {e0}?", "Which cast member of {e0} was born first?"],
        [CAST, ("(ARGMIN {prev} people.person.date_of_birth)", "who is the oldest of {prev}?")],
    ),
    _t(
        "oldest_university_attended",
        "argmin",
        1,
        b.unique_extreme(
            "people.person", b.person_universities, "education.university.founded", largest=False
        ),
        [
            "What is the oldest university {e0} attended?",
            "Which of the universities {e0} went to was founded first?",
        ],
        [ATTENDED, ("(ARGMIN {prev} education.university.founded)", "which of {prev} was founded first?")],
    ),
    # ---- comparatives
    _t(
        "director_films_after",
        "comparative",
        1,
        b.threshold(
            "film.director",
            b.director_films,
            "film.film.release_year",
            b.year_literal,
            b.year_candidates,
            keep_above=True,
        ),
        [
            "Which films directed by {e0} were released after {lit}?",
            "What movies did {e0} direct after {lit}?",
            "Name the films by {e0} that came out after {lit}.",
        ],
        [
            ("(JOIN film.film.directed_by {e0})", "what films did {e0} direct?"),
            ("(AND {prev} (gt film.film.release_year {lit}))", "which of {prev} were released after {lit}?"),
        ],
    ),
    _t(
        "tall_team_players",
        "comparative",
        1,
        b.threshold(
            "sports.sports_team",
            b.team_players,
            "people.person.height_meters",
            b.float_literal,
            b.rounded_candidates(0.05),
            keep_above=True,
        ),
        [
            "Which players of {e0} are at least {lit} m tall?",
            "Who has played for {e0} and is {lit} metres or taller?",
        ],
        [
            TEAM_PLAYERS,
            (
                "(AND {prev} (ge people.person.height_meters {lit}))",
                "which of {prev} are at least {lit} m tall?",
            ),
        ],
    ),
    _t(
        "small_cities",
        "comparative",
        1,
        b.threshold(
            "location.country",
            b.country_cities,
            "location.city.population",
            b.integer_literal,
            b.rounded_candidates(100_000),
            keep_above=False,
        ),
        [
            "Which cities in {e0} have fewer than {lit} inhabitants?",
            "What cities of {e0} have a population below {lit}?",
        ],
        [
            ("(JOIN location.location.containedby {e0})", "what places are in {e0}?"),
            (
                "(AND {prev} (lt location.city.population {lit}))",
                "which of {prev} have fewer than {lit} inhabitants?",
            ),
        ],
    ),
    _t(
        "albums_before",
        "comparative",
        1,
        b.threshold(
            "music.artist",
            b.artist_albums,
            "music.album.release_date",
            b.year_start_date,
            b.date_year_candidates,
            keep_above=False,
        ),
        ["Which albums did {e0} release before {lit}?", "What records by {e0} came out before {lit}?"],
        [
            ("(JOIN music.album.artist {e0})", "which albums did {e0} record?"),
            (
                "(AND {prev} (lt music.album.release_date {lit}))",
                "which of {prev} were released before {lit}?",
            ),
        ],
    ),
    # ---- time constraints
    _t(
        "team_in_year",
        "time",
        1,
        b.roster_years(CURRENT_YEAR),
        [
            "Which team did {e0} play for in {lit}?",
            "What team was {e0} on in {lit}?",
            "In {lit}, which team did {e0} play for?",
        ],
        [
            PLAYER_TEAMS,
            (
                "(JOIN (R sports.sports_team_roster.team) (TC (JOIN sports.sports_team_roster.player {e0}) "
                "sports.sports_team_roster.from {lit}))",
                "which of {prev} did {e0} play for in {lit}?",
            ),
        ],
    ),
    _t(
        "current_team",
        "time",
        1,
        b.current_players(),
        [
            "Which team does {e0} play for now?",
            "What is {e0}'s current team?",
            "Who does {e0} currently play for?",
        ],
        [
            PLAYER_TEAMS,
            (
                "(JOIN (R sports.sports_team_roster.team) (TC (JOIN sports.sports_team_roster.player {e0}) "
                "sports.sports_team_roster.from NOW))",
                "which of {prev} does {e0} play for now?",
            ),
        ],
    ),
)

HELDOUT_TEMPLATES: tuple[Template, ...] = (
    # ---- compositional: relations seen in train, never together
    _t(
        "director_nationality",
        "none",
        2,
        _film,
        [
            "What is the nationality of the director of {e0}?",
            "Which country is the director of {e0} a citizen of?",
        ],
        [DIRECTOR, ("(JOIN (R people.person.nationality) {prev})", "what is the nationality of {prev}?")],
        role="compositional",
    ),
    _t(
        "album_artist_birthplace",
        "none",
        2,
        b.instances("music.album"),
        ["Where was the artist who recorded {e0} born?", "In which city was the performer of {e0} born?"],
        [ALBUM_ARTIST, BIRTHPLACE],
        role="compositional",
    ),
    _t(
        "university_country",
        "none",
        2,
        b.instances("education.university"),
        ["Which country is {e0} located in?", "In what country is {e0}?"],
        [("(JOIN (R education.university.city) {e0})", "in which city is {e0}?"), COUNTRY_OF],
        role="compositional",
    ),
    _t(
        "spouse_nationality",
        "none",
        2,
        b.instances("people.person", out="people.person.spouse"),
        [
            "What is the nationality of {e0}'s spouse?",
            "Which country is the husband or wife of {e0} a citizen of?",
        ],
        [SPOUSE, ("(JOIN (R people.person.nationality) {prev})", "what is the nationality of {prev}?")],
        role="compositional",
    ),
    _t(
        "director_universities",
        "none",
        2,
        _film,
        ["Where did the director of {e0} study?", "Which university did the director of {e0} attend?"],
        [
            DIRECTOR,
            (
                "(JOIN (R education.education.institution) (JOIN education.education.student {prev}))",
                "where did {prev} study?",
            ),
        ],
        role="compositional",
    ),
    _t(
        "person_study_cities",
        "none",
        2,
        b.instances("people.person", into="education.education.student"),
        ["In which cities did {e0} study?", "Which cities are the universities {e0} attended in?"],
        [ATTENDED, ("(JOIN (R education.university.city) {prev})", "in which city is {prev}?")],
        role="compositional",
    ),
    # ---- zero-shot: a relation no train question uses
    _t(
        "country_language",
        "none",
        1,
        _country,
        ["What language is spoken in {e0}?", "What is the official language of {e0}?"],
        [("(JOIN (R location.country.official_language) {e0})", "what is the official language of {e0}?")],
        role="zero-shot",
    ),
    _t(
        "birth_country_language",
        "none",
        3,
        _person,
        [
            "What language is spoken in the country where {e0} was born?",
            "What is the official language of {e0}'s country of birth?",
        ],
        [
            ("(JOIN (R people.person.place_of_birth) {e0})", "where was {e0} born?"),
            COUNTRY_OF,
            (
                "(JOIN (R location.country.official_language) {prev})",
                "what is the official language of {prev}?",
            ),
        ],
        role="zero-shot",
    ),
    _t(
        "team_arena",
        "none",
        1,
        _team,
        ["Where does {e0} play its home games?", "What is the home arena of {e0}?"],
        [("(JOIN (R sports.sports_team.arena) {e0})", "what is the home arena of {e0}?")],
        role="zero-shot",
    ),
    _t(
        "team_arena_capacity",
        "none",
        2,
        _team,
        ["How many seats does the arena of {e0} have?", "What is the capacity of {e0}'s home arena?"],
        [
            ("(JOIN (R sports.sports_team.arena) {e0})", "what is the home arena of {e0}?"),
            ("(JOIN (R sports.arena.capacity) {prev})", "how many seats does {prev} have?"),
        ],
        role="zero-shot",
    ),
    _t(
        "count_language_countries",
        "count",
        1,
        b.instances("language.human_language"),
        [
            "In how many countries is {e0} an official language?",
            "How many countries have {e0} as an official language?",
        ],
        [
            (
                "(JOIN location.country.official_language {e0})",
                "which countries have {e0} as an official language?",
            ),
            ("(COUNT {prev})", "how many countries are in {prev}?"),
        ],
        role="zero-shot",
    ),
)

ALL_TEMPLATES: tuple[Template, ...] = IID_TEMPLATES + HELDOUT_TEMPLATES
TEMPLATE_BY_ID: dict[str, Template] = {t.id: t for t in ALL_TEMPLATES}
