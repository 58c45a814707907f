"""Data sets used in the book: the optdigits handwritten digits and synthetic images.

The UCI optdigits files (Alpaydin & Kaynak 1998, CC BY 4.0) are bundled in
``ibp_lab/data`` gzipped; see ``ibp_lab/data/ATTRIBUTION.md``. Nothing is ever
downloaded. Each file is checked against its published SHA-256 when it is read.

- :func:`load_optdigits`: a whole file, ``"train"`` (optdigits.tra: 3823 digits
  by 30 writers) or ``"test"`` (optdigits.tes: 1797 digits by 13 other
  writers), as 8 x 8 ink counts 0-16 and labels.
- :func:`load_digit_sets`: the book's selection, 30 digits per class from the
  training file and 20 per class from the test file, 48 pixels each (the two
  border columns dropped), ink in [0, 1], with the training mean for centring.
- :func:`four_feature_images` and :func:`simulate_four_feature_data`: the 6 x 6
  synthetic images of Griffiths & Ghahramani built from four 3 x 3 features.
- :func:`load_docstring_words`: which words each of 1,000 docstrings of Python's
  standard library uses (built by ``tools/docstring_corpus.py``; heavy-tailed data
  for the three-parameter IBP).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ibp_lab._checks import check_count, check_positive, check_rng, check_size

__all__ = [
    "load_experiment",
    "EXPERIMENTS",
    "DigitSets",
    "DIGIT_SHAPE",
    "load_optdigits",
    "load_digit_sets",
    "four_feature_images",
    "simulate_four_feature_data",
    "WordSets",
    "load_docstring_words",
]

#: SHA-256 of the *uncompressed* UCI files (as published with the data set).
_FILES = {
    "train": ("optdigits.tra.gz", "e1b683cc211604fe8fd8c4417e6a69f31380e0c61d4af22e93cc21e9257ffedd"),
    "test": ("optdigits.tes.gz", "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8"),
}
_N_ROWS = {"train": 3823, "test": 1797}

#: Image shape after dropping the two blank border columns (rows x columns).
DIGIT_SHAPE = (8, 6)


def _data_dir():
    return resources.files("ibp_lab") / "data"


def _read_verified(split: str) -> bytes:
    return _read_bundled(*_FILES[split])


def _read_bundled(name: str, expected: str) -> bytes:
    """The uncompressed bytes of a bundled gzip file, checked against their SHA-256."""
    path = _data_dir() / name
    try:
        raw = gzip.decompress(path.read_bytes())
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"the bundled data file {name} is missing from {path.parent}; reinstall ibp_lab "
            "(pip install -e . from the repository) to restore it"
        ) from exc
    except (OSError, EOFError) as exc:
        raise ValueError(f"the bundled data file {name} is not a valid gzip file: {exc}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected:
        raise ValueError(
            f"the bundled data file {name} is corrupt: SHA-256 {digest} differs from the "
            f"published {expected}"
        )
    return raw


def load_optdigits(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Load one optdigits file: 8 x 8 ink counts and digit labels.

    Parameters
    ----------
    split : {"train", "test"}
        ``"train"`` reads optdigits.tra (30 writers), ``"test"`` optdigits.tes
        (13 other writers): a writer-independent split.

    Returns
    -------
    images : numpy.ndarray
        ``(n, 8, 8)`` ``int64`` ink counts 0-16, rows of the image first.
    labels : numpy.ndarray
        ``(n,)`` digits 0-9.

    Examples
    --------
    >>> images, labels = load_optdigits("test")
    >>> images.shape, int(images.max()), sorted(set(labels.tolist())) == list(range(10))
    ((1797, 8, 8), 16, True)
    """
    if not isinstance(split, str) or split not in _FILES:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    table = np.loadtxt(_read_verified(split).decode("ascii").splitlines(), delimiter=",", dtype=np.int64)
    if table.shape != (_N_ROWS[split], 65):
        raise ValueError(f"optdigits {split} file has shape {table.shape}, expected ({_N_ROWS[split]}, 65)")
    return table[:, :64].reshape(-1, 8, 8), table[:, 64]


@dataclass(frozen=True)
class DigitSets:
    """The book's digits: a training and a writer-independent test selection.

    Attributes
    ----------
    train_raw, test_raw : numpy.ndarray
        ``(300, 48)`` and ``(200, 48)`` ink in [0, 1], border columns dropped.
    train_labels, test_labels : numpy.ndarray
        Digit of each row (never used for fitting, only for reading results).
    mean : numpy.ndarray
        ``(48,)`` average training digit.
    """

    train_raw: np.ndarray
    test_raw: np.ndarray
    train_labels: np.ndarray
    test_labels: np.ndarray
    mean: np.ndarray

    @property
    def train(self) -> np.ndarray:
        """Training digits centred by the training mean: a feature changes the average digit."""
        return self.train_raw - self.mean

    @property
    def test(self) -> np.ndarray:
        """Test digits centred by the *training* mean."""
        return self.test_raw - self.mean


def _select(images, labels, per_class, rng):
    rows = np.concatenate(
        [rng.choice(np.flatnonzero(labels == digit), per_class, replace=False) for digit in range(10)]
    )
    # columns 0 and 7 are nearly always blank (sd 0.01 and 0.05 over the training file)
    return images[rows][:, :, 1:7].reshape(len(rows), -1) / 16.0, labels[rows]


def load_digit_sets(*, n_train_per_class: int = 30, n_test_per_class: int = 20, seed: int = 2005) -> DigitSets:
    """The book's selection of training and test digits.

    With ``rng = np.random.default_rng(seed)``, for each digit 0-9 in turn
    ``n_train_per_class`` rows of that class are chosen from optdigits.tra
    without replacement; then the same with ``n_test_per_class`` per class from
    optdigits.tes. Columns 1-6 of each 8 x 8 image are kept (48 pixels) and ink
    is divided by 16.

    Parameters
    ----------
    n_train_per_class, n_test_per_class : int, optional
        Digits per class in each set (at least 1; at most the class size).
    seed : int, optional
        Seed of the selection (2005 is the book's).

    Returns
    -------
    DigitSets

    Examples
    --------
    >>> digits = load_digit_sets()
    >>> digits.train.shape, digits.test.shape
    ((300, 48), (200, 48))
    >>> bool(abs(digits.train.mean()) < 1e-12)
    True
    """
    n_train_per_class = check_count("n_train_per_class", n_train_per_class, minimum=1, maximum=350)
    n_test_per_class = check_count("n_test_per_class", n_test_per_class, minimum=1, maximum=170)
    seed = check_count("seed", seed, maximum=None)  # any non-negative int seeds a Generator
    rng = np.random.default_rng(seed)
    train_raw, train_labels = _select(*load_optdigits("train"), n_train_per_class, rng)
    test_raw, test_labels = _select(*load_optdigits("test"), n_test_per_class, rng)
    return DigitSets(train_raw, test_raw, train_labels, test_labels, train_raw.mean(axis=0))


def four_feature_images() -> np.ndarray:
    """The four 6 x 6 feature images of Griffiths & Ghahramani's synthetic data.

    Each feature fills one 3 x 3 quadrant: a plus (top-left), a hollow square
    (top-right), a lower triangle (bottom-left) and a T
    (bottom-right).

    Returns
    -------
    numpy.ndarray
        ``(4, 36)`` array of 0.0/1.0, one flattened 6 x 6 image per row.

    Examples
    --------
    >>> A = four_feature_images()
    >>> A.shape, A.sum(axis=1).tolist()
    ((4, 36), [5.0, 8.0, 6.0, 5.0])
    """
    patches = [
        ("010", "111", "010"),  # plus
        ("111", "101", "111"),  # hollow square
        ("100", "110", "111"),  # lower triangle
        ("111", "010", "010"),  # a T: a bar on top, a stem below
    ]
    corners = [(0, 0), (0, 3), (3, 0), (3, 3)]
    features = np.zeros((4, 6, 6))
    for k, (patch, (r, c)) in enumerate(zip(patches, corners)):
        features[k, r : r + 3, c : c + 3] = [[int(ch) for ch in row] for row in patch]
    return features.reshape(4, 36)


def simulate_four_feature_data(
    rng: np.random.Generator, *, n: int = 100, sigma_x: float = 0.5, p_on: float = 0.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Simulate images made of the four features plus Gaussian noise.

    Each image switches each feature on independently with probability
    ``p_on`` and adds ``Normal(0, sigma_x^2)`` noise to every pixel.

    Parameters
    ----------
    rng : numpy.random.Generator
    n : int, optional
        Number of images (>= 1; ``36 n`` pixels at most
        :data:`ibp_lab._checks.MAX_ENTRIES`).
    sigma_x : float, optional
        Noise standard deviation (> 0).
    p_on : float, optional
        Probability that a feature is present, in [0, 1].

    Returns
    -------
    X : numpy.ndarray
        ``(n, 36)`` images.
    Z : numpy.ndarray
        ``(n, 4)`` ``int8`` true feature ownership.
    A : numpy.ndarray
        ``(4, 36)`` true features.

    Examples
    --------
    >>> X, Z, A = simulate_four_feature_data(np.random.default_rng(0))
    >>> X.shape, Z.shape, A.shape
    ((100, 36), (100, 4), (4, 36))
    """
    rng = check_rng(rng)
    n = check_count("n", n, minimum=1)
    sigma_x = check_positive("sigma_x", sigma_x)
    p_on = check_positive("p_on", p_on, allow_zero=True, upper=1.0)
    check_size("X", n * 36.0, names="n", hint="simulate fewer images")
    A = four_feature_images()
    Z = (rng.random((n, 4)) < p_on).astype(np.int8)
    X = Z @ A + sigma_x * rng.standard_normal((n, 36))
    return X, Z, A


#: The precomputed experiments bundled with the package (``experiments/<name>.py`` writes each).
EXPERIMENTS = ("smc_digits", "tempering_digits", "modes_digits", "tempering_trap",
               "nonconjugate_digits", "noisy_or_digits", "paper_fig5",
               "paper_fig8", "digits_methods", "pymc_digits", "heldout_pymc")
#: What every experiment record holds.
_RECORD_KEYS = {"command", "seed", "stack", "date", "cpu_seconds", "plan", "quick_plan", "runs",
                "quick"}


def load_experiment(name: str) -> dict:
    """The record of a precomputed experiment, read from the package and checked whole.

    Runs too long for a chapter (many CPU minutes) are made by a script in
    ``experiments/`` and bundled as JSON: the runs' results, the command, the stack,
    the seed and the date. A chapter reads them with this function, so that it finds
    them from any working directory.

    Parameters
    ----------
    name : str
        One of :data:`EXPERIMENTS`.

    Returns
    -------
    dict
        The record: ``runs`` (the results), ``plan``, ``command``, ``seed``, ``stack``,
        ``date``, ``cpu_seconds``, and the reduced runs ``quick`` with their ``quick_plan``.

    Examples
    --------
    >>> record = load_experiment("tempering_digits")
    >>> record["command"]
    'python experiments/tempering_digits.py'
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, one of {EXPERIMENTS}, got {type(name).__name__}")
    if name not in EXPERIMENTS:
        raise ValueError(f"name must be one of {EXPERIMENTS}, got {name!r}")
    path = resources.files("ibp_lab").joinpath("data", "experiments", f"{name}.json")
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"the {name} record is not in this installation of ibp_lab: "
                                f"run experiments/{name}.py to make it") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"the {name} record is not valid JSON ({exc}): rerun "
                         f"experiments/{name}.py") from None
    missing = _RECORD_KEYS - set(record) if isinstance(record, dict) else _RECORD_KEYS
    if missing:
        raise ValueError(f"the {name} record lacks {sorted(missing)}: rerun experiments/{name}.py")
    return record


#: SHA-256 of the uncompressed word data written by tools/docstring_corpus.py.
_WORDS = ("docstring_words.json.gz",
          "52d9d17401264495a4ac2ad20e723677c400992096ed2ed2e1606b500408951e")


@dataclass(frozen=True)
class WordSets:
    """Documents as sets of words: the output of :func:`load_docstring_words`.

    Attributes
    ----------
    Z : numpy.ndarray
        ``(N, V)`` ``int8``: ``Z[n, v] = 1`` if document ``n`` uses word ``v``.
    documents : tuple of str
        Each document's dotted name (module, class, function).
    vocabulary : tuple of str
        The words, in the order of the columns (alphabetical).
    source : str
        Which Python's library the docstrings come from, and the rule that read them.
    """

    Z: np.ndarray
    documents: tuple
    vocabulary: tuple
    source: str


def load_docstring_words() -> WordSets:
    """Which words each of 1,000 standard-library docstrings uses, as a binary matrix.

    Documents are docstrings of public functions and classes of CPython's standard
    library; words are lower-cased runs of at least two letters, counted once per
    document (``tools/docstring_corpus.py`` states the rule). The file is bundled and
    checked against its SHA-256 on every load; nothing is downloaded.

    Returns
    -------
    WordSets

    Examples
    --------
    >>> words = load_docstring_words()
    >>> words.Z.shape[0], len(words.vocabulary) == words.Z.shape[1]
    (1000, True)
    """
    raw = _read_bundled(*_WORDS)
    record = json.loads(raw)
    Z = np.zeros((len(record["rows"]), len(record["vocabulary"])), np.int8)
    for row, columns in enumerate(record["rows"]):
        Z[row, columns] = 1
    Z.setflags(write=False)
    return WordSets(Z, tuple(record["documents"]), tuple(record["vocabulary"]),
                    f"{record['source']} ({record['rule']})")
