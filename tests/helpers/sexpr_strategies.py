"""Hypothesis strategies that build valid S-expression text."""

from __future__ import annotations

from hypothesis import strategies as st

_seg = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
relation = st.builds(lambda a, b, c: f"{a}.{b}.{c}", _seg, _seg, _seg)
klass = st.builds(lambda a, b: f"{a}.{b}", st.from_regex(r"[a-z][a-z0-9_]{1,8}", fullmatch=True), _seg)
entity = st.from_regex(r"[mg]\.[0-9a-z_]{1,8}", fullmatch=True)
_xsd = "http://www.w3.org/2001/XMLSchema#"
literal = st.one_of(
    st.integers(-5000, 5000).map(str),
    st.integers(1000, 2100).map(lambda y: f"{y}^^{_xsd}gYear"),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: f"{f!r}^^{_xsd}float"),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters='\\"'), max_size=12).map(
        lambda s: f'"{s}"'
    ),
    st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd", "Zs")), min_size=1, max_size=10).map(
        lambda s: f'"{s}"@en'
    ),
)
rel = st.one_of(relation, relation.map(lambda r: f"(R {r})"))
relpath = st.one_of(rel, st.builds(lambda a, b: f"(JOIN {a} {b})", rel, relation))


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda r, x: f"(JOIN {r} {x})", rel, st.one_of(children, entity, literal)),
        st.builds(lambda a, b: f"(AND {a} {b})", children, children),
        st.builds(lambda op, x, p: f"({op} {x} {p})", st.sampled_from(["ARGMAX", "ARGMIN"]), children, relpath),
        st.builds(lambda op, p, v: f"({op} {p} {v})", st.sampled_from(["lt", "le", "gt", "ge"]), relpath, literal),
        st.builds(
            lambda x, r, t: f"(TC {x} {r} {t})",
            children,
            relation,
            st.one_of(st.just("NOW"), st.integers(1900, 2020).map(str)),
        ),
    )


#: A set-denoting expression (no COUNT).
set_expr = st.recursive(st.one_of(klass, st.builds(lambda r, e: f"(JOIN {r} {e})", rel, entity)), _extend, max_leaves=8)
#: Any top-level S-expression.
sexpr_text = st.one_of(set_expr, set_expr.map(lambda s: f"(COUNT {s})"))
