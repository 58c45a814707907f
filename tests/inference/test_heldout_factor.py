"""finite_factor_logpdf: the weights integrated out, the patterns summed, checked directly."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import multivariate_normal, norm

from ibp_lab.inference.heldout import finite_factor_logpdf


def test_one_known_feature_against_quadrature_over_the_weight():
    """s = 0, owned with probability 0.7: p(x) = 0.3 N(x; 0, sx^2 I)
    + 0.7 int N(w; 0, sw^2) N(x; w mu, sx^2 I) dw, the integral by quadrature."""
    mu, x, sx, sw = np.array([0.8, -1.1]), np.array([0.4, -0.9]), 0.6, 1.3
    owned = integrate.quad(lambda w: norm.pdf(w, 0, sw)
                           * np.prod(norm.pdf(x, w * mu, sx)), -12, 12, epsabs=1e-13)[0]
    want = np.log(0.3 * np.prod(norm.pdf(x, 0, sx)) + 0.7 * owned)
    got = finite_factor_logpdf(x[None], [0.7], mu[None], sigma_x=sx, sigma_w=sw)[0]
    assert got == pytest.approx(want, rel=1e-9)


def test_patterns_against_dense_gaussians():
    """Three features with variances: the Woodbury form against a dense covariance per
    pattern, summed over the eight patterns by brute force."""
    rng = np.random.default_rng(4)
    K, D = 3, 5
    mu, s = rng.normal(size=(K, D)), rng.uniform(0, 0.3, K)
    p, X = rng.uniform(0.1, 0.9, K), rng.normal(size=(4, D))
    sx, sw = 0.7, 1.2
    dense = []
    for z in itertools.product([0, 1], repeat=K):
        z = np.array(z, bool)
        cov = sw**2 * (mu[z].T @ mu[z] + s[z].sum() * np.eye(D)) + sx**2 * np.eye(D)
        prior = np.prod(np.where(z, p, 1 - p))
        dense.append(prior * multivariate_normal(np.zeros(D), cov).pdf(X))
    want = np.log(np.sum(dense, axis=0))
    got = finite_factor_logpdf(X, p, mu, sigma_x=sx, sigma_w=sw, feature_variances=s)
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("kwargs, match", [
    (dict(probabilities=[1.5]), "probabilities"),
    (dict(probabilities=np.full(17, 0.5), features=np.ones((17, 2))), "1 to 16"),
    (dict(features=np.ones((1, 3))), "features"),
    (dict(feature_variances=[-1.0]), "feature_variances"),
    (dict(sigma_w=0.0), "sigma_w"),
])
def test_bad_input_is_refused_by_name(kwargs, match):
    args = dict(X=np.ones((2, 2)), probabilities=[0.5], features=np.ones((1, 2)),
                sigma_x=1.0, sigma_w=1.0)
    with pytest.raises(ValueError, match=match):
        finite_factor_logpdf(**dict(args, **kwargs))
