"""The uncollapsed sampler's draws, draw for draw: compiled births against a slow reference.

Issue 54 timed :func:`ibp_lab.inference.uncollapsed.run_uncollapsed`. Its births already
run compiled (``_gaussian_births_kernel``, ``_gaussian_data_births_kernel``); what took
about 60% of a sweep was the trace's class prior (``models.prior.log_prior``, ``np.unique``
over columns), now the kernel's compiled one. Neither may change a draw. Two checks:

- **A slow reference path, at test time**: the same runner with the births written in
  plain Python and NumPy (the generic loop ``uncollapsed._gaussian_births`` for
  ``births="prior"``, :func:`reference_data_births` below for ``births="data"``) and the
  trace measured with the public ``log_prior``. The chains must agree bit for bit: every
  ``Z``, ``A``, ``K+``, ``log_likelihood`` and count of accepted births. The recorded
  ``log_joint`` agrees to 1e-12 relative only: the compiled class prior sums its terms in
  another order (measured: at most 7e-15).
- **Recorded draws of the code before issue 54** (commit 3adfd15, ``git show
  3adfd15:ibp_lab/inference/uncollapsed.py`` run from a temporary module, seed 54):
  the ``K+`` trace, the accepted births per sweep and the final ``Z``, on the three- and
  four-row examples and on 60 of the digits at ``sigma_x`` 0.25 and 1, for each birth rule.
"""

import math

import numpy as np
import pytest

from ibp_lab import _kernel
from ibp_lab._hyper import new_dish_rate
from ibp_lab._threads import single_blas_thread
from ibp_lab.datasets import load_digit_sets
from ibp_lab.inference import uncollapsed
from ibp_lab.models.prior import log_prior

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
X4 = np.array([[1.1, -0.2], [0.9, 0.3], [-0.5, 0.9], [0.2, 1.1]])
BIRTH_RULES = ("prior", "data")


def _digits_case(sigma_x):
    """60 of the book's digits from a random start of 8 sparse features (singletons to
    kill, columns to share): at sigma_x 0.25 prior births are rarely accepted and data
    births often; at 1 both often."""
    X = load_digit_sets().train[::5]
    Z0 = (np.random.default_rng(0).random((60, 8)) < 0.1).astype(np.int8)
    return X, 12, dict(alpha=2.0, sigma_x=sigma_x, sigma_a=0.3, Z0=Z0)


#: name -> (X, sweeps, hyperparameters); every run has seed 54, burn 2, thin 3.
CASES = {
    "three rows": lambda: (X3, 40, dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2)),
    "four rows": lambda: (X4, 40, dict(alpha=0.4, sigma_x=2.0, sigma_a=1.2, beta=2.0)),
    "digits, sigma_x 0.25": lambda: _digits_case(0.25),
    "digits, sigma_x 1": lambda: _digits_case(1.0),
}

#: (case, births) -> (K+ per sweep, births accepted per sweep, final Z as np.packbits hex),
#: counts written one base-36 digit each; recorded from the code before issue 54.
RECORDED = {
    ("three rows", "prior"): ("2222222222110033332221322233321011322222",
                              "1000000002101011001001210010011110310000", "e8"),
    ("three rows", "data"): ("1112222131111133444333322220000123222321",
                             "0001000122000020122100010002000111122111", "e0"),
    ("four rows", "prior"): ("1020132110001111222331130000103100012110",
                             "0111121101001011213102122000113210012121", ""),
    ("four rows", "data"): ("1122211000000000223222111110000000000000",
                            "0212010100000000221120102001000000000000", ""),
    ("digits, sigma_x 0.25", "prior"): (
        "888888888888", "000000000000",
        "303030303030830203040304154545450000010101410101020212020212010421000101501050101010"
        "808980808080040485000400200201012122"),
    ("digits, sigma_x 0.25", "data"): (
        "iffedddeddee", "a32110013010",
        "30000403000c00010004000002000600200008020000212804a012800000010020008002010800000080"
        "040010034041000410500020020202000000000080100040010004001000600800200080020008002000"
        "080000088200000800000200010402000800200800"),
    ("digits, sigma_x 1", "prior"): ("200112210001", "820101221001", "8000000000000000"),
    ("digits, sigma_x 1", "data"): ("432111000001", "411100100001", "0000008000000000"),
}


# --------------------------------------------------------------------------------------
# the slow reference path
# --------------------------------------------------------------------------------------


def _accepts(log_ratio, rng):
    """Metropolis-Hastings: a uniform only when the ratio is below one."""
    return log_ratio >= 0 or rng.random() < math.exp(log_ratio)


def reference_data_births(Z, A, resid, rate, sigma_x, sigma_a, rng):
    """Step 2 with ``births="data"`` written plainly: per row a uniform for birth or death;
    a birth's ratio (a uniform if below one), then its image, ``D`` normals at once; a
    death's singleton by a uniform, then its ratio. ``resid`` is updated in place; returns
    ``(keep, born_rows, born_images, n_accepted)``."""
    N, D = resid.shape
    singletons = (Z == 1) & (Z.sum(axis=0) == 1)  # before the step: rows do not interact
    sx2, sa2 = sigma_x**2, sigma_a**2
    shrink, tau = sa2 / (sa2 + sx2), math.sqrt(sa2 * sx2 / (sa2 + sx2))
    log_rate = math.log(rate)
    keep, born_rows, born_images, accepted = np.ones(Z.shape[1], bool), [], [], 0
    for n in range(N):
        own = np.flatnonzero(singletons[n])
        if rng.random() < 0.5:
            log_r = uncollapsed.data_birth_log_ratio(float(resid[n] @ resid[n]), own.size,
                                                     log_rate, sigma_x, sigma_a, D)
            if _accepts(log_r, rng):
                image = rng.normal(shrink * resid[n], tau)
                resid[n] -= image
                born_rows.append(n)
                born_images.append(image)
                accepted += 1
        elif own.size:
            j = own[min(int(rng.random() * own.size), own.size - 1)]
            without = resid[n] + A[j]
            log_r = -uncollapsed.data_birth_log_ratio(float(without @ without), own.size - 1,
                                                      log_rate, sigma_x, sigma_a, D)
            if _accepts(log_r, rng):
                keep[j] = False
                resid[n] = without
                accepted += 1
    images = np.array(born_images).reshape(len(born_rows), D)
    return keep, np.array(born_rows, np.int64), images, accepted


def _with_births(Z, A, keep, born_rows, born_images):
    """``Z`` and ``A`` without the dead columns, one new column per born feature."""
    born = np.zeros((Z.shape[0], born_rows.size), np.int8)
    born[born_rows, np.arange(born_rows.size)] = 1
    return np.hstack([Z[:, keep], born]), np.vstack([A[keep], born_images])


def reference_sweep(X, Z, A, hyper, rng, births):
    """One sweep with the births in plain Python (the shared entries and ``A`` as in the
    sampler: they are not the births)."""
    N = X.shape[0]
    Z = np.ascontiguousarray(Z, np.int8)
    resid = X - Z @ A
    m = Z.sum(axis=0).astype(np.int64)
    uncollapsed.flip_shared_features(Z, A, resid, m, _kernel.prior_log_odds_table(N, hyper.beta),
                                     2.0 * hyper.sigma_x**2, rng)
    rate = new_dish_rate(hyper.alpha, hyper.beta, N - 1)
    if births == "data":
        *born, accepted = reference_data_births(Z, A, resid, rate, hyper.sigma_x,
                                                hyper.sigma_a, rng)
        Z, A = _with_births(Z, A, *born)
    else:
        Z, A, accepted = uncollapsed._gaussian_births(Z, A, resid, hyper.sigma_x,
                                                      hyper.sigma_a, rate, rng)
    Z = Z[:, Z.any(axis=0)]
    return Z, _kernel.draw_posterior_features(X, Z, hyper.sigma_x, hyper.sigma_a, rng), accepted


def _reference_hooks(X, hyper):
    """The trace as before issue 54: the public class prior, ``np.unique`` and all."""
    sum_sq = float(np.sum(X * X))

    def start(Z, rng):
        return _kernel.draw_posterior_features(X, Z, hyper.sigma_x, hyper.sigma_a, rng)

    def measure(Z, A):
        ztz, ztx = _kernel.sufficient_stats(X, Z)
        log_lik = _kernel.checked_loglik_from_stats(ztz, ztx, sum_sq, *X.shape, hyper.sigma_x,
                                                    hyper.sigma_a)
        return log_lik, log_lik + log_prior(Z, hyper.alpha, beta=hyper.beta)
    return start, measure


@single_blas_thread
def reference_run(X, n_sweeps, rng, births, *, alpha, sigma_x, sigma_a, beta=1.0, Z0=None,
                  burn=0, thin=1):
    """``run_uncollapsed`` through :func:`reference_sweep` and the reference trace."""
    X, n_sweeps, rng, hyper, Z0, burn, thin = uncollapsed.check_run(
        X, n_sweeps, rng, alpha, sigma_x, sigma_a, beta, Z0, burn, thin)

    def sweep(*state):
        return reference_sweep(*state, births)
    return uncollapsed.run_kernel(sweep, X, n_sweeps, rng, hyper, Z0, burn, thin,
                                  "births_accepted", "reference", hooks=_reference_hooks(X, hyper))


# --------------------------------------------------------------------------------------
# the tests
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [1e-3, 0.3, 4.0, 40.0])  # few births and many deaths, and back
def test_compiled_data_births_make_the_reference_draws(rate):
    """The compiled data-driven births and :func:`reference_data_births` make the same
    draws from the same generator: the same deaths, births and images, the residuals
    (to rounding), the count, and the generator left in the same state."""
    rng = np.random.default_rng(154)
    for case in range(40):
        N, D, K = rng.integers(1, 7), rng.integers(1, 5), rng.integers(0, 6)
        X = rng.normal(size=(N, D))
        Z = (rng.random((N, K)) < 0.3).astype(np.int8)
        A = rng.normal(size=(K, D))
        sigma_x, sigma_a = rng.uniform(0.3, 2.0, size=2)
        resid_ref, resid = X - Z @ A, X - Z @ A
        ref_rng, rng_c = np.random.default_rng(case), np.random.default_rng(case)
        expected = reference_data_births(Z, A, resid_ref, rate, sigma_x, sigma_a, ref_rng)
        got = uncollapsed._gaussian_data_births_kernel(Z, A, resid, rate, sigma_x, sigma_a,
                                                       rng_c)
        for value, reference in zip(got[:3], expected[:3]):
            np.testing.assert_array_equal(value, reference)
        assert got[3] == expected[3]
        np.testing.assert_allclose(resid, resid_ref, rtol=0, atol=1e-12)  # summation order
        assert rng_c.random() == ref_rng.random()


def _run_both(case, births):
    X, n_sweeps, hyper = CASES[case]()
    options = dict(burn=2, thin=3, **hyper)
    run = uncollapsed.run_uncollapsed(X, n_sweeps, np.random.default_rng(54), births=births,
                                      **options)
    return run, reference_run(X, n_sweeps, np.random.default_rng(54), births, **options)


@pytest.mark.parametrize("births", BIRTH_RULES)
@pytest.mark.parametrize("case", list(CASES))
def test_runner_makes_the_reference_paths_chain_draw_for_draw(case, births):
    run, reference = _run_both(case, births)
    np.testing.assert_array_equal(run.Z, reference.Z)
    np.testing.assert_array_equal(run.A, reference.A)
    assert len(run.samples) == len(reference.samples)
    for Z, Z_ref in zip(run.samples, reference.samples):
        np.testing.assert_array_equal(Z, Z_ref)
    for name in ("k_plus", "log_likelihood"):
        np.testing.assert_array_equal(run.trace[name].values, reference.trace[name].values)
    np.testing.assert_array_equal(run.sample_stats["births_accepted"].values,
                                  reference.sample_stats["births_accepted"].values)
    # the compiled class prior sums in another order: equal to rounding, not bit for bit
    np.testing.assert_allclose(run.trace["log_joint"].values,
                               reference.trace["log_joint"].values, rtol=1e-12, atol=0)


def _base36(counts):
    return "".join(np.base_repr(int(c), 36).lower() for c in counts)


@pytest.mark.parametrize("births", BIRTH_RULES)
@pytest.mark.parametrize("case", list(CASES))
def test_runner_makes_the_draws_recorded_before_issue_54(case, births):
    X, n_sweeps, hyper = CASES[case]()
    run = uncollapsed.run_uncollapsed(X, n_sweeps, np.random.default_rng(54), births=births,
                                      burn=2, thin=3, **hyper)
    k_plus, accepted, packed_Z = RECORDED[case, births]
    assert _base36(run.trace["k_plus"].values) == k_plus
    assert _base36(run.sample_stats["births_accepted"].values) == accepted
    assert run.Z.shape == (X.shape[0], run.trace["k_plus"].values[-1])
    assert np.packbits(run.Z).tobytes().hex() == packed_Z


def test_recorded_draws_cover_births_and_deaths():
    """The recorded cases are not idle: each rule accepts births in every case but the
    digits at sigma_x 0.25 with prior births, and K+ falls as well as rises."""
    for (case, births), (k_plus, accepted, _) in RECORDED.items():
        if (case, births) != ("digits, sigma_x 0.25", "prior"):
            assert set(accepted) != {"0"}, (case, births)
    changes = {np.sign(int(b, 36) - int(a, 36))
               for k_plus, _, _ in RECORDED.values() for a, b in zip(k_plus, k_plus[1:])}
    assert changes == {-1, 0, 1}
