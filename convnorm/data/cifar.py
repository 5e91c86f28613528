"""Finding, decoding and caching CIFAR-10/100.

Three copies of the data are understood, looked for in this order under a data
directory ``root`` (an argument, else the environment variable ``CONVNORM_DATA_DIR``):

1. the official python-format archive, extracted (``cifar-10-batches-py/``,
   ``cifar-100-python/``) or not (``cifar-10-python.tar.gz``, ``cifar-100-python.tar.gz``);
   its MD5 is checked against the value published on the dataset's home page;
2. for CIFAR-10 only, the lossy JPEG copy ``cifar10-jpeg-q75.tar.xz`` (one JPEG per
   image, ``train/<class>/NNNN.jpg``; its SHA-256 is checked). Images come grouped
   by class, in the official order within each class.

With ``download=True`` the official archive is fetched into ``root`` first when no copy
is found (Colab). Whatever the copy, it is decoded once into uint8 ``.npy`` arrays in a
cache directory (``$CONVNORM_CACHE_DIR``, else ``~/.cache/convnorm``; never the data
directory, which may be shared or read-only) and later loads read those. Nothing here ever
invents data: if no copy is found, :class:`CifarNotFoundError` says how to get one; a damaged
copy or cache raises :class:`CorruptDataError` naming the file and what to do. Decoding the
JPEG copy needs Pillow (imported only then).
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import io
import lzma
import os
import pickle
import tarfile
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ENV_VAR = "CONVNORM_DATA_DIR"
JPEG_ARCHIVE = "cifar10-jpeg-q75.tar.xz"
JPEG_SHA256 = "40018c4988ba5c3d6dc7ffa3770d18459599d3c5ce27fa139a8dcff040451741"
CIFAR10_CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)


@dataclass(frozen=True)
class _Official:
    archive: str
    folder: str
    md5: str
    url: str
    train_members: tuple[str, ...]
    test_members: tuple[str, ...]
    label_key: str
    num_classes: int


_OFFICIAL = {
    "cifar10": _Official(
        "cifar-10-python.tar.gz", "cifar-10-batches-py", "c58f30108f718f92721af3b95e74349a",
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        tuple(f"data_batch_{i}" for i in range(1, 6)), ("test_batch",), "labels", 10,
    ),
    "cifar100": _Official(
        "cifar-100-python.tar.gz", "cifar-100-python", "eb9058c3a382ffc7106e4002c42a8d85",
        "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
        ("train",), ("test",), "fine_labels", 100,
    ),
}


class CifarNotFoundError(FileNotFoundError):
    """No usable copy of the requested CIFAR data set was found."""


class CorruptDataError(ValueError):
    """A copy of the data (an archive, an extracted file, or the decoded cache) is damaged or
    truncated; the message names the file and what to do."""


_READ_ERRORS = (OSError, EOFError, ValueError, pickle.UnpicklingError, tarfile.TarError, lzma.LZMAError, zlib.error)
"""What reading a truncated or damaged archive, pickle or ``.npy`` file raises."""


@dataclass(frozen=True)
class CifarSource:
    """Where a data set comes from: ``kind`` is ``"official"`` or ``"jpeg-q75"``."""

    name: str
    kind: str
    path: Path
    checksum: str

    @property
    def description(self) -> str:
        """One line for result files and captions (says when the copy is lossy)."""
        if self.kind == "jpeg-q75":
            return (f"{self.name}: lossy JPEG-q75 copy {self.path.name} (sha256 {self.checksum[:12]}…); "
                    "absolute accuracies are not comparable with those on the official files")
        if self.path.is_dir():
            return f"{self.name}: official python-format files, extracted ({self.path})"
        return f"{self.name}: official python-format archive ({self.path.name}, md5 {self.checksum})"


def _check_name(name: str) -> _Official:
    if name not in _OFFICIAL:
        raise ValueError(f"name must be one of {sorted(_OFFICIAL)}, got {name!r}")
    return _OFFICIAL[name]


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data directory: ``root`` if given, else ``$CONVNORM_DATA_DIR``."""
    if root is None:
        env = os.environ.get(ENV_VAR)
        if not env:
            raise CifarNotFoundError(
                f"no data directory given: pass root=... (or --data-dir) or set {ENV_VAR}. "
                + _how_to_get_data()
            )
        root = env
    return Path(root).expanduser()


def _how_to_get_data(name: str = "cifar10") -> str:
    spec = _OFFICIAL.get(name, _OFFICIAL["cifar10"])
    return (
        f"To get {name}: call load_cifar(..., download=True) (or pass --download) with internet "
        f"access to fetch {spec.url} into the data directory; or put {spec.archive} "
        f"(or its extracted folder {spec.folder}/) there yourself"
        + (f"; or, for CIFAR-10 without internet, the lossy copy {JPEG_ARCHIVE}." if name == "cifar10" else ".")
    )


def _file_digest(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verified(path: Path, algorithm: str, expected: str) -> str:
    actual = _file_digest(path, algorithm)
    if actual != expected:
        raise CorruptDataError(f"{path} has {algorithm} {actual}, expected {expected}: the file is corrupt or "
                               "not the published archive; delete it and fetch it again")
    return actual


def download_cifar(name: str = "cifar10", root: str | os.PathLike | None = None) -> Path:
    """Fetch the official archive into ``root`` and verify its MD5; return its path."""
    spec = _check_name(name)
    directory = data_root(root)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / spec.archive
    if not target.exists():
        partial = target.with_suffix(target.suffix + ".part")
        urllib.request.urlretrieve(spec.url, partial)
        partial.replace(target)
    _verified(target, "md5", spec.md5)
    return target


DOWNLOAD_ENV_VAR = "CONVNORM_DOWNLOAD"


def find_cifar(name: str = "cifar10", root: str | os.PathLike | None = None,
               download: bool = False) -> CifarSource:
    """Locate a copy of ``name`` under the data directory (see the module docstring).

    Downloading is allowed by ``download=True`` or by the environment variable
    ``CONVNORM_DOWNLOAD=1`` (which the book's Colab setup cell sets, so every chapter can
    fetch the official archive there without code changes).
    """
    download = download or os.environ.get(DOWNLOAD_ENV_VAR) == "1"
    spec = _check_name(name)
    directory = data_root(root)
    folder, archive = directory / spec.folder, directory / spec.archive
    if folder.is_dir() and all((folder / m).exists() for m in spec.train_members + spec.test_members):
        stamp = hashlib.sha256(repr([(m, (folder / m).stat().st_size, (folder / m).stat().st_mtime_ns)
                                     for m in spec.train_members + spec.test_members]).encode())
        return CifarSource(name, "official", folder, stamp.hexdigest())  # files' sizes and times
    if archive.is_file():
        return CifarSource(name, "official", archive, _verified(archive, "md5", spec.md5))
    jpeg = directory / JPEG_ARCHIVE
    if name == "cifar10" and jpeg.is_file():
        return CifarSource(name, "jpeg-q75", jpeg, _verified(jpeg, "sha256", JPEG_SHA256))
    if download:
        path = download_cifar(name, directory)
        return CifarSource(name, "official", path, spec.md5)
    raise CifarNotFoundError(f"no copy of {name} found in {directory}. " + _how_to_get_data(name))


_CACHE_KEYS = ("train_x", "train_y", "test_x", "test_y")


CACHE_ENV_VAR = "CONVNORM_CACHE_DIR"


def _cache_dir(source: CifarSource) -> Path:
    """Where the decoded arrays of ``source`` live: ``$CONVNORM_CACHE_DIR`` or
    ``~/.cache/convnorm``, never the data directory (which may be shared or read-only)."""
    base = Path(os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "convnorm")
    cache = base / f"{source.name}-{source.kind}-{source.checksum[:12]}"
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OSError(f"cannot create the CIFAR cache directory {cache.parent}; set {CACHE_ENV_VAR} "
                      "to a writable folder") from error
    return cache


def _decode_official(source: CifarSource, spec: _Official) -> dict[str, np.ndarray]:
    members = spec.train_members + spec.test_members
    if source.path.is_dir():
        where = {m: source.path / m for m in members}
        remedy = f"extract {spec.archive} there again"
        raw = {m: where[m].read_bytes() for m in members}
    else:
        where = {m: f"{source.path} (member {spec.folder}/{m})" for m in members}
        remedy = "delete the archive and fetch it again"
        with _reading(source.path, remedy), tarfile.open(source.path, "r:gz") as tar:
            raw = {m: tar.extractfile(f"{spec.folder}/{m}").read() for m in members}
    parts = {}
    for m in members:
        with _reading(where[m], remedy):
            parts[m] = pickle.loads(raw[m], encoding="latin1")
            if not isinstance(parts[m], dict) or "data" not in parts[m] or spec.label_key not in parts[m]:
                raise ValueError(f"not a CIFAR batch (no 'data' and '{spec.label_key}')")
    arrays = {}
    for split, names in (("train", spec.train_members), ("test", spec.test_members)):
        arrays[f"{split}_x"] = np.concatenate([parts[m]["data"] for m in names]).reshape(-1, 3, 32, 32).astype(np.uint8)
        arrays[f"{split}_y"] = np.concatenate([np.asarray(parts[m][spec.label_key]) for m in names]).astype(np.int64)
    return arrays


def _decode_jpegs(path: str, remedy: str, members: list[tuple[str, bytes]]) -> np.ndarray:
    """The pixels ``(N, 3, 32, 32)`` of the 32x32 JPEG files ``members`` (``(name, bytes)``)
    of the archive at ``path``; a damaged one raises :class:`CorruptDataError` naming it."""
    from PIL import Image

    pixels = np.empty((len(members), 3, 32, 32), dtype=np.uint8)
    for i, (name, data) in enumerate(members):
        with _reading(f"{path} (member {name})", remedy):
            pixels[i] = np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).transpose(2, 0, 1)
    return pixels


def _decode_jpeg(source: CifarSource) -> dict[str, np.ndarray]:
    try:
        from PIL import Image  # noqa: F401 (decoding needs it: said here, before any work)
    except ImportError as error:
        raise ModuleNotFoundError(
            f"decoding {source.path} (the JPEG copy of CIFAR-10) needs Pillow: pip install pillow; or put the "
            f"official archive {_OFFICIAL['cifar10'].archive} in {source.path.parent} instead") from error

    remedy = "delete the archive and put a good copy there"
    members: list[tuple[str, str, str, bytes]] = []  # (split, class, file, JPEG bytes), in archive order
    with _reading(source.path, remedy), tarfile.open(source.path, "r:xz") as tar:
        for member in tar:
            parts = member.name.strip("./").split("/")
            if member.isfile() and len(parts) == 3 and parts[2].endswith(".jpg"):
                members.append((*parts, tar.extractfile(member).read()))

    # Opening a 32x32 JPEG costs more interpreter time than decoding it, so threads would wait
    # for each other: processes decode the chunks in parallel (one per core, at most 16)
    workers = max(1, min(16, os.cpu_count() or 1))
    chunks = [[(f"{split}/{cls}/{file}", data) for split, cls, file, data in members[i::workers]]
              for i in range(workers)]
    decode = functools.partial(_decode_jpegs, str(source.path), remedy)
    if workers == 1:
        parts = [decode(chunks[0])]
    else:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(decode, chunks))
    decoded = np.empty((len(members), 3, 32, 32), dtype=np.uint8)
    for i, part in enumerate(parts):
        decoded[i::workers] = part
    images: dict[str, list[tuple[tuple[int, str], np.ndarray]]] = {"train": [], "test": []}
    for (split, cls, file, _), pixels in zip(members, decoded):
        images[split].append(((CIFAR10_CLASSES.index(cls), file), pixels))
    arrays = {}
    for split, items in images.items():
        items.sort(key=lambda item: item[0])
        arrays[f"{split}_x"] = np.stack([pixels for _, pixels in items]).astype(np.uint8)
        arrays[f"{split}_y"] = np.array([key[0] for key, _ in items], dtype=np.int64)
    expected = {"train": 50000, "test": 10000}
    for split, count in expected.items():
        if len(arrays[f"{split}_y"]) != count:
            raise ValueError(f"{source.path} holds {len(arrays[f'{split}_y'])} {split} images, expected {count}")
    return arrays


def cached_arrays(source: CifarSource) -> dict[str, np.ndarray]:
    """The decoded arrays of ``source`` (memory-mapped, read-only), decoding on first use."""
    cache = _cache_dir(source)
    keys = _CACHE_KEYS
    if not all((cache / f"{k}.npy").exists() for k in keys):
        spec = _OFFICIAL[source.name]
        arrays = _decode_jpeg(source) if source.kind == "jpeg-q75" else _decode_official(source, spec)
        tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        for key in keys:
            np.save(tmp / f"{key}.npy", arrays[key])
        try:
            tmp.replace(cache)  # atomic: concurrent first uses do not see half-written files
        except OSError:  # another process finished first
            for key in keys:
                (tmp / f"{key}.npy").unlink()
            tmp.rmdir()
    arrays = {}
    for key in keys:
        with _reading(cache / f"{key}.npy", f"delete the folder {cache} and it is decoded again from {source.path}"):
            arrays[key] = np.load(cache / f"{key}.npy", mmap_mode="r")
    return arrays


@contextlib.contextmanager
def _reading(path: Path | str, remedy: str) -> Iterator[None]:
    """Turn what reading a damaged or truncated file raises into a :class:`CorruptDataError`
    naming ``path`` and the ``remedy``."""
    try:
        yield
    except CorruptDataError:
        raise
    except _READ_ERRORS as error:
        raise CorruptDataError(f"{path} is damaged or truncated ({type(error).__name__}: {error}); {remedy}") from error


def load_cifar(name: str = "cifar10", root: str | os.PathLike | None = None, train: bool = True,
               *, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Load one split of CIFAR-10 or CIFAR-100.

    Args:
        name: ``"cifar10"`` or ``"cifar100"``.
        root: data directory; defaults to ``$CONVNORM_DATA_DIR``.
        train: the 50,000 training images if True, else the 10,000 test images.
        download: fetch the official archive (with MD5 check) if no copy is found.

    Returns:
        ``(images, labels)``: uint8 ``(N, 3, 32, 32)`` and int64 ``(N,)`` tensors.

    Raises:
        CifarNotFoundError: no copy found; the message says how to get one.
    """
    source = find_cifar(name, root, download)
    arrays = cached_arrays(source)
    split = "train" if train else "test"
    return torch.from_numpy(np.array(arrays[f"{split}_x"])), torch.from_numpy(np.array(arrays[f"{split}_y"]))
