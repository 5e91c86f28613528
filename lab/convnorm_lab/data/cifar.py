"""Finding, decoding and caching CIFAR-10/100.

Three copies of the data are understood, looked for in this order under a data
directory ``root`` (an argument, else the environment variable ``CONVNORM_DATA_DIR``):

1. ``"official"``: the official python-format archive, extracted (``cifar-10-batches-py/``,
   ``cifar-100-python/``) or not (``cifar-10-python.tar.gz``, ``cifar-100-python.tar.gz``);
   its MD5 is checked against the value published on the dataset's home page;
2. ``"lossless"``, for CIFAR-10 only: the official images as WebP-lossless files in two zip
   archives, :data:`LOSSLESS_PARTS` (``train/<class>/<original name>.webp``; both parts must
   be present, each SHA-256 is checked). The pixels are the official ones; the order of the
   official batches is not recoverable, so images come grouped by class in the official class
   order and sorted by file name within a class;
3. ``"jpeg-q75"``, for CIFAR-10 only: a lossy JPEG copy ``cifar10-jpeg-q75.tar.xz`` (one JPEG
   per image, ``train/<class>/NNNN.jpg``; its SHA-256 is checked). Images come grouped by
   class, in the official order within each class.

``copy=`` asks for one of these by name instead of the first found (to compare copies).

With ``download=True`` the official archive is fetched into ``root`` first when no copy
is found (Colab). Whatever the copy, it is decoded once into uint8 ``.npy`` arrays in a
cache directory (``$CONVNORM_CACHE_DIR``, else ``~/.cache/convnorm``; never the data
directory, which may be shared or read-only) and later loads read those. Nothing here ever
invents data: if no copy is found, :class:`CifarNotFoundError` says how to get one; a damaged
copy or cache raises :class:`CorruptDataError` naming the file and what to do. Decoding the
lossless and the JPEG copies needs Pillow (imported only then).
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
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ENV_VAR = "CONVNORM_DATA_DIR"
JPEG_ARCHIVE = "cifar10-jpeg-q75.tar.xz"
JPEG_SHA256 = "40018c4988ba5c3d6dc7ffa3770d18459599d3c5ce27fa139a8dcff040451741"
LOSSLESS_PARTS = (
    ("cifar10-lossless-part1of2.zip", "5565c77e30eb82f53563d27a49246ff12acf2b2bf4e006199ef8ce1ed8743237"),
    ("cifar10-lossless-part2of2.zip", "241e6f49c374af6e4fd46a3cf8125dcfd793e88669e2e76b78d92b597d8b35a6"),
)
"""The lossless copy's two zip archives (classes 0-4 and 5-9) and their SHA-256."""
COPIES = ("official", "lossless", "jpeg-q75")
"""The copies :func:`find_cifar` knows, in the order it looks for them."""
_SPLIT_SIZES = {"train": 5000, "test": 1000}
"""Images per class in each split of CIFAR-10."""
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


_READ_ERRORS = (OSError, EOFError, ValueError, pickle.UnpicklingError, tarfile.TarError, lzma.LZMAError, zlib.error,
                zipfile.BadZipFile)
"""What reading a truncated or damaged archive, pickle or ``.npy`` file raises."""


@dataclass(frozen=True)
class CifarSource:
    """Where a data set comes from: ``kind`` is one of :data:`COPIES`; ``path`` the archive or
    extracted folder (for ``"lossless"``, the folder holding its two parts)."""

    name: str
    kind: str
    path: Path
    checksum: str

    @property
    def description(self) -> str:
        """One line for result files and captions: which copy, and whether it is lossy."""
        if self.kind == "jpeg-q75":
            return (f"{self.name}: lossy JPEG-q75 copy {self.path.name} (sha256 {self.checksum[:12]}…); "
                    "absolute accuracies are not comparable with those on the official files")
        if self.kind == "lossless":
            parts = " and ".join(part for part, _ in LOSSLESS_PARTS)
            return (f"{self.name}: the official images, lossless copy ({parts}, sha256 of both "
                    f"{self.checksum[:12]}…), by file name within each class")
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
        + (f"; or, for CIFAR-10 without internet, the lossless copy's two parts "
           f"{' and '.join(part for part, _ in LOSSLESS_PARTS)} (or the lossy copy {JPEG_ARCHIVE})."
           if name == "cifar10" else ".")
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
               download: bool = False, copy: str | None = None) -> CifarSource:
    """Locate a copy of ``name`` under the data directory (see the module docstring).

    ``copy`` (one of :data:`COPIES`) asks for that copy alone; None takes the first found.
    Downloading (of the official archive only) is allowed by ``download=True`` or by the
    environment variable ``CONVNORM_DOWNLOAD=1`` (which the book's Colab setup cell sets, so
    every chapter can fetch the official archive there without code changes).

    Raises:
        CifarNotFoundError: no copy (or not the one asked for); also one part of the lossless
            copy without the other, naming the missing part.
        CorruptDataError: a copy whose checksum is wrong, naming the file.
    """
    download = download or os.environ.get(DOWNLOAD_ENV_VAR) == "1"
    spec = _check_name(name)
    if copy is not None and copy not in COPIES:
        raise ValueError(f"copy must be None or one of {list(COPIES)}, got {copy!r}")
    if copy not in (None, "official") and name != "cifar10":
        raise ValueError(f"copy={copy!r} exists for cifar10 only, not {name}")
    directory = data_root(root)
    wanted = COPIES if copy is None else (copy,)
    for kind in wanted:
        source = _FINDERS[kind](name, spec, directory) if name == "cifar10" or kind == "official" else None
        if source is not None:
            return source
    if download and "official" in wanted:
        path = download_cifar(name, directory)
        return CifarSource(name, "official", path, spec.md5)
    which = name if copy is None else f"the {copy!r} copy of {name}"
    raise CifarNotFoundError(f"no copy of {which} found in {directory}. " + _how_to_get_data(name))


def _find_official(name: str, spec: _Official, directory: Path) -> CifarSource | None:
    folder, archive = directory / spec.folder, directory / spec.archive
    members = spec.train_members + spec.test_members
    if folder.is_dir() and all((folder / m).exists() for m in members):
        stamp = hashlib.sha256(repr([(m, (folder / m).stat().st_size, (folder / m).stat().st_mtime_ns)
                                     for m in members]).encode())
        return CifarSource(name, "official", folder, stamp.hexdigest())  # files' sizes and times
    if archive.is_file():
        return CifarSource(name, "official", archive, _verified(archive, "md5", spec.md5))
    return None


def _find_lossless(name: str, spec: _Official, directory: Path) -> CifarSource | None:
    present = [(directory / part).is_file() for part, _ in LOSSLESS_PARTS]
    if not any(present):
        return None
    if not all(present):
        missing = ", ".join(part for (part, _), here in zip(LOSSLESS_PARTS, present) if not here)
        raise CifarNotFoundError(f"{directory} holds part of the lossless CIFAR-10 copy but not {missing}: "
                                 "put both parts there (or remove the one there to use another copy)")
    digests = [_verified(directory / part, "sha256", digest) for part, digest in LOSSLESS_PARTS]
    return CifarSource(name, "lossless", directory, hashlib.sha256("".join(digests).encode()).hexdigest())


def _find_jpeg(name: str, spec: _Official, directory: Path) -> CifarSource | None:
    jpeg = directory / JPEG_ARCHIVE
    if not jpeg.is_file():
        return None
    return CifarSource(name, "jpeg-q75", jpeg, _verified(jpeg, "sha256", JPEG_SHA256))


_FINDERS = {"official": _find_official, "lossless": _find_lossless, "jpeg-q75": _find_jpeg}
"""How each of :data:`COPIES` is found in a data directory (None when it is not there)."""


_CACHE_KEYS = ("train_x", "train_y", "test_x", "test_y")


CACHE_ENV_VAR = "CONVNORM_CACHE_DIR"


def _cache_dir(source: CifarSource) -> Path:
    """Where the decoded arrays of ``source`` live: ``$CONVNORM_CACHE_DIR`` or
    ``~/.cache/convnorm``, never the data directory (which may be shared or read-only)."""
    base = Path(os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache/convnorm")
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


def _decode_images(remedy: str, members: list[tuple[str, bytes]]) -> np.ndarray:
    """The pixels ``(N, 3, 32, 32)`` of the 32x32 image files ``members`` (``(where, bytes)``,
    JPEG or WebP); a damaged one raises :class:`CorruptDataError` naming it."""
    from PIL import Image

    pixels = np.empty((len(members), 3, 32, 32), dtype=np.uint8)
    for i, (where, data) in enumerate(members):
        with _reading(where, remedy):
            pixels[i] = np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).transpose(2, 0, 1)
    return pixels


def _require_pillow(source: CifarSource) -> None:
    try:
        from PIL import Image  # noqa: F401 (decoding needs it: said here, before any work)
    except ImportError as error:
        raise ModuleNotFoundError(
            f"decoding {source.path} (the {source.kind} copy of CIFAR-10) needs Pillow: pip install pillow; or put "
            f"the official archive {_OFFICIAL['cifar10'].archive} in {source.path.parent} instead") from error


def _read_jpeg_members(source: CifarSource, remedy: str) -> list[tuple[str, str, str, str, bytes]]:
    members = []
    with _reading(source.path, remedy), tarfile.open(source.path, "r:xz") as tar:
        for member in tar:
            parts = member.name.strip("./").split("/")
            if member.isfile() and len(parts) == 3 and parts[2].endswith(".jpg"):
                members.append((*parts, f"{source.path} (member {'/'.join(parts)})", tar.extractfile(member).read()))
    return members


def _read_lossless_members(source: CifarSource, remedy: str) -> list[tuple[str, str, str, str, bytes]]:
    members = []
    for part, _ in LOSSLESS_PARTS:
        path = source.path / part
        with _reading(path, remedy), zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                parts = info.filename.split("/")
                if not info.is_dir() and len(parts) == 3 and parts[2].endswith(".webp"):
                    members.append((*parts, f"{path} (member {info.filename})", archive.read(info)))
    return members


def _decode_image_copy(source: CifarSource) -> dict[str, np.ndarray]:
    """The arrays of a copy stored as one image file per picture, ``<split>/<class>/<file>``:
    grouped by class in the official class order, sorted by file name within a class."""
    _require_pillow(source)
    remedy = "delete it and put a good copy there"
    read = _read_jpeg_members if source.kind == "jpeg-q75" else _read_lossless_members
    members = read(source, remedy)  # (split, class, file, where, bytes), in archive order
    for split, cls, _, where, _ in members:
        if split not in _SPLIT_SIZES or cls not in CIFAR10_CLASSES:
            raise CorruptDataError(f"{where} is not a CIFAR-10 image: {split}/{cls}/ is not a split and class "
                                   f"({', '.join(CIFAR10_CLASSES)}); {remedy}")

    # Opening a 32x32 image costs more interpreter time than decoding it, so threads would wait
    # for each other: processes decode the chunks in parallel (one per core, at most 16)
    workers = max(1, min(16, os.cpu_count() or 1))
    chunks = [[(where, data) for *_, where, data in members[i::workers]] for i in range(workers)]
    decode = functools.partial(_decode_images, remedy)
    if workers == 1:
        parts = [decode(chunks[0])]
    else:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(decode, chunks))
    decoded = np.empty((len(members), 3, 32, 32), dtype=np.uint8)
    for i, part in enumerate(parts):
        decoded[i::workers] = part
    images: dict[str, list[tuple[tuple[int, str], np.ndarray]]] = {split: [] for split in _SPLIT_SIZES}
    for (split, cls, file, _, _), pixels in zip(members, decoded):
        images[split].append(((CIFAR10_CLASSES.index(cls), file), pixels))
    arrays = {}
    for split, items in images.items():
        items.sort(key=lambda item: item[0])
        labels = np.array([key[0] for key, _ in items], dtype=np.int64)
        counts = np.bincount(labels, minlength=len(CIFAR10_CLASSES))
        if not (counts == _SPLIT_SIZES[split]).all() or len({key for key, _ in items}) != len(items):
            raise CorruptDataError(f"{source.path} holds {counts.tolist()} distinct {split} images per class, expected "
                                   f"{_SPLIT_SIZES[split]} of each: the copy is incomplete; {remedy}")
        arrays[f"{split}_x"] = np.stack([pixels for _, pixels in items]).astype(np.uint8)
        arrays[f"{split}_y"] = labels
    return arrays


def cached_arrays(source: CifarSource) -> dict[str, np.ndarray]:
    """The decoded arrays of ``source`` (memory-mapped, read-only), decoding on first use."""
    cache = _cache_dir(source)
    keys = _CACHE_KEYS
    if not all((cache / f"{k}.npy").exists() for k in keys):
        spec = _OFFICIAL[source.name]
        arrays = _decode_official(source, spec) if source.kind == "official" else _decode_image_copy(source)
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
               *, download: bool = False, copy: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Load one split of CIFAR-10 or CIFAR-100.

    Args:
        name: ``"cifar10"`` or ``"cifar100"``.
        root: data directory; defaults to ``$CONVNORM_DATA_DIR``.
        train: the 50,000 training images if True, else the 10,000 test images.
        download: fetch the official archive (with MD5 check) if no copy is found.
        copy: one of :data:`COPIES` to read that copy alone; None: the first found.

    Returns:
        ``(images, labels)``: uint8 ``(N, 3, 32, 32)`` and int64 ``(N,)`` tensors.

    Raises:
        CifarNotFoundError: no copy found; the message says how to get one.
    """
    source = find_cifar(name, root, download, copy)
    arrays = cached_arrays(source)
    split = "train" if train else "test"
    return torch.from_numpy(np.array(arrays[f"{split}_x"])), torch.from_numpy(np.array(arrays[f"{split}_y"]))
