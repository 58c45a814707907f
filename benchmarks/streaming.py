"""Time and memory per observation of streaming R-IBP inference (ibp_lab.inference.streaming).

Run: ``python benchmarks/streaming.py`` (under half a minute on one core of the
book's build machine; ``--n 20000`` for a quick run). One stream of ``n`` observations of
dimension 55 is drawn from the linear-Gaussian model with an IBP(alpha = 1, beta = 5)
prior (so the true number of features keeps growing, like ``alpha beta log(1 + n/beta)``)
and fed once to ``RecursiveIBP``. At checkpoints ``n = 300, 1000, 3000, ...`` it prints

1. the time per observation (the fastest of ten blocks of 20 observations just before the
   checkpoint: the least disturbed by other programs), as a ratio to the first checkpoint,
   with the number of feature slots kept and the Poisson rate of the number of features;
2. the bytes of running state (the features and per-feature sums: what the stream needs to
   continue) and the peak memory allocated while processing one observation, as ratios;
3. least-squares fits of both against ``ln n`` and, to tell logarithmic from power-law
   growth, the log-log slope (a cost that grows like ``ln n`` has a log-log slope that
   shrinks towards 0; a cost linear in ``n`` has slope 1).

4. the cost of the exact (Poisson-binomial) law of the number of features in the prior:
   the time of one observation's prior with it and with the paper's Poisson law of the
   same mean (kept here only as the reference), for ``K`` established features, and their
   ratio. The exact law costs ``O(K^2)`` per observation against ``O(K)``.

5. the compiled fast path (``ibp_lab.inference.streaming._fast``) at its target: ``D = 55``, ``K = 5``
   established features, ``S = 3`` (:func:`fast_path_cost`): time per observation for
   streams of 10^3, 10^4 and 10^5 rows, the flop count of one observation, this machine's
   scalar multiply-add rate and the ratio of the time to the arithmetic at that rate, and
   the speed-up over the Python reference path on the same rows. ``--fast-only`` runs
   just this part (a few seconds).

6. from an empty model, 20,000 rows (D = 55, five features each on with probability 0.3,
   noise 0.5): CPU time per observation with the default (buffer) births and with single
   births, and the buffer's time per phase, each charged only for what its callees did not
   spend: the compiled fast path, the Python path's events, admissions, the pilots and the
   decompositions (:func:`from_empty_cost`; ``--from-empty-only`` runs just this part).

7. the quality of those decompositions: windows of the same stream decomposed as a first
   buffer, and windows of Griffiths and Ghahramani's images: the log joint of the features
   born against that of the planted features, for the default sampler and for BP-means
   starts (rows in order, rows sorted by norm) with a short polish
   (:func:`first_buffer_quality`; ``--first-buffer-only``).

The cost of an observation is ``O(S K D)`` with ``K`` the number of slots, and ``K`` grows
like ``log n``: time and memory per observation should grow like ``log n``, so the whole
stream costs ``O(n log n)`` time and ``O(log n)`` memory.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from scipy import special

from ibp_lab.models.prior import expected_num_features
from ibp_lab.models.linear_gaussian import simulate
from ibp_lab.inference.streaming import RecursiveIBP, log_fit, stream_cost
from ibp_lab.inference.streaming.filtering import trusted_count_log_pmf, trusted_log_filtering_prior
from numba import njit


def _poisson_log_pmf(rate: float, size: int) -> np.ndarray:
    """The paper's law (Poisson, mean ``rate``): the reference the exact law is timed against."""
    j = np.arange(size)
    return special.xlogy(j, rate) - rate - special.gammaln(j + 1.0)


def prior_cost(repeats: int = 200) -> None:
    """Time one observation's filtering prior (the estimator's unchecked path), exact vs Poisson."""
    print("\nprior of one observation, K established features + 4 fresh slots:")
    print("     K  Poisson us  exact us  ratio")
    for k in (10, 30, 100, 300):
        usage = np.r_[np.full(k, 50.0), np.zeros(4)]
        log_unowned = np.r_[np.full(k, -60.0), np.zeros(4)]
        dish = np.arange(1, k + 5)
        times = []
        for exact in (False, True):
            start = time.perf_counter()
            for _ in range(repeats):
                law = (trusted_count_log_pmf(log_unowned, np.zeros(1)) if exact
                       else _poisson_log_pmf(float(k), k + 4))
                trusted_log_filtering_prior(usage, log_unowned, dish, 200, law, 0.0, 5.0,
                                    last_used=k)
            times.append((time.perf_counter() - start) / repeats * 1e6)
        print(f"{k:6d} {times[0]:11.1f} {times[1]:9.1f} {times[1] / times[0]:6.2f}")


@njit(cache=True)
def _multiply_add_chain(a, b, repeats):
    """``repeats`` dot products of ``a`` and ``b`` as one chain of scalar multiply-adds
    (compiled without fast-math, so the additions stay in order and are not vectorised:
    the same kind of arithmetic as the local fit's loops)."""
    total = 0.0
    for _ in range(repeats):
        for i in range(a.shape[0]):
            total += a[i] * b[i]
    return total


def scalar_rate() -> float:
    """This machine's compiled scalar multiply-add rate, per second (best of five)."""
    a = np.random.default_rng(0).random(1000)
    b = a[::-1].copy()
    repeats = 20_000
    _multiply_add_chain(a, b, 1)  # compile (or load) first
    best = np.inf
    for _ in range(5):
        start = time.perf_counter()
        _multiply_add_chain(a, b, repeats)
        best = min(best, time.perf_counter() - start)
    return a.size * repeats / best


def established_stream(n: int, seed: int = 0, *, k: int = 5, dim: int = 55):
    """``n`` rows from ``k`` fixed features (``N(0, 1)`` entries), each on with probability
    1/2, noise 0.5; and an estimator (alpha = beta = 1, sigma_x = 0.5, sigma_a = 1, S = 3,
    single births) whose ``k`` features are already established: it has seen 1000 rows of
    the same stream (the steady state the fast path is for)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, dim))
    warm = 1000
    Z = (rng.random((warm + n, k)) < 0.5).astype(float)
    X = Z @ A + 0.5 * rng.normal(size=(warm + n, dim))
    # warm up on rows that show one feature at a time, so that single births find the
    # k features (rows showing several at once fuse them: issue 18), then on the stream
    teach = np.repeat(np.eye(k), 20, axis=0) @ A + 0.5 * rng.normal(size=(20 * k, dim))
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, n_steps=3, births="single",
                         rng=0,
                         keep_history=False)
    model.partial_fit(teach).partial_fit(X[:warm])
    return model, X[warm:]


def fast_path_cost() -> None:
    """Time per observation of the fast path at D = 55, K = 5, S = 3; flops; speed-up."""
    print("\nfast path (ibp_lab.inference.streaming._fast): D = 55, 5 features each on w.p. 1/2, noise 0.5; "
          "RecursiveIBP(alpha=1, beta=1, sigma_x=0.5, sigma_a=1, n_steps=3, births='single') with its 5 features "
          "established")
    model, X = established_stream(100_000)
    k = model.dish_numbers_.size
    rate = scalar_rate()
    dim, steps = X.shape[1], model.n_steps
    slots = k + 1  # the kept features and one fresh slot (the birth proposal's)
    # per sweep S: every slot's indicator (a dot product and a norm: D multiply-adds
    # counted once) and feature (D multiply-adds); the prior's count law O(K^2)
    flops = 2 * steps * slots * dim + slots**2
    print(f"features kept before the stream: {k}; scalar multiply-add rate "
          f"{rate / 1e9:.2f} G/s; one observation = 2 S (K + 1) D + (K + 1)^2 = {flops} "
          f"multiply-adds = {flops / rate * 1e6:.2f} us at that rate")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (CPU time is this "
          "process's own: the wall time shares the machine)")
    print("      N  wall s  us/obs  CPU us/obs  wall/arithmetic  CPU/arithmetic  features after")
    state = model.get_state()
    per_obs, cpu_per_obs = {}, {}
    for n in (1_000, 10_000, 100_000):
        fresh = RecursiveIBP.__new__(RecursiveIBP)
        fresh.set_state(state)
        start, cpu = time.perf_counter(), time.process_time()
        fresh.partial_fit(X[:n])
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        per_obs[n], cpu_per_obs[n] = elapsed / n, cpu / n
        print(f"{n:7d} {elapsed:7.2f} {per_obs[n] * 1e6:7.2f} {cpu_per_obs[n] * 1e6:11.2f} "
              f"{per_obs[n] * rate / flops:16.1f} {cpu_per_obs[n] * rate / flops:15.1f} "
              f"{fresh.dish_numbers_.size:15d}")
    slow = RecursiveIBP.__new__(RecursiveIBP)
    slow.set_state(state)
    slow._fast_path = False  # the Python reference path
    n = 10_000
    start, cpu = time.perf_counter(), time.process_time()
    slow.partial_fit(X[:n])
    reference = (time.perf_counter() - start) / n
    reference_cpu = (time.process_time() - cpu) / n
    print(f"Python reference path, the same {n} rows: {reference * 1e6:.1f} us/obs "
          f"(CPU {reference_cpu * 1e6:.1f}); the fast path is x{reference / per_obs[n]:.1f} "
          f"faster (CPU x{reference_cpu / cpu_per_obs[n]:.1f}); its time per observation from "
          f"N = 10^3 to 10^5: x{per_obs[100_000] / per_obs[1_000]:.2f}")
    verdict = "met" if per_obs[100_000] <= 15e-6 else "NOT met"
    print(f"target at most 15 us/obs (10^5 rows in under 2 s): {verdict} in wall time "
          f"({per_obs[100_000] * 1e5:.2f} s for 10^5 rows; CPU {cpu_per_obs[100_000] * 1e5:.2f} s)")
    buffer_births_cost(X)


def buffer_births_cost(X: np.ndarray) -> None:
    """The same rows with births="buffer": the kernel carries the rows, but about 1% of
    them (ADMIT_LEVEL) are admitted even when the features explain them, and every
    ``buffer_size`` admissions run the buffer's collapsed sampler."""
    from ibp_lab.inference.streaming import births
    from ibp_lab.inference.streaming._stream import StreamState

    rng = np.random.default_rng(1)
    k, dim = 5, X.shape[1]
    A = rng.normal(size=(k, dim))
    teach = np.repeat(np.eye(k), 20, axis=0) @ A + 0.5 * rng.normal(size=(20 * k, dim))
    Z = (rng.random((1000 + X.shape[0], k)) < 0.5).astype(float)
    rows = Z @ A + 0.5 * rng.normal(size=Z.shape[:1] + (dim,))
    model = RecursiveIBP(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0, births="buffer", rng=0,
                         keep_history=False)
    model.partial_fit(teach).partial_fit(rows[:1000])
    events, buffers = [], []
    stream = model._stream
    observe, decompose = stream.observe, stream.decompose_buffer
    stream.observe = lambda o: (events.append(1), observe(o))
    stream.decompose_buffer = lambda **kw: (buffers.append(1), decompose(**kw))
    start, cpu = time.perf_counter(), time.process_time()
    model.partial_fit(rows[1000:])
    elapsed = (time.perf_counter() - start) / X.shape[0]
    cpu = (time.process_time() - cpu) / X.shape[0]
    print(f"births='buffer', {X.shape[0]} rows of the same kind ({model.dish_numbers_.size} "
          f"features): {elapsed * 1e6:.1f} us/obs (CPU {cpu * 1e6:.1f}); {len(events)} rows "
          f"went to the Python path (admissions at level {births.ADMIT_LEVEL}); "
          f"{len(buffers)} buffers of {model.buffer_size} decomposed (a pilot of at most "
          f"{births.PILOT_SWEEPS} Gibbs sweeps empties a buffer of noise); "
          f"10^5 rows in {elapsed * 1e5:.2f} s")


class PhaseClock:
    """CPU time of nested calls, each charged only for what its callees did not spend."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[list] = []
        self._undo: list[tuple] = []

    def unwrap(self) -> None:
        """Put every wrapped function back."""
        for owner, attribute, inner in reversed(self._undo):
            setattr(owner, attribute, inner)
        self._undo = []

    def wrap(self, owner, attribute: str, phase: str) -> None:
        inner = getattr(owner, attribute)
        self._undo.append((owner, attribute, inner))

        def timed(*args, **kwargs):
            frame = [time.process_time(), 0.0]  # start, time spent in timed callees
            self._stack.append(frame)
            try:
                return inner(*args, **kwargs)
            finally:
                self._stack.pop()
                spent = time.process_time() - frame[0]
                self.seconds[phase] = self.seconds.get(phase, 0.0) + spent - frame[1]
                self.calls[phase] = self.calls.get(phase, 0) + 1
                if self._stack:
                    self._stack[-1][1] += spent

        setattr(owner, attribute, timed)


def item_six_stream(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of items 6 and 7 and their planted ``Z``: D = 55, five ``N(0, 1)``
    features each on with probability 0.3, noise 0.5."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(5, 55))
    Z = (rng.random((n, 5)) < 0.3).astype(np.float64)
    return Z @ A + 0.5 * rng.normal(size=(n, 55)), Z


def from_empty_cost(n: int = 20_000, seed: int = 0, repeats: int = 7) -> None:
    """From an empty model, the stream of issue 25: D = 55, five features (``N(0, 1)``
    entries) each on with probability 0.3, noise 0.5; default births (the buffer) against
    single births on the same rows; CPU time per observation, births included (the median
    and range of ``repeats`` fits: one fit varies by some 10% on a shared machine), and
    the buffer's time per phase in one more fit."""
    from ibp_lab.inference.streaming import births
    from ibp_lab.inference.streaming._stream import StreamState

    X, _ = item_six_stream(n, seed)
    RecursiveIBP(sigma_x=0.5, rng=0).fit(X[:300])  # compile (or load) the kernels first
    RecursiveIBP(sigma_x=0.5, births="single", rng=0).fit(X[:300])
    print(f"\nfrom an empty model: {n} rows, D = 55, 5 features on w.p. 0.3, noise 0.5; "
          "RecursiveIBP(sigma_x=0.5, rng=0, keep_history=False).fit(X), CPU time, "
          f"median (range) of {repeats} fits")

    def one_fit(rule: str) -> tuple[float, RecursiveIBP]:
        model = RecursiveIBP(sigma_x=0.5, births=rule, rng=0, keep_history=False)
        cpu = time.process_time()
        model.fit(X)
        return (time.process_time() - cpu) / n, model

    per_obs, fitted = {}, {}
    for rule in ("single", "buffer"):
        first, fitted[rule] = one_fit(rule)  # what a user's first stream costs
        times = sorted([first] + [one_fit(rule)[0] for _ in range(repeats - 1)])
        per_obs[rule] = float(np.median(times))
        print(f"  births={rule!r}: {per_obs[rule] * 1e6:6.1f} us/obs ({times[0] * 1e6:.1f}-"
              f"{times[-1] * 1e6:.1f}; the first fit {first * 1e6:.1f}), "
              f"{fitted[rule].features_.shape[0]} features, n_features_expected_ "
              f"{fitted[rule].n_features_expected_:.2f}  {_load()}")
    steady = steady_state_cost(fitted["buffer"], X, repeats)
    print(f"  steady state (births='buffer', the fitted model fed the same {n} rows again, its "
          f"features established): {steady * 1e6:.1f} us/obs  {_load()}")
    print(f"  from empty / steady state: x{per_obs['buffer'] / steady:.2f} (births cost "
          f"{(per_obs['buffer'] - steady) * 1e6:.1f} us/obs on top of the steady state)")
    clock = PhaseClock()  # the phases, each charged exclusively
    clock.wrap(StreamState, "observe_fast", "fast path")
    clock.wrap(StreamState, "observe", "Python events")
    clock.wrap(StreamState, "admit", "admissions")
    clock.wrap(StreamState, "decompose_buffer", "decompositions")
    clock.wrap(births, "_shares_a_feature", "pilots")
    try:
        one_fit("buffer")
    finally:
        clock.unwrap()
    print("  the buffer's phases, in one more fit:")
    for phase, seconds in clock.seconds.items():
        print(f"      {phase:15s} {seconds / n * 1e6:7.2f} us/obs  ({clock.calls[phase]} calls, "
              f"{seconds:.3f} s)")
    verdict = "met" if per_obs["buffer"] <= 12e-6 else "NOT met"
    print(f"  target at most 12 us/obs with the default births (the median, on an idle "
          f"machine: compare the load average with the cores): {verdict} "
          f"(x{per_obs['buffer'] / per_obs['single']:.1f} single births)  {_load()}")


def _load() -> str:
    """This machine's load beside a CPU time: on a busy machine CPU times grow too (the
    cores' caches and the shared hyperthreads)."""
    one, five, _ = os.getloadavg()
    return f"[load average {one:.1f}, {five:.1f} on {os.cpu_count()} cores]"


def steady_state_cost(model: RecursiveIBP, X: np.ndarray, repeats: int) -> float:
    """CPU time per observation of ``model`` (fitted on ``X``) fed ``X`` once more, from
    its state each time: the median of ``repeats`` runs."""
    state = model.get_state()
    times = []
    for _ in range(repeats):
        again = RecursiveIBP.__new__(RecursiveIBP)
        again.set_state(state)
        cpu = time.process_time()
        again.partial_fit(X)
        times.append((time.process_time() - cpu) / X.shape[0])
    return float(np.median(times))


def first_buffer_quality(seed: int = 0, polish_sweeps: int = 30) -> None:
    """Item 7: how good is a buffer's decomposition, against the planted features?

    Windows of 100 rows decomposed as the first buffer of an empty model would be (every
    row admitted, ``alpha_B = 1``), from two families: the item-6 stream (D = 55, five
    Gaussian features on with probability 0.3, noise 0.5) and Griffiths and Ghahramani's
    images (D = 36, four binary features on with probability 0.5, noise 0.5; data set
    ``s`` from ``default_rng(s)``). For each window: the log joint ``log p(X | Z) + log
    P([Z])`` of the planted ``Z`` minus that of the features born (the *gap*, in nats;
    negative when the decomposition beats the planted assignments), and the CPU time, for
    three decompositions: the default (``decompose_buffer``, pilot off: ``RESTARTS`` starts
    of ``SWEEPS`` sweeps with split-merge, the first from the sorted BP-means start below);
    a BP-means start (one pass, penalty
    ``sigma_x^2`` times the admission threshold) over the rows in their order; the same
    over the rows sorted by increasing norm (a row showing one feature has a smaller norm
    than rows showing sums of features, so features are created from single-feature rows
    first). Both BP-means starts are polished by ``polish_sweeps`` of the same sweeps.
    Features owned by fewer than ``MIN_OWNERS`` rows are dropped, as the estimator drops
    them.
    """
    from ibp_lab.datasets import simulate_four_feature_data
    from ibp_lab.inference.gibbs import gibbs_sweep
    from ibp_lab.models.linear_gaussian import collapsed_loglik
    from ibp_lab.models.prior import log_prior
    from ibp_lab.inference.split_merge import sequential_split_merge
    from ibp_lab.inference.streaming import births
    from ibp_lab.inference.streaming.bp_means import bp_means_one_pass

    X, Z_true = item_six_stream(20_000, seed)
    windows = [(f"D=55 rows {start}+", X[start:start + 100], Z_true[start:start + 100])
               for start in (0, 100, 300, 1000, 5000)]
    for data_set in range(5):
        images, planted, _ = simulate_four_feature_data(np.random.default_rng(data_set),
                                                        n=100)
        windows.append((f"images set {data_set}", images, planted.astype(np.float64)))

    def log_joint(R, Z):
        Z = Z[:, Z.sum(axis=0) >= births.MIN_OWNERS]
        return collapsed_loglik(R, Z, 0.5, 1.0) + log_prior(Z, 1.0)

    def polished_bp_means(R, sampler, sort):
        if sort:  # the buffer's own first start
            Z = births._bp_means_start(R, 0.5)
        else:
            gamma = 0.5 * np.sqrt(births.admission_threshold(R.shape[1]))
            Z = bp_means_one_pass(R, gamma)[0]
        for _ in range(polish_sweeps):
            Z = gibbs_sweep(R, Z[:, Z.sum(axis=0) > 0], 1.0, 0.5, 1.0, sampler)
            if Z.shape[1]:
                Z, _ = sequential_split_merge(R, Z, 1.0, 0.5, 1.0, sampler,
                                              births.SPLIT_MERGE_PROPOSALS)
        return Z

    births.decompose_buffer(X[:20], np.random.default_rng(1), alpha=1.0, sigma_x=0.5,
                            sigma_a=1.0, pilot=False)  # compile first
    print("\nfirst-buffer decompositions, 100 rows: gap to the planted log joint (nats), "
          "features born, CPU s")
    print(f"  {'window':18s} {f'default ({births.RESTARTS} x {births.SWEEPS} sweeps)':>26s} "
          f"{'BP-means + ' + str(polish_sweeps):>22s} "
          f"{'sorted BP-means + ' + str(polish_sweeps):>24s}")
    for name, R, planted in windows:
        cells = []
        for method in ("default", "arrival", "sorted"):
            cpu, sampler = time.process_time(), np.random.default_rng(1)
            if method == "default":
                Z = births.decompose_buffer(R, sampler, alpha=1.0, sigma_x=0.5,
                                            sigma_a=1.0, pilot=False).owners
            else:
                Z = polished_bp_means(R, sampler, method == "sorted")
            cpu = time.process_time() - cpu
            n_born = int(np.sum(Z.sum(axis=0) >= births.MIN_OWNERS))
            cells.append(f"{log_joint(R, planted) - log_joint(R, Z):8.1f} ({n_born:2d}) "
                         f"{cpu:5.2f} s")
        print(f"  {name:18s} {cells[0]:>26s} {cells[1]:>22s} {cells[2]:>24s}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="observations (default 1e5)")
    parser.add_argument("--dim", type=int, default=55)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fast-only", action="store_true",
                        help="only the fast path's measurement (item 5)")
    parser.add_argument("--from-empty-only", action="store_true",
                        help="only the from-empty stream with its phases (item 6)")
    parser.add_argument("--first-buffer-only", action="store_true",
                        help="only the first-buffer decompositions against the truth (item 7)")
    args = parser.parse_args()
    if args.fast_only:
        fast_path_cost()
        return
    if args.from_empty_only:
        from_empty_cost()
        return
    if args.first_buffer_only:
        first_buffer_quality()
        return
    alpha, beta, noise, sigma_x, sigma_a = 1.0, 5.0, 0.1, 0.3, 1.0

    start = time.perf_counter()
    stream = simulate(args.n, np.random.default_rng(args.seed), alpha=alpha, beta=beta,
                      sigma_x=noise, sigma_a=sigma_a, d=args.dim)
    print(f"Streaming R-IBP, linear-Gaussian, D = {args.dim}, alpha = {alpha}, beta = {beta}, "
          f"data noise {noise}, model sigma_x = {sigma_x}; true features in the stream: "
          f"{stream.A.shape[0]} (simulated in {time.perf_counter() - start:.1f} s)\n")

    model = RecursiveIBP(alpha=alpha, beta=beta, sigma_x=sigma_x, sigma_a=sigma_a,
                         rng=np.random.default_rng(1),
                         keep_history=False)
    model.partial_fit(stream.X[:20])  # compile (or load) the numba kernels before timing
    last = args.n - 20
    checkpoints = [c for c in (300, 1000, 3000, 10_000, 30_000) if c < last - 300]
    checkpoints.append(last)
    start = time.perf_counter()
    cost = stream_cost(model, stream.X[20:], checkpoints)
    elapsed = time.perf_counter() - start
    n = cost.n + 20

    print("     n  us/obs  ratio  slots  rate  true E[K]  state B  ratio  peak B  ratio")
    for i in range(n.size):
        prior_mean = expected_num_features(alpha, int(n[i]), beta=beta)
        print(f"{n[i]:6d} {cost.seconds_per_obs[i] * 1e6:7.1f} "
              f"{cost.seconds_per_obs[i] / cost.seconds_per_obs[0]:6.2f} {cost.n_slots[i]:6d} "
              f"{cost.rate[i]:5.1f} {prior_mean:10.1f} {cost.state_bytes[i]:8d} "
              f"{cost.state_bytes[i] / cost.state_bytes[0]:6.2f} {cost.peak_bytes[i]:7d} "
              f"{cost.peak_bytes[i] / cost.peak_bytes[0]:6.2f}")

    print()
    for label, values, unit in (("time per observation", cost.seconds_per_obs * 1e6, "us"),
                                ("state", cost.state_bytes, "bytes"),
                                ("slots", cost.n_slots, "slots")):
        intercept, slope = log_fit(n, values)
        loglog = np.polyfit(np.log(n), np.log(values), 1)[0]
        print(f"{label:22s}: {intercept:9.1f} + {slope:8.2f} ln n  ({unit}); log-log slope "
              f"{loglog:.3f}")
    grow_n = n[-1] / n[0]
    print(f"\nfrom n = {n[0]} to {n[-1]} (x{grow_n:.0f}): time per observation x"
          f"{cost.seconds_per_obs[-1] / cost.seconds_per_obs[0]:.2f}, state x"
          f"{cost.state_bytes[-1] / cost.state_bytes[0]:.2f}, "
          f"ln n x{np.log(n[-1]) / np.log(n[0]):.2f}"
          f"; a cost linear in n would grow x{grow_n:.0f}")
    print(f"streamed {n[-1]} observations in {elapsed:.1f} s")
    prior_cost()
    fast_path_cost()
    from_empty_cost()
    first_buffer_quality()


if __name__ == "__main__":
    main()
