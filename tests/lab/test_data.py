"""convnorm_lab.data: the real CIFAR loaders, seeded splits, label noise, subsets, augmentation."""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest
import torch

from cifar_data import cifar_root, random_cifar_root, write_random_cifar10  # noqa: F401 (fixtures)
from convnorm_lab.data import (
    BatchLoader,
    CifarNotFoundError,
    CorruptDataError,
    balanced_subset,
    find_cifar,
    load_cifar,
    random_crop_flip,
    symmetric_label_noise,
    train_val_split,
)


@pytest.mark.data
def test_load_cifar_test_split(cifar_root):
    images, labels = load_cifar("cifar10", cifar_root, train=False)
    assert images.shape == (10000, 3, 32, 32) and images.dtype == torch.uint8
    assert labels.shape == (10000,) and labels.dtype == torch.int64
    assert torch.equal(torch.bincount(labels), torch.full((10,), 1000))
    # a natural image set: per-channel means near the published CIFAR-10 values
    mean = images.float().mean((0, 2, 3)) / 255
    assert torch.allclose(mean, torch.tensor([0.4914, 0.4822, 0.4465]), atol=0.01)
    if find_cifar("cifar10", cifar_root).kind in ("official", "lossless"):
        # the official pixels: the test split's published statistics to four decimals
        std = (images.double() / 255).std((0, 2, 3))
        assert torch.allclose(mean.double(), torch.tensor([0.4942, 0.4851, 0.4504], dtype=torch.float64), atol=6e-5)
        assert torch.allclose(std, torch.tensor([0.2467, 0.2429, 0.2616], dtype=torch.float64), atol=6e-5)


def test_missing_data_says_how_to_get_it(tmp_path, monkeypatch):
    with pytest.raises(CifarNotFoundError,
                       match="download=True.*cifar-10-python.tar.gz.*cifar10-lossless-part1of2.zip.*cifar10-jpeg-q75"):
        load_cifar("cifar10", tmp_path)
    monkeypatch.delenv("CONVNORM_DATA_DIR", raising=False)
    with pytest.raises(CifarNotFoundError, match="CONVNORM_DATA_DIR"):
        load_cifar("cifar10")
    with pytest.raises(ValueError, match="name must be one of"):
        load_cifar("mnist", tmp_path)


def test_corrupt_official_archive_is_rejected(tmp_path):
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"not the archive")
    with pytest.raises(ValueError, match="md5"):
        find_cifar("cifar10", tmp_path)


def official_folder(tmp_path, monkeypatch):
    """An extracted official CIFAR-10 folder of 10 random images per batch (cached in
    ``tmp_path / "cache"``), and its batches by file name."""
    monkeypatch.setenv("CONVNORM_CACHE_DIR", str(tmp_path / "cache"))
    return write_random_cifar10(tmp_path, 10)


def test_extracted_official_folder_is_read(tmp_path, monkeypatch):
    """The python-format reader: batches of 10 rows of 3072 bytes become (N, 3, 32, 32)."""
    folder, batches = official_folder(tmp_path, monkeypatch)
    images, labels = load_cifar("cifar10", tmp_path, train=True)
    assert images.shape == (50, 3, 32, 32)
    first = batches["data_batch_1"]["data"][0]
    assert torch.equal(images[0, 1, 0, :], torch.from_numpy(first[1024:1056]))  # green row 0
    assert labels.tolist() == sum((batches[f"data_batch_{i}"]["labels"] for i in range(1, 6)), [])
    test_images, _ = load_cifar("cifar10", tmp_path, train=False)
    assert test_images.shape == (10, 3, 32, 32)
    # decoded once into $CONVNORM_CACHE_DIR (never into the data folder) and reused
    assert not (folder.parent / ".convnorm-cache").exists()
    cached = list((tmp_path / "cache").glob("cifar10-official-*/train_x.npy"))
    assert len(cached) == 1
    (folder / "data_batch_1").unlink()  # the folder is now incomplete: found no more
    with pytest.raises(CifarNotFoundError):
        load_cifar("cifar10", tmp_path)


def test_validation_split_is_disjoint_stratified_and_seeded():
    labels = torch.arange(10).repeat_interleave(500)
    train, val = train_val_split(labels, 0.1, seed=3)
    assert len(set(train.tolist()) & set(val.tolist())) == 0
    assert sorted(train.tolist() + val.tolist()) == list(range(5000))
    assert torch.equal(torch.bincount(labels[val]), torch.full((10,), 50))
    assert torch.equal(train_val_split(labels, 0.1, seed=3)[1], val)
    assert not torch.equal(train_val_split(labels, 0.1, seed=4)[1], val)
    with pytest.raises(ValueError, match="val_fraction"):
        train_val_split(labels, 1.5)


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5, 0.7])
def test_scarce_subsets_are_class_balanced(fraction):
    labels = torch.arange(10).repeat_interleave(450)
    subset = balanced_subset(labels, fraction, seed=1)
    assert len(torch.unique(subset)) == len(subset)
    assert torch.equal(torch.bincount(labels[subset], minlength=10), torch.full((10,), round(450 * fraction)))


@pytest.mark.parametrize("include_true_class", [True, False])
@pytest.mark.parametrize("rate", [0.2, 0.8])
def test_symmetric_label_noise_statistics(rate, include_true_class):
    n, k = 200_000, 10
    labels = torch.randint(k, (n,), generator=torch.Generator().manual_seed(0))
    noise = symmetric_label_noise(labels, rate, k, seed=1, include_true_class=include_true_class)
    expected = rate * (k - 1) / k if include_true_class else rate
    assert noise.expected_flip_rate == pytest.approx(expected)
    assert abs(noise.flip_rate - expected) < 4 * np.sqrt(expected * (1 - expected) / n)
    assert noise.flip_rate == pytest.approx(float((noise.labels != labels).float().mean()))
    # flipped labels are spread uniformly over the other classes
    flipped = noise.labels != labels
    offsets = (noise.labels[flipped] - labels[flipped]) % k
    counts = torch.bincount(offsets, minlength=k)[1:].float()
    assert float(counts.std() / counts.mean()) < 0.05


def test_label_noise_edge_cases_and_errors():
    labels = torch.arange(10).repeat(100)
    assert torch.equal(symmetric_label_noise(labels, 0.0, 10).labels, labels)
    assert symmetric_label_noise(labels, 1.0, 10, include_true_class=False).flip_rate == 1.0
    with pytest.raises(ValueError, match="rate"):
        symmetric_label_noise(labels, 1.2, 10)
    with pytest.raises(ValueError, match="labels must lie"):
        symmetric_label_noise(labels, 0.2, 5)


def test_random_crop_flip_is_a_shifted_padded_window():
    h = w = 6
    image = (torch.arange(h * w).reshape(1, 1, h, w) + 1).repeat(64, 3, 1, 1)
    out = random_crop_flip(image, torch.Generator().manual_seed(0), padding=2)
    padded = torch.nn.functional.pad(image, (2,) * 4)
    for i in range(64):
        windows = [padded[i, :, a:a + h, b:b + w] for a in range(5) for b in range(5)]
        windows += [win.flip(-1) for win in windows]
        assert any(torch.equal(out[i], win) for win in windows)
    assert (out == 0).any() and (out[:, :, :, 0] == out[:, :, :, 0]).all()
    unflipped = random_crop_flip(image, torch.Generator().manual_seed(0), padding=0, flip=False)
    assert torch.equal(unflipped, image)


def test_batch_loader_is_seeded_per_epoch():
    images = torch.arange(50, dtype=torch.uint8).reshape(50, 1, 1, 1).expand(50, 3, 8, 8).contiguous()
    labels = torch.arange(50)
    loader = BatchLoader(images, labels, batch_size=16, shuffle=True, augment=True, seed=5)
    first = [y for _, y in loader.epoch(2)]
    assert len(first) == len(loader) == 4
    assert sorted(torch.cat(first).tolist()) == list(range(50))
    assert all(torch.equal(a, b) for a, b in zip(first, [y for _, y in loader.epoch(2)]))
    assert not torch.equal(torch.cat(first), torch.cat([y for _, y in loader.epoch(3)]))
    x, _ = next(loader.epoch(0))
    assert x.dtype == torch.float32 and float(x.max()) <= 49 / 255 + 1e-6


def test_a_longer_epoch_passes_over_the_set_in_fresh_orders():
    images = torch.zeros(10, 3, 4, 4, dtype=torch.uint8)
    labels = torch.arange(10)
    once = BatchLoader(images, labels, batch_size=4, shuffle=True, seed=1)
    loader = BatchLoader(images, labels, batch_size=4, shuffle=True, seed=1, epoch_images=25)
    drawn = torch.cat([y for _, y in loader.epoch(0)])
    assert len(loader) == 7 and loader.images_per_epoch == 25 and len(drawn) == 25
    passes = drawn[:10], drawn[10:20], drawn[20:]
    assert all(sorted(p.tolist()) == list(range(10)) for p in passes[:2])  # each pass holds every image once
    assert len(set(passes[2].tolist())) == 5  # the last pass is cut, without repeats
    assert not torch.equal(passes[0], passes[1])  # a fresh order each pass
    # the first pass is the epoch an ordinary loader draws: the setting adds passes, it moves nothing
    assert torch.equal(passes[0], torch.cat([y for _, y in once.epoch(0)]))
    with pytest.raises(ValueError, match="epoch_images"):
        BatchLoader(images, labels, epoch_images=0)


@pytest.mark.data
def test_prepare_cifar_protocol(cifar_root):
    from convnorm_lab.data import prepare_cifar

    splits = prepare_cifar("cifar10", cifar_root, seed=0, train_fraction=0.3, label_noise=0.6,
                           max_val=500, max_test=200)
    idx = splits.indices
    assert len(set(idx["train"].tolist()) & set(idx["val"].tolist())) == 0
    assert splits.info["n_train"] == 10 * round(0.3 * 4500) and len(splits.val[1]) == 500
    assert splits.info["expected_flip_rate"] == pytest.approx(0.54)
    assert abs(splits.info["train_flip_rate"] - 0.54) < 0.03
    # noise touches training and validation labels, never the test labels
    _, clean = load_cifar("cifar10", cifar_root, train=False)
    assert torch.equal(splits.test[1], clean[idx["test"]])
    assert "cifar10" in splits.info["source"]


def test_download_can_be_allowed_by_environment(tmp_path, monkeypatch):
    """CONVNORM_DOWNLOAD=1 (set by the Colab setup cell) lets find_cifar fetch the archive."""
    from convnorm_lab.data import cifar

    fetched = []
    monkeypatch.setattr(cifar, "download_cifar", lambda name, directory: fetched.append(name) or tmp_path / "x")
    with pytest.raises(CifarNotFoundError, match="download=True"):
        find_cifar("cifar10", tmp_path)
    monkeypatch.setenv("CONVNORM_DOWNLOAD", "1")
    assert find_cifar("cifar10", tmp_path).kind == "official"
    assert fetched == ["cifar10"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(label_noise=-0.1), r"label_noise must lie in \[0, 1\]"),
    (dict(label_noise=float("nan")), r"label_noise must lie in \[0, 1\]"),
    (dict(label_noise=1.5), r"label_noise must lie in \[0, 1\]"),
    (dict(val_fraction=0.0), r"val_fraction must lie in \(0, 1\)"),
    (dict(train_fraction=0.0), r"train_fraction must lie in \(0, 1\]"),
    (dict(train_fraction="0.5"), r"train_fraction must lie in \(0, 1\]"),
    (dict(max_train=0), "max_train must be a positive integer"),
    (dict(max_val=-5), "max_val must be a positive integer"),
    (dict(max_test=10.0), "max_test must be a positive integer"),
])
def test_prepare_cifar_names_bad_arguments_before_reading_anything(tmp_path, kwargs, match):
    """Checked first: the (empty) data folder is never looked at."""
    from convnorm_lab.data import prepare_cifar

    with pytest.raises(ValueError, match=match):
        prepare_cifar("cifar10", tmp_path, **kwargs)


@pytest.mark.parametrize("kwargs, split", [
    (dict(max_train=120, train_fraction=0.01), "training"),
    (dict(val_fraction=0.0001), "validation"),
    (dict(max_val=5), "validation"),
    (dict(max_test=4), "test"),
])
def test_prepare_cifar_refuses_arguments_that_empty_a_set(random_cifar_root, kwargs, split):
    """Every class keeps round(fraction x its count) images, which can be 0 for all of them:
    an empty set is refused by name (it used to fail later with a ZeroDivisionError)."""
    from convnorm_lab.data import prepare_cifar

    with pytest.raises(ValueError, match=f"leave the {split} set without images"):
        prepare_cifar("cifar10", random_cifar_root, **kwargs)


def test_a_truncated_cache_file_is_named_with_what_to_do(tmp_path, monkeypatch):
    folder, _ = official_folder(tmp_path, monkeypatch)
    load_cifar("cifar10", tmp_path)
    (cached,) = (tmp_path / "cache").glob("cifar10-official-*/train_x.npy")
    cached.write_bytes(cached.read_bytes()[:100])
    with pytest.raises(CorruptDataError, match=f"{cached} is damaged or truncated .*delete the folder {cached.parent}"):
        load_cifar("cifar10", tmp_path)
    cached.write_bytes(b"")
    with pytest.raises(CorruptDataError, match="EOFError"):
        load_cifar("cifar10", tmp_path)
    assert folder.is_dir()


def test_a_truncated_extracted_file_is_named_with_what_to_do(tmp_path, monkeypatch):
    folder, _ = official_folder(tmp_path, monkeypatch)
    member = folder / "data_batch_3"
    member.write_bytes(member.read_bytes()[:200])
    with pytest.raises(CorruptDataError, match=f"{member} is damaged or truncated .*extract cifar-10-python.tar.gz"):
        load_cifar("cifar10", tmp_path)
    assert not list((tmp_path / "cache").glob("cifar10-*")), "nothing half-written is cached"


@pytest.mark.parametrize("kind", ["jpeg-q75", "lossless"])
def test_the_image_copies_name_pillow_when_it_is_missing(tmp_path, monkeypatch, kind):
    """Pillow is needed only to decode the JPEG and lossless copies; without it the error says so."""
    from convnorm_lab.data.cifar import CifarSource, _decode_image_copy

    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL now raises ImportError
    with pytest.raises(ModuleNotFoundError, match=f"the {kind} copy of CIFAR-10.*needs Pillow: pip install pillow"):
        _decode_image_copy(CifarSource("cifar10", kind, tmp_path / "copy", "0" * 64))


def test_a_truncated_jpeg_archive_is_named(tmp_path):
    import tarfile

    from convnorm_lab.data.cifar import CifarSource, _decode_image_copy

    archive = tmp_path / "cifar10-jpeg-q75.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        for i in range(50):
            data = np.random.default_rng(i).bytes(4000)
            info = tarfile.TarInfo(f"train/cat/{i:04d}.jpg")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive.write_bytes(archive.read_bytes()[:3000])
    with pytest.raises(CorruptDataError, match=f"{archive} is damaged or truncated"):
        _decode_image_copy(CifarSource("cifar10", "jpeg-q75", archive, "0" * 64))


def test_a_damaged_jpeg_is_named_by_the_process_that_decodes_it(tmp_path):
    """The copy is decoded by several processes; a member that is not a JPEG is still
    named in the error, whichever process met it."""
    import tarfile

    from PIL import Image

    from convnorm_lab.data.cifar import CifarSource, _decode_image_copy

    archive = tmp_path / "cifar10-jpeg-q75.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        for i in range(8):
            buffer = io.BytesIO()
            Image.fromarray(np.full((32, 32, 3), i, np.uint8)).save(buffer, "JPEG")
            data = buffer.getvalue() if i != 5 else b"not a jpeg"
            info = tarfile.TarInfo(f"train/cat/{i:04d}.jpg")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(CorruptDataError, match=r"\(member train/cat/0005.jpg\) is damaged or truncated"):
        _decode_image_copy(CifarSource("cifar10", "jpeg-q75", archive, "0" * 64))


def lossless_copy(folder, monkeypatch, per_class=(2, 1)):
    """A lossless copy in ``folder``: two zip parts of WebP files, ``per_class`` (train, test)
    random images for each class, the parts' checksums made the expected ones; the pixels of
    each split in the order the loader must give them (class, then file name)."""
    import hashlib
    import zipfile

    from PIL import Image

    from convnorm_lab.data import cifar

    monkeypatch.setattr(cifar, "_SPLIT_SIZES", {"train": per_class[0], "test": per_class[1]})
    rng = np.random.default_rng(0)
    expected = {"train": [], "test": []}
    parts = []
    for number, classes in enumerate((cifar.CIFAR10_CLASSES[:5], cifar.CIFAR10_CLASSES[5:]), start=1):
        path = folder / f"cifar10-lossless-part{number}of2.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
            for split, count in zip(("train", "test"), per_class):
                for cls in classes:
                    names = [f"{cls}_s_{rng.integers(10**6):06d}" for _ in range(count)]
                    for name in names:  # written out of name order: the loader sorts
                        pixels = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                        buffer = io.BytesIO()
                        Image.fromarray(pixels).save(buffer, "WEBP", lossless=True)
                        archive.writestr(f"{split}/{cls}/{name}.webp", buffer.getvalue())
                        expected[split].append((cifar.CIFAR10_CLASSES.index(cls), name, pixels.transpose(2, 0, 1)))
        parts.append((path.name, hashlib.sha256(path.read_bytes()).hexdigest()))
    monkeypatch.setattr(cifar, "LOSSLESS_PARTS", tuple(parts))
    return {split: sorted(items, key=lambda item: item[:2]) for split, items in expected.items()}


def test_the_lossless_copy_is_read_pixel_for_pixel_in_class_and_name_order(tmp_path, monkeypatch):
    monkeypatch.setenv("CONVNORM_CACHE_DIR", str(tmp_path / "cache"))
    expected = lossless_copy(tmp_path, monkeypatch)
    source = find_cifar("cifar10", tmp_path)
    assert source.kind == "lossless" and "lossless" in source.description and "lossy" not in source.description
    for train in (True, False):
        images, labels = load_cifar("cifar10", tmp_path, train=train)
        items = expected["train" if train else "test"]
        assert labels.tolist() == [label for label, _, _ in items]
        assert torch.equal(images, torch.from_numpy(np.stack([pixels for _, _, pixels in items])))
    assert len(list((tmp_path / "cache").glob("cifar10-lossless-*/train_x.npy"))) == 1


def test_copies_are_preferred_official_then_lossless_then_jpeg_and_can_be_asked_for(tmp_path, monkeypatch):
    from convnorm_lab.data import cifar

    lossless_copy(tmp_path, monkeypatch)
    (tmp_path / cifar.JPEG_ARCHIVE).write_bytes(b"jpeg")
    monkeypatch.setattr(cifar, "JPEG_SHA256", __import__("hashlib").sha256(b"jpeg").hexdigest())
    assert find_cifar("cifar10", tmp_path).kind == "lossless"
    assert find_cifar("cifar10", tmp_path, copy="jpeg-q75").kind == "jpeg-q75"
    with pytest.raises(CifarNotFoundError, match="no copy of the 'official' copy of cifar10"):
        find_cifar("cifar10", tmp_path, copy="official")
    official_folder(tmp_path, monkeypatch)
    assert find_cifar("cifar10", tmp_path).kind == "official"
    with pytest.raises(ValueError, match="copy must be None or one of"):
        find_cifar("cifar10", tmp_path, copy="png")
    with pytest.raises(ValueError, match="copy='lossless' exists for cifar10 only"):
        find_cifar("cifar100", tmp_path, copy="lossless")


@pytest.mark.parametrize("missing", [0, 1])
def test_one_part_of_the_lossless_copy_alone_is_named_in_one_line(tmp_path, monkeypatch, missing):
    """Part 1 travels in one device call and part 2 in the next: half a copy is never read,
    nor silently passed over for another copy."""
    from convnorm_lab.data import cifar

    lossless_copy(tmp_path, monkeypatch)
    (tmp_path / cifar.JPEG_ARCHIVE).write_bytes(b"a copy that must not be taken instead")
    name = cifar.LOSSLESS_PARTS[missing][0]
    (tmp_path / name).unlink()
    with pytest.raises(CifarNotFoundError, match=f"holds part of the lossless CIFAR-10 copy but not {name}") as error:
        find_cifar("cifar10", tmp_path)
    assert "\n" not in str(error.value)


def test_a_damaged_part_of_the_lossless_copy_is_named(tmp_path, monkeypatch):
    from convnorm_lab.data import cifar

    lossless_copy(tmp_path, monkeypatch)
    part = tmp_path / cifar.LOSSLESS_PARTS[1][0]
    part.write_bytes(part.read_bytes()[:-100])
    with pytest.raises(CorruptDataError, match=f"{part} has sha256 .* expected {cifar.LOSSLESS_PARTS[1][1]}"):
        find_cifar("cifar10", tmp_path)


def test_a_damaged_or_missing_image_of_the_lossless_copy_is_named(tmp_path, monkeypatch):
    """Each part's checksum is checked when it is found; decoding still names a bad member
    (a copy re-made with a wrong file) and a class short of images."""
    import zipfile

    from convnorm_lab.data.cifar import CifarSource, _decode_image_copy

    lossless_copy(tmp_path, monkeypatch)
    source = CifarSource("cifar10", "lossless", tmp_path, "0" * 64)
    part = tmp_path / "cifar10-lossless-part2of2.zip"
    with zipfile.ZipFile(part, "a") as archive:
        archive.writestr("test/ship/zzz_not_an_image.webp", b"not a webp")
    with pytest.raises(CorruptDataError, match=r"\(member test/ship/zzz_not_an_image.webp\) is damaged"):
        _decode_image_copy(source)
    with zipfile.ZipFile(part, "w") as archive:  # part 2 emptied: classes 5-9 have no images
        pass
    with pytest.raises(CorruptDataError, match=r"holds \[2, 2, 2, 2, 2, 0, 0, 0, 0, 0\] distinct train images"):
        _decode_image_copy(source)
