"""The hostile-input campaign, in the suite: every public function, every case in a forked child.

One test per public function checks all of that function's cases (``tests/robust_inputs.py``),
each run by the harness (``tests/campaign.py``: a forked child with a time limit and an
address-space limit), and fails naming every case whose verdict is a failure. The cases
of a spec group run together in a fresh process (``tools/campaign.py --group``) that
imports only what the group needs: forking the test process itself, which holds the
whole suite, costs about 0.13 s per case. Failures
known to be still present are listed in :data:`KNOWN`; they are left out of the
per-function test and run one by one as ``xfail(strict=True)``, so that a fix turns them
into a failure here and the entry is removed.

Property-based cases (hypothesis) feed random data matrices to the functions that take
data, through the same harness. They are derandomised in ``make test`` (profile "ci");
``HYPOTHESIS_PROFILE=explore`` searches with fresh randomness and more examples.

Outside pytest, ``tools/campaign.py`` prints the counts per function and per verdict.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robust_inputs
from campaign import PASSES, Case, run_case

SPECS = robust_inputs.all_specs()
CASES = {spec.function: robust_inputs.spec_cases(spec) for spec in SPECS}
GROUP_OF = {spec.function: spec.group for spec in SPECS}
TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")

#: Failures still present at the last run: case id -> "<failure class>: <short>". Each
#: is an xfail(strict=True) below; remove an entry when its module is fixed.
#: Written by ``tools/campaign.py --write-known``.
KNOWN: dict[str, str] = {
    'datasets.simulate_four_feature_data[n=huge]': 'unnamed_error: message does not name n: ValueError: X would need about 3.6e+13 entries, more than the lim',
    'exact.enumerate_classes[n_rows=huge]': 'unnamed_error: message does not name n_rows: ValueError: X must have at most 4 rows for exact enumeration',
    'gibbs.run_chain[n_scale_steps=zero]': "bad_result: result['acceptance']['sigma_a'] holds NaN",
    'heldout.compare_heldout[results=empty dict]': "unnamed_error: message does not name results: ValueError: reference must be one of [], got 'b'",
    'heldout.finite_feature_heldout[features=2-D]': 'accepted_junk: returned HeldoutResult: HeldoutResult(log_density=array([-5.39745521, -3.5057961 , -1.2974',
    'heldout.finite_feature_heldout[probabilities=no rows]': 'unnamed_error: message does not name probabilities: ValueError: features must have shape (0, 2, 4), got (',
    'heldout.gaussian_conditional[cov asymmetric]': 'accepted_junk: returned tuple: (array([[0., 0.], [0., 0.], [0., 0.]]), array([[2., 1.], [1., 2.]]))',
    'heldout.ibp_gibbs_heldout[X_test=1-D row]': 'unnamed_error: message does not name X_test: ValueError: X must be 2-D (rows x dimensions), got 1 dimensi',
    'heldout.ibp_gibbs_heldout[X_test=3-D]': 'unnamed_error: message does not name X_test: ValueError: X must be 2-D (rows x dimensions), got 3 dimensi',
    'heldout.ibp_gibbs_heldout[X_test=None]': 'unnamed_error: message does not name X_test: TypeError: X must hold real numbers, got dtype object',
    'heldout.ibp_gibbs_heldout[X_test=complex]': 'unnamed_error: message does not name X_test: TypeError: X must hold real numbers, got dtype complex128',
    'heldout.ibp_gibbs_heldout[X_test=huge]': 'unnamed_error: message does not name X_test: ValueError: X is too large for a density (max |x| = 1.91e+20',
    'heldout.ibp_gibbs_heldout[X_test=inf entry]': 'unnamed_error: message does not name X_test: ValueError: X must be finite: found 1 NaN or infinite value(',
    'heldout.ibp_gibbs_heldout[X_test=nan entry]': 'unnamed_error: message does not name X_test: ValueError: X must be finite: found 1 NaN or infinite value(',
    'heldout.ibp_gibbs_heldout[X_test=no columns]': 'unnamed_error: message does not name X_test: ValueError: X must have at least 1 row(s) and 1 column, got ',
    'heldout.ibp_gibbs_heldout[X_test=no rows]': 'unnamed_error: message does not name X_test: ValueError: X must have at least 1 row(s) and 1 column, got ',
    'heldout.ibp_gibbs_heldout[X_test=numeric strings]': 'unnamed_error: message does not name X_test: TypeError: X must hold real numbers, got dtype <U32',
    'heldout.ibp_gibbs_heldout[X_test=object]': 'unnamed_error: message does not name X_test: TypeError: X must hold real numbers, got dtype object',
    'heldout.ibp_gibbs_heldout[X_test=ragged]': 'unnamed_error: message does not name X_test: TypeError: X must be an array of real numbers, got list',
    'heldout.ibp_gibbs_heldout[X_test=str]': 'unnamed_error: message does not name X_test: TypeError: X must be an array of real numbers, got str',
    'heldout.ibp_gibbs_heldout[X_train=huge]': 'unnamed_error: message does not name X_train/samples: ValueError: X is too large for sigma_x = 0.5: sum((',
    'heldout.ibp_gibbs_heldout[n_sweeps=huge]': 'unnamed_error: message does not name n_sweeps: ValueError: draws x kept sweeps x digits = 1 x 99999999999',
    'heldout.split_top_bottom[shape=None]': "unnamed_error: message does not name shape: TypeError: object of type 'NoneType' has no len()",
    'plotting.buffet_explorer_figure[n_draws=huge]': 'unnamed_error: message does not name n_draws: ValueError: the draws would need about 5e+12 entries, more ',
    'plotting.chain_traces_figure[chains=None]': "unnamed_error: message does not name chains: TypeError: 'NoneType' object is not iterable",
    'plotting.chain_traces_figure[chains=empty]': 'crash: IndexError: list index out of range at chains.py:66',
    'plotting.chain_traces_figure[chains=int]': "unnamed_error: message does not name chains: TypeError: 'int' object is not iterable",
    'plotting.chain_traces_figure[chains=list of None]': "crash: AttributeError: 'NoneType' object has no attribute 'trace' at chains.py:60",
    'plotting.chain_traces_figure[chains=one chain]': "unnamed_error: message does not name chains: TypeError: 'ChainResult' object is not iterable",
    'plotting.chain_traces_figure[chains=str]': "crash: AttributeError: 'str' object has no attribute 'trace' at chains.py:60",
    'plotting.chain_traces_figure[labels=str]': 'accepted_junk: returned Figure: <Figure size 1100x360 with 2 Axes>',
    'plotting.chain_traces_figure[labels=too few]': 'accepted_junk: returned Figure: <Figure size 1100x360 with 2 Axes>',
    'plotting.co_ownership_figure[labels=None]': 'crash: IndexError: too many indices for array: array is 0-dimensional, but 1 were indexed at chai',
    'plotting.co_ownership_figure[labels=too short]': 'accepted_junk: returned Figure: <Figure size 540x440 with 2 Axes>',
    'plotting.co_ownership_figure[matrices=None]': "crash: AttributeError: 'NoneType' object has no attribute 'values' at chains.py:110",
    'plotting.co_ownership_figure[matrices=empty]': 'unnamed_error: message does not name matrices: ValueError: max() arg is an empty sequence',
    'plotting.co_ownership_figure[matrices=nan values]': 'accepted_junk: returned Figure: <Figure size 540x440 with 2 Axes>',
    'plotting.co_ownership_figure[matrices=str]': "crash: AttributeError: 'str' object has no attribute 'values' at chains.py:110",
    'plotting.co_ownership_figure[vmax=array]': 'unnamed_error: message does not name vmax: ValueError: can only convert an array of size 1 to a Python sc',
    'plotting.co_ownership_figure[vmax=bool]': 'accepted_junk: returned Figure: <Figure size 540x440 with 2 Axes>',
    'plotting.co_ownership_figure[vmax=complex]': 'unnamed_error: message does not name vmax: TypeError: float() argument must be a string or a real number,',
    'plotting.co_ownership_figure[vmax=inf]': 'accepted_junk: returned Figure: <Figure size 540x440 with 2 Axes>',
    'plotting.co_ownership_figure[vmax=nan]': 'accepted_junk: returned Figure: <Figure size 540x440 with 2 Axes>',
    'plotting.co_ownership_figure[vmax=negative]': 'accepted_junk: returned Figure: <Figure size 540x440 with 2 Axes>',
    'plotting.co_ownership_figure[vmax=str]': 'accepted_junk: returned Figure: <Figure size 540x440 with 2 Axes>',
    'plotting.co_ownership_figure[vmax=zero]': 'accepted_junk: returned Figure: <Figure size 540x440 with 2 Axes>',
    'plotting.feature_owners_figure[A=1-D row]': 'unnamed_error: message does not name A: ValueError: cannot reshape array of size 1 into shape (2,2)',
    'plotting.feature_owners_figure[A=3-D]': 'crash: IndexError: index 1 is out of bounds for axis 0 with size 1 at chains.py:176',
    'plotting.feature_owners_figure[A=inf entry]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[A=nan entry]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[A=no columns]': 'unnamed_error: message does not name A: ValueError: zero-size array to reduction operation maximum which ',
    'plotting.feature_owners_figure[A=no rows]': 'crash: IndexError: index 0 is out of bounds for axis 0 with size 0 at chains.py:176',
    'plotting.feature_owners_figure[A=one row]': 'crash: IndexError: index 1 is out of bounds for axis 0 with size 1 at chains.py:176',
    'plotting.feature_owners_figure[Z=1-D]': 'crash: IndexError: too many indices for array: array is 1-dimensional, but 2 were indexed at chai',
    'plotting.feature_owners_figure[Z=no columns]': 'unnamed_error: message does not name Z: ValueError: zero-size array to reduction operation maximum which ',
    'plotting.feature_owners_figure[Z=numeric strings]': 'unnamed_error: message does not name Z: TypeError: the resolved dtypes are not compatible with add.reduce',
    'plotting.feature_owners_figure[Z=str]': 'unnamed_error: message does not name Z: TypeError: the resolved dtypes are not compatible with add.reduce',
    'plotting.feature_owners_figure[min_share=above one]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[min_share=bool]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[min_share=complex]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[min_share=nan]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[min_share=negative]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[min_share=str]': "unnamed_error: message does not name min_share: UFuncTypeError: ufunc 'greater' did not contain a loop wi",
    'plotting.feature_owners_figure[ncols=bool]': 'accepted_junk: returned Figure: <Figure size 175x470 with 4 Axes>',
    'plotting.feature_owners_figure[ncols=float]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[ncols=nan]': 'accepted_junk: returned Figure: <Figure size 175x470 with 4 Axes>',
    'plotting.feature_owners_figure[ncols=negative]': 'accepted_junk: returned Figure: <Figure size 175x470 with 4 Axes>',
    'plotting.feature_owners_figure[ncols=str]': "unnamed_error: message does not name ncols: TypeError: '<' not supported between instances of 'int' and '",
    'plotting.feature_owners_figure[scale=array]': 'unnamed_error: message does not name scale: ValueError: The truth value of an array with more than one el',
    'plotting.feature_owners_figure[scale=bool]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[scale=complex]': 'unnamed_error: message does not name scale: TypeError: float() argument must be a string or a real number',
    'plotting.feature_owners_figure[scale=inf]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[scale=nan]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[scale=negative]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[scale=str]': "unnamed_error: message does not name scale: TypeError: bad operand type for unary -: 'str'",
    'plotting.feature_owners_figure[scale=zero]': 'accepted_junk: returned Figure: <Figure size 290x315 with 4 Axes>',
    'plotting.feature_owners_figure[shape=bool]': 'unnamed_error: message does not name shape: TypeError: an integer is required',
    'plotting.feature_owners_figure[shape=float]': "unnamed_error: message does not name shape: TypeError: 'float' object cannot be interpreted as an integer",
    'plotting.feature_owners_figure[shape=str]': "unnamed_error: message does not name shape: TypeError: 'str' object cannot be interpreted as an integer",
    'plotting.free_fit_figure[trace=None]': "crash: AttributeError: 'NoneType' object has no attribute 'sizes' at gibbs.py:184",
    'plotting.free_fit_figure[trace=missing variable]': "crash: AttributeError: 'Dataset' object has no attribute 'alpha' at common.py:306",
    'plotting.free_fit_figure[trace=str]': "crash: AttributeError: 'str' object has no attribute 'sizes' at gibbs.py:184",
    'plotting.k_plus_check_figure[frequencies=None]': "unnamed_error: message does not name frequencies: TypeError: object of type 'NoneType' has no len()",
    'plotting.k_plus_check_figure[frequencies=empty]': 'accepted_junk: returned Figure: <Figure size 1000x340 with 2 Axes>',
    'plotting.k_plus_check_figure[frequencies=nan values]': 'accepted_junk: returned Figure: <Figure size 1000x340 with 2 Axes>',
    'plotting.k_plus_check_figure[frequencies=str]': "crash: AttributeError: 'str' object has no attribute 'items' at gibbs.py:147",
    'plotting.k_plus_check_figure[k_show -1]': 'accepted_junk: returned Figure: <Figure size 1000x340 with 2 Axes>',
    'plotting.k_plus_check_figure[k_show 1e9]': 'memory: MemoryError: Unable to allocate 7.45 GiB for an array with shape (1000000001,) and data ty',
    'plotting.k_plus_check_figure[p_exact negative]': 'accepted_junk: returned Figure: <Figure size 1000x340 with 2 Axes>',
    'plotting.k_plus_check_figure[p_exact=2-D]': 'unnamed_error: message does not name p_exact: ValueError: shape mismatch: objects cannot be broadcast to ',
    'plotting.k_plus_check_figure[p_exact=empty]': 'unnamed_error: message does not name p_exact: ValueError: zero-size array to reduction operation maximum ',
    'plotting.k_plus_check_figure[p_exact=nan entry]': 'accepted_junk: returned Figure: <Figure size 1000x340 with 2 Axes>',
    'plotting.marginals_figure[k_max=huge]': 'unnamed_error: message does not name k_max: ValueError: the table of marginals would need about 5e+12 ent',
    'plotting.marginals_figure[n=huge]': 'unnamed_error: message does not name n: ValueError: the table of marginals would need about 8e+12 entries',
    'plotting.plot_counts_vs_poisson[counts=huge]': "unnamed_error: message does not name counts: UFuncTypeError: Cannot cast ufunc 'subtract' input 0 from dt",
    'plotting.plot_counts_vs_poisson[mean=zero]': "accepted_junk: returned Axes: <Axes: ylabel='probability'>",
    'plotting.plot_feature_mosaic[gap 1e9]': 'memory: MemoryError: Unable to allocate 6.94 EiB for an array with shape (1000000004, 1000000004) ',
    'plotting.plot_feature_mosaic[gap=bool]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec77104390>',
    'plotting.plot_feature_mosaic[gap=float]': "unnamed_error: message does not name gap: TypeError: 'float' object cannot be interpreted as an integer",
    'plotting.plot_feature_mosaic[gap=huge]': 'unnamed_error: message does not name gap: ValueError: array is too big; `arr.size * arr.dtype.itemsize` i',
    'plotting.plot_feature_mosaic[gap=nan]': "unnamed_error: message does not name gap: TypeError: 'float' object cannot be interpreted as an integer",
    'plotting.plot_feature_mosaic[gap=negative]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec76f9de10>',
    'plotting.plot_feature_mosaic[gap=str]': "unnamed_error: message does not name gap: TypeError: unsupported operand type(s) for +: 'int' and 'str'",
    'plotting.plot_feature_mosaic[images=inf entry]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec770e9850>',
    'plotting.plot_feature_mosaic[images=nan entry]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec76fb7390>',
    'plotting.plot_feature_mosaic[ncols=bool]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec76fb2890>',
    'plotting.plot_feature_mosaic[ncols=float]': "unnamed_error: message does not name ncols: TypeError: 'float' object cannot be interpreted as an integer",
    'plotting.plot_feature_mosaic[ncols=nan]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec77104390>',
    'plotting.plot_feature_mosaic[ncols=negative]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec76fb3cd0>',
    'plotting.plot_feature_mosaic[ncols=str]': "unnamed_error: message does not name ncols: TypeError: '<' not supported between instances of 'int' and '",
    'plotting.plot_feature_mosaic[scale=array]': 'unnamed_error: message does not name scale: ValueError: The truth value of an array with more than one el',
    'plotting.plot_feature_mosaic[scale=bool]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec76fc1b90>',
    'plotting.plot_feature_mosaic[scale=complex]': 'unnamed_error: message does not name scale: TypeError: float() argument must be a string or a real number',
    'plotting.plot_feature_mosaic[scale=inf]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec770e9850>',
    'plotting.plot_feature_mosaic[scale=nan]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec77104390>',
    'plotting.plot_feature_mosaic[scale=negative]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec770e9850>',
    'plotting.plot_feature_mosaic[scale=str]': "unnamed_error: message does not name scale: TypeError: bad operand type for unary -: 'str'",
    'plotting.plot_feature_mosaic[scale=zero]': 'accepted_junk: returned AxesImage: <matplotlib.image.AxesImage object at 0x7fec770e9850>',
    'plotting.plot_feature_mosaic[shape=None]': 'unnamed_error: message does not name shape: TypeError: cannot unpack non-iterable NoneType object',
    'plotting.plot_feature_mosaic[shape=one number]': 'unnamed_error: message does not name shape: ValueError: not enough values to unpack (expected 2, got 1)',
    'plotting.plot_feature_mosaic[shape=str]': "unnamed_error: message does not name shape: TypeError: can't multiply sequence by non-int of type 'str'",
    'plotting.plot_feature_mosaic[shape=three numbers]': 'unnamed_error: message does not name shape: ValueError: too many values to unpack (expected 2)',
    'plotting.reappearance_figure[chain_labels=None]': "unnamed_error: message does not name chain_labels: TypeError: 'NoneType' object is not iterable",
    'plotting.reappearance_figure[chain_labels=too many]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[rates above 1]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[rates=3-D]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[rates=inf entry]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[rates=nan entry]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[rates=no rows]': 'unnamed_error: message does not name rates: ValueError: number sections must be larger than 0.',
    'plotting.reappearance_figure[threshold=array]': 'unnamed_error: message does not name threshold: TypeError: unsupported format string passed to numpy.ndar',
    'plotting.reappearance_figure[threshold=bool]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[threshold=complex]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[threshold=inf]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[threshold=nan]': 'accepted_junk: returned Figure: <Figure size 600x340 with 1 Axes>',
    'plotting.reappearance_figure[threshold=str]': "unnamed_error: message does not name threshold: ValueError: Unknown format code 'g' for object of type 's",
    'plotting.recovery_figure[A_found=1-D row]': 'unnamed_error: message does not name A_found: ValueError: cannot reshape array of size 1 into shape (2,2)',
    'plotting.recovery_figure[A_found=3-D]': 'crash: IndexError: index 1 is out of bounds for axis 0 with size 1 at gibbs.py:400',
    'plotting.recovery_figure[A_found=inf entry]': 'accepted_junk: returned Figure: <Figure size 300x340 with 4 Axes>',
    'plotting.recovery_figure[A_found=nan entry]': 'accepted_junk: returned Figure: <Figure size 300x340 with 4 Axes>',
    'plotting.recovery_figure[A_found=no columns]': 'unnamed_error: message does not name A_found: ValueError: cannot reshape array of size 0 into shape (2,2)',
    'plotting.recovery_figure[A_found=no rows]': 'crash: IndexError: index 1 is out of bounds for axis 0 with size 0 at gibbs.py:400',
    'plotting.recovery_figure[A_found=one row]': 'crash: IndexError: index 1 is out of bounds for axis 0 with size 1 at gibbs.py:400',
    'plotting.recovery_figure[A_true=1-D row]': 'unnamed_error: message does not name A_true: ValueError: cannot reshape array of size 1 into shape (2,2)',
    'plotting.recovery_figure[A_true=3-D]': 'unnamed_error: message does not name A_true: ValueError: n_ref must exceed every matched reference index,',
    'plotting.recovery_figure[A_true=inf entry]': 'accepted_junk: returned Figure: <Figure size 300x340 with 4 Axes>',
    'plotting.recovery_figure[A_true=nan entry]': 'accepted_junk: returned Figure: <Figure size 300x340 with 4 Axes>',
    'plotting.recovery_figure[A_true=no columns]': 'unnamed_error: message does not name A_true: ValueError: zero-size array to reduction operation maximum w',
    'plotting.recovery_figure[A_true=no rows]': 'unnamed_error: message does not name A_true: ValueError: zero-size array to reduction operation maximum w',
    'plotting.recovery_figure[A_true=one row]': 'unnamed_error: message does not name A_true: ValueError: n_ref must exceed every matched reference index,',
    'plotting.recovery_figure[match=None]': "crash: AttributeError: 'NoneType' object has no attribute 'index' at gibbs.py:385",
    'plotting.recovery_figure[match=str]': "crash: AttributeError: 'builtin_function_or_method' object has no attribute 'tolist' at gibbs.py:",
    'plotting.recovery_figure[shape=bool]': 'unnamed_error: message does not name shape: TypeError: an integer is required',
    'plotting.recovery_figure[shape=float]': "unnamed_error: message does not name shape: TypeError: 'float' object cannot be interpreted as an integer",
    'plotting.recovery_figure[shape=str]': "unnamed_error: message does not name shape: TypeError: 'str' object cannot be interpreted as an integer",
    'plotting.recursion_step_figure[alpha 1e4]': 'timeout: no answer within 10 s',
    'plotting.recursion_step_figure[n=huge]': 'unnamed_error: message does not name n: ValueError: the table of marginals would need about 2.13e+14 entr',
    'plotting.sensitivity_figure[by_alpha=None]': "crash: AttributeError: 'NoneType' object has no attribute 'values' at gibbs.py:226",
    'plotting.sensitivity_figure[by_alpha=empty]': 'unnamed_error: message does not name by_alpha: ValueError: List of boxplot statistics and `positions` val',
    'plotting.sensitivity_figure[by_alpha=markup key]': "unnamed_error: message does not name by_alpha: ValueError: Unknown format code 'g' for object of type 'st",
    'plotting.sensitivity_figure[by_alpha=nan values]': 'accepted_junk: returned Figure: <Figure size 1000x340 with 2 Axes>',
    'plotting.sensitivity_figure[by_alpha=str]': "crash: AttributeError: 'str' object has no attribute 'values' at gibbs.py:226",
    'plotting.sensitivity_figure[by_sigma_x=None]': "crash: AttributeError: 'NoneType' object has no attribute 'values' at gibbs.py:226",
    'plotting.sensitivity_figure[by_sigma_x=empty]': 'unnamed_error: message does not name by_sigma_x: ValueError: List of boxplot statistics and `positions` v',
    'plotting.sensitivity_figure[by_sigma_x=markup key]': "unnamed_error: message does not name by_sigma_x: ValueError: Unknown format code 'g' for object of type '",
    'plotting.sensitivity_figure[by_sigma_x=nan values]': 'accepted_junk: returned Figure: <Figure size 1000x340 with 2 Axes>',
    'plotting.sensitivity_figure[by_sigma_x=str]': "crash: AttributeError: 'str' object has no attribute 'values' at gibbs.py:226",
    'plotting.sensitivity_figure[n_rows -1]': 'unnamed_error: message does not name n_rows: ValueError: n must be an integer >= 0, got -1',
    'predictive_checks.ink_statistics[ink=3-D]': "accepted_junk: returned dict: {'share_blank': array([0.5]), 'share_negative': array([0.25]), 'digit_share",
    'prior.sample_finite_beta_bernoulli[n=huge]': 'unnamed_error: message does not name n: ValueError: Z would need about 4e+12 entries, more than the limit',
    'prior.sample_finite_beta_bernoulli[n_features=huge]': 'unnamed_error: message does not name n_features: ValueError: Z would need about 5e+12 entries, more than ',
    'prior.sample_stick_breaking[n=huge]': 'unnamed_error: message does not name n: ValueError: Z would need about 2e+13 entries, more than the limit',
    'prior.simulate_feature_counts[n_draws=huge]': 'unnamed_error: message does not name n_draws: ValueError: the draws would need about 5e+12 entries, more ',
    'prior.stick_truncation_level[tol=above one]': 'accepted_junk: returned int: 5',
    'pymc_models.build_model[n_features=huge]': 'timeout: no answer within 30 s',
    'pymc_models.initial_point_from_data[X=huge]': "bad_result: result['sigma_A'] holds inf",
    'pymc_models.initial_point_from_data[n_features=huge]': 'timeout: no answer within 10 s',
    'pymc_models.pattern_matrix[n_features=huge]': 'timeout: no answer within 10 s',
    'pymc_models.pattern_posterior[sigma_x 1e-100]': 'bad_result: does not sum to 1: [1. 1. 2.]',
    'pymc_models.sample_posterior[X=huge]': 'crash: SamplingError: Bad initial energy: SamplerWarning(kind=<WarningType.BAD_ENERGY: 8>, messag',
    'pymc_models.time_gradient[n_features=huge]': 'timeout: no answer within 30 s',
    'recursive.marginals[k_max 1e9]': 'unnamed_error: message does not name k_max: ValueError: the table of marginals would need about 4e+09 ent',
    'recursive.marginals[k_max=huge]': 'unnamed_error: message does not name k_max: ValueError: the table of marginals would need about 4e+12 ent',
    'recursive.marginals[n=huge]': 'unnamed_error: message does not name n: ValueError: the table of marginals would need about 6e+12 entries',
    'recursive.monte_carlo_agreement[estimate=3-D]': 'accepted_junk: returned Agreement: Agreement(n_entries=24, n_normal=0, worst_z=0.0, z_limit=4.09803812364',
    'recursive.monte_carlo_agreement[exact=3-D]': 'accepted_junk: returned Agreement: Agreement(n_entries=24, n_normal=0, worst_z=0.0, z_limit=4.09803812364',
    'recursive.monte_carlo_marginals[k_max=huge]': 'unnamed_error: message does not name k_max: ValueError: the table of marginals would need about 4e+12 ent',
    'recursive.monte_carlo_marginals[n=huge]': 'unnamed_error: message does not name n: ValueError: the table of marginals would need about 6e+12 entries',
    'recursive.monte_carlo_marginals[n_samples=huge]': 'unnamed_error: message does not name n_samples: ValueError: monte_carlo_marginals would need about 2.45e+',
    'recursive.monte_carlo_mse[k_max=huge]': 'unnamed_error: message does not name k_max: ValueError: the table of marginals would need about 4e+12 ent',
    'recursive.monte_carlo_mse[n=huge]': 'unnamed_error: message does not name n: ValueError: the table of marginals would need about 6e+12 entries',
    'streaming.RecursiveIBP.predictive_logpdf[X_new=huge]': 'bad_result: result holds inf',
    'streaming.RecursiveIBP.unfitted[unfitted next_prior]': 'crash: AttributeError: next_prior is not available before fitting: call fit(X) or partial_fit(x) ',
    'streaming.RecursiveIBP.unfitted[unfitted predictive_logpdf]': 'crash: AttributeError: predictive_logpdf is not available before fitting: call fit(X) or partial_',
    'streaming.match_features[learned=1-D row]': 'bad_result: result[0] holds NaN',
    'streaming.match_features[learned=no rows]': 'bad_result: result[0] holds NaN',
    'streaming.match_features[learned=one row]': 'bad_result: result[0] holds NaN',
    'summaries.chain_feature_means[chain=None]': 'unnamed_error: message does not name chain: TypeError: chains must be a non-empty list of ibp_lab.gibbs.C',
    'summaries.chain_feature_means[chain=dict]': 'unnamed_error: message does not name chain: TypeError: chains must be a non-empty list of ibp_lab.gibbs.C',
    'summaries.chain_feature_means[chain=int]': 'unnamed_error: message does not name chain: TypeError: chains must be a non-empty list of ibp_lab.gibbs.C',
    'summaries.chain_feature_means[chain=str]': 'unnamed_error: message does not name chain: TypeError: chains must be a non-empty list of ibp_lab.gibbs.C',
    'summaries.indicator_ess[categories=nan entry]': 'accepted_junk: returned ndarray: array([ 0. , 177.26069081, 203.84675635])',
    'summaries.k_plus_frequencies[k_plus=huge]': "unnamed_error: message does not name k_plus: ValueError: 'list' argument must have no negative elements",
    'summaries.match_features[A=1-D row]': 'unnamed_error: message does not name A: ValueError: B must be 2-D (features x pixels), got 1 dimension(s)',
    'summaries.match_features[A=3-D]': 'unnamed_error: message does not name A: ValueError: B must be 2-D (features x pixels), got 3 dimension(s)',
    'summaries.match_features[A=None]': 'unnamed_error: message does not name A: TypeError: B must hold real numbers, got dtype object',
    'summaries.match_features[A=complex]': 'unnamed_error: message does not name A: TypeError: B must hold real numbers, got dtype complex128',
    'summaries.match_features[A=inf entry]': 'unnamed_error: message does not name A: ValueError: B must be finite: found NaN or infinite values',
    'summaries.match_features[A=nan entry]': 'unnamed_error: message does not name A: ValueError: B must be finite: found NaN or infinite values',
    'summaries.match_features[A=no columns]': 'unnamed_error: message does not name A: ValueError: B must have at least one pixel, got shape (2, 0)',
    'summaries.match_features[A=numeric strings]': 'unnamed_error: message does not name A: TypeError: B must hold real numbers, got dtype <U32',
    'summaries.match_features[A=object]': 'unnamed_error: message does not name A: TypeError: B must hold real numbers, got dtype object',
    'summaries.match_features[A=ragged]': 'unnamed_error: message does not name A: TypeError: B must be an array of real numbers, got list',
    'summaries.match_features[A=str]': 'unnamed_error: message does not name A: TypeError: B must be an array of real numbers, got str',
    'summaries.match_features[A_ref=1-D row]': 'unnamed_error: message does not name A_ref: ValueError: A must be 2-D (features x pixels), got 1 dimensio',
    'summaries.match_features[A_ref=3-D]': 'unnamed_error: message does not name A_ref: ValueError: A must be 2-D (features x pixels), got 3 dimensio',
    'summaries.match_features[A_ref=None]': 'unnamed_error: message does not name A_ref: TypeError: A must hold real numbers, got dtype object',
    'summaries.match_features[A_ref=complex]': 'unnamed_error: message does not name A_ref: TypeError: A must hold real numbers, got dtype complex128',
    'summaries.match_features[A_ref=inf entry]': 'unnamed_error: message does not name A_ref: ValueError: A must be finite: found NaN or infinite values',
    'summaries.match_features[A_ref=nan entry]': 'unnamed_error: message does not name A_ref: ValueError: A must be finite: found NaN or infinite values',
    'summaries.match_features[A_ref=no columns]': 'unnamed_error: message does not name A_ref: ValueError: A must have at least one pixel, got shape (2, 0)',
    'summaries.match_features[A_ref=numeric strings]': 'unnamed_error: message does not name A_ref: TypeError: A must hold real numbers, got dtype <U32',
    'summaries.match_features[A_ref=object]': 'unnamed_error: message does not name A_ref: TypeError: A must hold real numbers, got dtype object',
    'summaries.match_features[A_ref=ragged]': 'unnamed_error: message does not name A_ref: TypeError: A must be an array of real numbers, got list',
    'summaries.match_features[A_ref=str]': 'unnamed_error: message does not name A_ref: TypeError: A must be an array of real numbers, got str',
    'summaries.match_features[widths differ]': 'unnamed_error: message does not name A: ValueError: B must have 3 pixels per feature, got 4',
    'widgets.static_explorer[render=returns None]': 'unnamed_error: message does not name render: TypeError: fig must be a matplotlib Figure, got NoneType',
}  # end of KNOWN


#: Group processes run at once: the machine has 2 cores, and each group's process is
#: single-threaded (its cases run one at a time, each in a forked child).
N_WORKERS = 2


@functools.cache
def _all_verdicts() -> dict:
    """Verdicts of every group, run N_WORKERS processes at a time, the slowest groups first."""
    from concurrent.futures import ThreadPoolExecutor

    groups = sorted(set(GROUP_OF.values()), key=lambda g: -sum(len(CASES[f]) for f in CASES
                                                               if GROUP_OF[f] == g))
    with ThreadPoolExecutor(N_WORKERS) as pool:  # threads only wait on the processes
        results = pool.map(_tool().run_in_subprocess, groups)
        return {group: {row["id"]: row for row in rows} for group, rows in zip(groups, results)}


def group_verdicts(group: str) -> dict:
    """Verdicts of every case of a group, by case id, from one fresh process."""
    return _all_verdicts()[group]


@functools.cache
def _tool():
    """tools/campaign.py, loaded under another name (tests/campaign.py is the harness)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("campaign_tool", os.path.join(TOOLS, "campaign.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _describe(row) -> str:
    return f"{row['kind']}: {row['id']} (expects {row['expect']}): {row['detail']}"


@pytest.mark.parametrize("function", sorted(CASES))
def test_function_survives_hostile_input(function):
    verdicts = group_verdicts(GROUP_OF[function])
    failures = []
    for case in CASES[function]:
        row = verdicts.get(case.id, dict(id=case.id, kind="died", expect=case.expect,
                                         detail="no verdict from the group's process"))
        if case.id not in KNOWN and row["kind"] not in PASSES:
            failures.append(_describe(row))
    assert not failures, f"{len(failures)} of {len(CASES[function])} cases failed:\n" + "\n".join(failures)


def _known_params():
    group = {c.id: GROUP_OF[f] for f, cases in CASES.items() for c in cases}
    params = []
    for case_id, reason in sorted(KNOWN.items()):
        mark = pytest.mark.xfail(strict=True, reason=reason)
        params.append(pytest.param(group.get(case_id), case_id, marks=mark, id=case_id))
    return params


@pytest.mark.parametrize("group, case_id", _known_params())
def test_known_failure_is_still_present(group, case_id):
    assert group is not None, f"{case_id} is no longer a campaign case: remove it from KNOWN"
    row = group_verdicts(group)[case_id]
    assert row["kind"] in PASSES, _describe(row)


# ---------------------------------------------------------------------------------------
# the campaign covers every public function and method
# ---------------------------------------------------------------------------------------

MODULES = ("prior", "recursive", "datasets", "linear_gaussian", "gibbs", "exact", "split_merge",
           "summaries", "heldout", "predictive_checks", "pymc_models", "streaming", "plotting",
           "widgets")


def _public_callables():
    for short in MODULES:
        module = importlib.import_module(f"ibp_lab.{short}")
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield f"{short}.{name}"
            elif inspect.isclass(obj):
                methods = [m for m, v in vars(obj).items() if not m.startswith("_")
                           and (callable(v) or isinstance(v, (classmethod, staticmethod)))]
                yield from (f"{short}.{name}.{m}" for m in methods)


# Classes whose methods are covered under the class's name (constructor and methods in one spec)
# or by a spec of the function that returns them.
_COVERED_ELSEWHERE = {
    "heldout.FullGaussian.fit": "heldout.FullGaussian", "heldout.PPCA.fit": "heldout.PPCA",
    "gibbs.ChainResult.posterior_trace": "summaries.chain_summaries",
}


def test_every_public_function_has_cases():
    names = set(CASES)
    missing = [f for f in _public_callables()
               if f not in names and _COVERED_ELSEWHERE.get(f) not in names
               and not any(n.startswith(f + ".") for n in names)]
    assert not missing, f"public functions without campaign cases: {missing}"


def test_harness_fails_a_function_that_refuses_everything():
    def refuse_all(**kwargs):
        raise ValueError("invalid input")

    spec = robust_inputs.Spec("stub.refuse_all", refuse_all, dict(alpha=1.0), dict(alpha="positive"))
    verdicts = [run_case(c).kind for c in robust_inputs.spec_cases(spec)]
    assert "refused_valid" in verdicts and "unnamed_error" in verdicts and "refused" not in verdicts


def test_harness_classifies_crashes_hangs_and_huge_allocations():
    import time

    cases = {
        "crash": lambda: 1 / 0,
        "timeout": lambda: time.sleep(30),
        "memory": lambda: np.ones(2**40),
        "global_state": lambda: np.random.seed(3),
        "accepted_junk": lambda: 1.0,
    }
    for kind, call in cases.items():
        verdict = run_case(Case("stub", kind, call, ("x",), "refuse"), time_limit=2)
        assert verdict.kind == kind, (kind, verdict)
    nan = run_case(Case("stub", "nan", lambda: np.array([np.nan]), ("x",), "either"))
    assert nan.kind == "bad_result"


# ---------------------------------------------------------------------------------------
# property-based cases: random data matrices through the same harness
# ---------------------------------------------------------------------------------------

# In make test ("ci"): a few derandomised examples per function; "explore" searches longer.
_EXPLORING = os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci"
HYPOTHESIS = settings(
    max_examples=settings.default.max_examples if _EXPLORING else 6,
    deadline=None,  # each example forks a child with its own time limit
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_entries = st.one_of(
    st.floats(-5, 5), st.sampled_from([0.0, -0.0, 1e300, -1e300, 5e-324, 1e-310, 1e154, np.nan, np.inf]),
)
_dtypes = st.sampled_from(["float64", "float64", "float64", "float32", "int64", "bool", "complex128",
                           "object", "str"])


@st.composite
def data_matrices(draw, max_rows=5, max_cols=4):
    """A data matrix of any small shape and dtype, sometimes with non-finite entries."""
    n, d = draw(st.integers(0, max_rows)), draw(st.integers(0, max_cols))
    values = np.array(draw(st.lists(_entries, min_size=n * d, max_size=n * d)), dtype=float).reshape(n, d)
    dtype = draw(_dtypes)
    with np.errstate(all="ignore"):
        arr = values.astype(dtype) if dtype not in ("int64", "bool") else np.nan_to_num(values).astype(dtype)
    return arr


def expectation(X) -> str:
    """Junk dtypes and non-finite entries must be refused; anything else may be either."""
    if X.dtype.kind not in "biuf":
        return "refuse"
    return "refuse" if X.size and not np.all(np.isfinite(X)) else "either"


def _ones(X):
    return np.ones((X.shape[0], 1), np.int8)


def _data_calls():
    from ibp_lab import exact, gibbs, heldout, linear_gaussian, split_merge, summaries
    from ibp_lab.streaming import RecursiveIBP, bp_means_one_pass

    rng = robust_inputs.fresh_rng
    return {
        "linear_gaussian.collapsed_loglik": lambda X: linear_gaussian.collapsed_loglik(X, _ones(X), 0.5, 1.0),
        "gibbs.gibbs_sweep": lambda X: gibbs.gibbs_sweep(X, _ones(X), 1.0, 0.5, 1.0, rng()),
        "exact.k_plus_posterior": lambda X: exact.k_plus_posterior(X, 1.0, 0.5, 1.0, k_max=4),
        "split_merge.sequential_split_merge": lambda X: split_merge.sequential_split_merge(
            X, _ones(X), 1.0, 0.5, 1.0, rng(), 3),
        "split_merge.random_split_merge": lambda X: split_merge.random_split_merge(
            X, _ones(X), 1.0, 0.5, 1.0, rng(), 3),
        "streaming.RecursiveIBP.fit": lambda X: robust_inputs._fitted_check(
            RecursiveIBP(1.0, 1.0, 0.5, 1.0, rng=rng()).fit(X)) or "fitted",
        "streaming.bp_means_one_pass": lambda X: bp_means_one_pass(X, 1.0),
        "heldout.FullGaussian": lambda X: heldout.FullGaussian().fit(X).heldout(
            X, [0], [X.shape[1] - 1]).log_density,
        "summaries.feature_correlations": lambda X: summaries.feature_correlations(X, X),
        "summaries.draw_feature_means": lambda X: summaries.draw_feature_means(X, [_ones(X)], 0.5, 1.0),
    }


DATA_CALLS = _data_calls()


@pytest.mark.parametrize("function", sorted(DATA_CALLS))
@HYPOTHESIS
@given(X=data_matrices())
def test_random_data_is_refused_or_handled(function, X):
    call = DATA_CALLS[function]
    names = ("X", "data", "A", "B")
    case = Case(function, f"X={X.dtype}{X.shape}", lambda: call(X), names, expectation(X))
    verdict = run_case(case)
    assert verdict.passed, f"{verdict.kind}: {function} with X = {X!r}: {verdict.detail}"
