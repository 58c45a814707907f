"""Seeded runs of the chain runner, replica exchange and SMC against outputs saved before
they took moves (issue 49) and before run_chain recorded its log prior through the
compiled class prior (issue 54), and before the hyperparameter updates became moves (issue
49): the default moves must give the same draws, bit for bit, and a chain's moves on the
hyperparameters the draws of the keywords they replaced (``update_alpha``, ``alpha_prior``,
``update_sigma_a``, ``update_sigma_x``, ``n_scale_steps``, ``update_discount``,
``discount_prior``: each entry's comment names the old call).

The integers (every ``K+`` of every trace, every state of ``Z``, resampling steps,
restarts) are compared exactly, through a SHA-256 digest; the floats that the draws
determine (final hyperparameters, log evidence, the tuned ladder) to a relative 1e-12,
which allows another BLAS's rounding but no different draw. The digests were computed
with the code of commit 8639063 (``DIGESTS`` below), the last four chains' with that of
commit e81f696, the last before the moves on the hyperparameters.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from ibp_lab.inference import chains, smc, tempering
from ibp_lab.models.linear_gaussian import simulate

X3 = np.array([[1.2, -0.3], [1.0, 0.1], [-0.4, 0.8]])
XB = np.array([[1.1, -0.6, 0.3], [0.9, -0.4, 0.4], [0.2, 1.0, -0.8]])
TINY = dict(alpha=1.3, sigma_x=0.6, sigma_a=1.2)


def _simulated():
    X, _, _ = simulate(30, np.random.default_rng(0), alpha=2.0, sigma_x=0.3, sigma_a=1.0, d=6)
    return X


def digest(*arrays) -> str:
    """SHA-256 (first 16 hex digits) of integer arrays: their shapes and values."""
    sha = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array, dtype=np.int64)
        sha.update(str(array.shape).encode())
        sha.update(array.tobytes())
    return sha.hexdigest()[:16]


CHAINS = {
    # update_sigma_x=True, beta=1.7, alpha_prior=(2.0, 0.5)
    "alpha, sigma_a, sigma_x": dict(sigma_x=0.3, beta=1.7, moves=[
        chains.GibbsSweep(), chains.AlphaUpdate(prior=(2.0, 0.5)),
        chains.ScaleUpdate("sigma_a", "sigma_x")]),
    # discount=0.2, update_discount=True, burn=5
    "discount learned": dict(sigma_x=0.3, discount=0.2, burn=5, moves=[
        chains.GibbsSweep(), chains.AlphaUpdate(), chains.DiscountUpdate(),
        chains.ScaleUpdate("sigma_a")]),
    # pointwise=True, moves=[GibbsSweep(), SequentialSplitMerge(n_proposals=3)]
    "gibbs + sequential": dict(sigma_x=0.3, pointwise=True, moves=[
        chains.GibbsSweep(), chains.SequentialSplitMerge(n_proposals=3), chains.AlphaUpdate(),
        chains.ScaleUpdate("sigma_a")]),
    # update_alpha=False, moves=[SingletonUpdate(), RandomSplitMerge(n_proposals=3)]
    "singletons + random": dict(sigma_x=0.3, moves=[
        chains.SingletonUpdate(), chains.RandomSplitMerge(n_proposals=3),
        chains.ScaleUpdate("sigma_a")]),
    # update_sigma_a=False, update_sigma_x=True, n_scale_steps=1, burn=10
    "sigma_x alone, one step": dict(sigma_x=0.3, burn=10, moves=[
        chains.GibbsSweep(), chains.AlphaUpdate(), chains.ScaleUpdate("sigma_x", n_steps=1)]),
    # update_alpha=False, update_discount=True, discount_prior=(2.0, 3.0)
    "discount learned from its prior's mean, alpha fixed": dict(sigma_x=0.3, moves=[
        chains.GibbsSweep(), chains.DiscountUpdate(prior=(2.0, 3.0)),
        chains.ScaleUpdate("sigma_a")]),
    # update_alpha=False, update_sigma_a=False
    "fixed hyperparameters": dict(sigma_x=0.3, moves=[chains.GibbsSweep()]),
    # no moves= nor updates: the defaults
    "defaults": dict(sigma_x=0.3),
}


def chain_record(options):
    run = chains.run_chain(_simulated(), 40, np.random.default_rng(11), **options)
    floats = [run.alpha, run.sigma_a, run.sigma_x, float(run.trace["alpha"].values.sum())]
    return digest(run.trace["k_plus"].values, *run.samples, run.Z), floats


def tempered_record(name):
    if name == "tiny, deo":
        run = tempering.run_tempered(X3, 300, np.random.default_rng(0), **TINY,
                                     n_temperatures=4, burn=100)
    else:
        run = tempering.run_tempered(_simulated(), 60, np.random.default_rng(1), alpha=2.0,
                                     sigma_x=0.3, sigma_a=1.0, beta=1.5, n_temperatures=5,
                                     burn=40, swap_scheme="seo", workers=2)
    ints = digest(run.replica_trace["k_plus"].values, *run.states, [run.restarts])
    return ints, list(run.inverse_temperatures) + list(np.nan_to_num(run.swap_acceptance))


def smc_record(name):
    if name.startswith("tiny"):
        threshold = float(name.split()[-1])
        run = smc.run_smc(X3, 30, np.random.default_rng(7), **TINY, n_temperatures=10,
                          ess_threshold=threshold)
    elif name == "beta 0.6, two sweeps, always":
        run = smc.run_smc(XB, 30, np.random.default_rng(8), alpha=1.0, sigma_x=0.3,
                          sigma_a=1.0, beta=0.6, n_temperatures=10, n_sweeps=2,
                          ess_threshold=1.0)
    else:
        run = smc.run_smc(_simulated(), 20, np.random.default_rng(9), alpha=2.0, sigma_x=0.3,
                          sigma_a=1.0, n_temperatures=15)
    return digest(run.k_plus, *run.states, run.resampled), [run.log_evidence]


#: name -> (digest of the integers, the floats), from commit 8639063.
DIGESTS = {
    "chain alpha, sigma_a, sigma_x": (
        "50a67391b1405bd6", [1.9706131652991246, 0.8667057836558293, 0.3260765780465971,
                             102.82742598724838]),
    "chain discount learned": (
        "3cd1d3c5becddaa4", [2.4989202320956374, 0.819305815779406, 0.3, 113.8009437234409]),
    "chain gibbs + sequential": (
        "4b9b558cfd591269", [2.3525156352838743, 1.1464895038482392, 0.3, 116.13411319658417]),
    "chain singletons + random": (
        "445b174291f5dbb5", [1.0, 1.294633958370903, 0.3, 40.0]),
    # from commit e81f696
    "chain sigma_x alone, one step": (
        "00aa0e7425a01083", [1.7665582602201266, 1.0, 0.2736426150768236, 126.23823158639794]),
    "chain discount learned from its prior's mean, alpha fixed": (
        "055f712fb1e5ca6f", [1.0, 1.0179025136959017, 0.3, 40.0]),
    "chain fixed hyperparameters": (
        "26436b703884a568", [1.0, 1.0, 0.3, 40.0]),
    "chain defaults": (
        "ea46eddd7e2a0b58", [3.2560175662749704, 1.0950089395605556, 0.3, 129.2401321562641]),
    "tempered tiny, deo": (
        "0b926eb40bcb2d53", [1.0, 0.6424228237463757, 0.275376478740025, 0.01, 0.8, 0.85, 0.88]),
    "tempered simulated, seo, two workers": (
        "a151f64309ad1720", [1.0, 0.328745039592481, 0.1077571577364281, 0.03221945417701208,
                             0.01, 0.0, 0.0, 0.0, 0.0]),
    "smc tiny 0.0": (
        "bb2408250209b193", [-8.059952709427364]),
    "smc tiny 0.5": (
        "bb2408250209b193", [-8.059952709427364]),
    "smc tiny 1.0": (
        "9a8263f377a0c33c", [-7.9996213469976345]),
    "smc beta 0.6, two sweeps, always": (
        "49a4305093002e1b", [-10.70451039717397]),
    "smc simulated": (
        "fb78b3a58d9cd405", [-299.49586808504256]),
}


def _check(name, record):
    ints, floats = record
    saved_ints, saved_floats = DIGESTS[name]
    assert ints == saved_ints, f"{name}: the draws differ from the saved ones"
    np.testing.assert_allclose(floats, saved_floats, rtol=1e-12)


@pytest.mark.parametrize("name", list(CHAINS))
def test_run_chain_draws_what_it_drew_before(name):
    _check(f"chain {name}", chain_record(CHAINS[name]))


@pytest.mark.parametrize("name", ["tiny, deo", "simulated, seo, two workers"])
def test_run_tempered_with_the_default_moves_draws_what_it_drew_before(name):
    _check(f"tempered {name}", tempered_record(name))


@pytest.mark.parametrize("name", ["tiny 0.0", "tiny 0.5", "tiny 1.0",
                                  "beta 0.6, two sweeps, always", "simulated"])
def test_run_smc_with_the_default_moves_draws_what_it_drew_before(name):
    _check(f"smc {name}", smc_record(name))


def test_the_default_moves_are_one_gibbs_sweep_named_or_not():
    """``moves=None``, ``"gibbs_sweep"`` and ``[GibbsSweep()]`` are one run, in both wrappers."""
    runs = [tempering.run_tempered(X3, 50, np.random.default_rng(2), **TINY, n_temperatures=3,
                                   **({} if moves is None else {"moves": moves}))
            for moves in (None, "gibbs_sweep", [chains.GibbsSweep()])]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.replica_trace["k_plus"], runs[0].replica_trace["k_plus"])
    particles = [smc.run_smc(X3, 10, np.random.default_rng(3), **TINY, n_temperatures=5,
                             n_sweeps=2, **({} if moves is None else {"moves": moves}))
                 for moves in (None, "gibbs_sweep", [chains.GibbsSweep()])]
    for run in particles[1:]:
        assert run.log_evidence == particles[0].log_evidence
        assert digest(*run.states) == digest(*particles[0].states)
