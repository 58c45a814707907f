"""Shared pieces of the property-based robustness tests: junk inputs and the verdict.

A public function of ibp_lab given bad or extreme input must either raise a
ValueError/TypeError with a message (raised by ibp_lab itself or a builtin, not from
deep inside a library) or return something that passes the caller's check.
"""

from __future__ import annotations

from hypothesis import strategies as st

#: Values of every kind, including large integers.
anything = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
    st.lists(st.integers(0, 2), max_size=3),
)
#: Like ``anything`` without large integers: a million rows or sweeps is a legitimate
#: (if slow) request, not bad input.
not_a_count = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
    st.lists(st.integers(0, 2), max_size=3),
)


def clear_error_or(result_check, call):
    """Run ``call``: a ValueError/TypeError must carry a message; otherwise check the result."""
    try:
        result = call()
    except (ValueError, TypeError) as exc:
        assert str(exc), "an error without a message"
        assert type(exc).__module__ in ("builtins",) or "ibp_lab" in type(exc).__module__, (
            f"an error from deep inside a library: {type(exc).__module__}.{type(exc).__name__}: {exc}"
        )
        return
    result_check(result)
