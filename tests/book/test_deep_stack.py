"""convnorm_book.deep_stack: random stacks of circular convolutions, plain and with ConvNorm, and their
energy curves."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from convnorm_book.deep_stack import (
    compare_stacks,
    draw_energies,
    legend_handles,
    power_spectrum,
    propagate,
    random_kernels,
    stack_table,
)


def signals(channels: int) -> torch.Tensor:
    return torch.randn(4, channels, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))


def test_kernels_have_the_stated_shape_scale_and_sign():
    kernels = random_kernels(3, 4, 5, 2.0, seed=1)
    assert len(kernels) == 3 and all(w.shape == (4, 4, 5) for w in kernels)
    again = random_kernels(3, 4, 5, 1.0, seed=1)
    assert all(torch.allclose(w, 2 * v) for w, v in zip(kernels, again))  # same draw, scaled
    assert all((w >= 0).all() for w in random_kernels(2, 3, 3, 1.0, positive=True))


def test_plain_stack_is_circular_convolution_and_energies_are_relative():
    x, (w,) = signals(2), random_kernels(1, 2, 3, 1.0)
    energies, out = propagate(x, [w], normalize=False)
    assert torch.allclose(out, F.conv1d(F.pad(x, (1, 1), mode="circular"), w))
    assert energies[0] == 1 and np.isclose(energies[1], float(out.square().sum() / x.square().sum()))


def test_one_channel_convnorm_stack_is_all_pass():
    x = signals(1)
    energies, out = propagate(x, random_kernels(10, 1, 3, 0.3, seed=2), normalize=True)
    assert np.allclose(energies, 1) and np.allclose(power_spectrum(out), power_spectrum(x))


def test_convnorm_stack_forgets_the_weight_scale():
    x = signals(3)
    small = propagate(x, random_kernels(5, 3, 3, 0.1, seed=4), normalize=True)[1]
    large = propagate(x, random_kernels(5, 3, 3, 10.0, seed=4), normalize=True)[1]
    assert torch.allclose(small, large)


def test_power_spectrum_is_the_mean_rfft_power():
    x = signals(2)
    assert np.allclose(power_spectrum(x), (np.abs(np.fft.rfft(x.numpy(), axis=-1)) ** 2).mean(axis=(0, 1)))


@pytest.mark.parametrize("kwargs, match", [(dict(depth=0), "depth"), (dict(scale=0.0), "scale")])
def test_bad_arguments_are_refused(kwargs, match):
    arguments = dict(depth=2, channels=2, taps=3, scale=1.0) | kwargs
    with pytest.raises(ValueError, match=match):
        random_kernels(**arguments)


def test_even_kernels_are_refused():
    with pytest.raises(ValueError, match="odd"):
        propagate(signals(1), random_kernels(1, 1, 2, 1.0), normalize=False)


def test_compare_stacks_runs_both_ways_on_the_same_kernels():
    x = signals(2)
    runs = compare_stacks(x, depth=3, taps=3, scales=(0.5, 2.0), seed=5)
    assert sorted(runs) == ["ConvNorm, scale 0.5", "ConvNorm, scale 2.0", "plain, scale 0.5", "plain, scale 2.0"]
    energies, spectrum = runs["plain, scale 2.0"]
    expected, out = propagate(x, random_kernels(3, 2, 3, 2.0, seed=5), normalize=False)
    assert np.allclose(energies, expected) and np.allclose(spectrum, power_spectrum(out))


def test_the_energies_are_drawn_solid_with_convnorm_and_dashed_without():
    runs = compare_stacks(signals(1), depth=4, taps=3, scales=(0.5, 2.0), seed=5)
    fig, ax = plt.subplots()
    draw_energies(ax, runs)
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == list(runs)
    assert [line.get_linestyle() for line in lines] == ["--" if label.startswith("plain") else "-" for label in runs]
    assert all(np.allclose(line.get_ydata(), runs[line.get_label()][0]) for line in lines)
    plt.close(fig)


def test_a_scale_has_one_colour_and_the_legend_one_entry_per_scale_and_per_method():
    runs = compare_stacks(signals(1), depth=2, taps=3, scales=(0.5, 1.0, 2.0), seed=5)
    fig, ax = plt.subplots()
    draw_energies(ax, runs)
    colours = {line.get_label(): line.get_color() for line in ax.get_lines()}
    for scale in (0.5, 1.0, 2.0):
        assert colours[f"plain, scale {scale}"] == colours[f"ConvNorm, scale {scale}"]
    assert len(set(colours.values())) == 3
    handles = legend_handles(runs)
    assert [h.get_label() for h in handles] == ["scale 0.5", "scale 1.0", "scale 2.0", "plain", "ConvNorm"]
    assert [h.get_linestyle() for h in handles[3:]] == ["--", "-"]
    plt.close(fig)


def test_the_table_has_a_row_per_run_with_its_last_energy_and_spectral_spread():
    runs = compare_stacks(signals(2), depth=3, taps=3, scales=(0.5, 2.0), seed=5)
    table = stack_table(runs, "after 3 layers")
    assert [row[:2] for row in table.rows] == [[label.split("scale ")[1], label.split(",")[0]] for label in runs]
    for row, (energies, spectrum) in zip(table.rows, runs.values()):
        assert float(row[2]) == pytest.approx(energies[-1], rel=0.06)
        assert float(row[3]) == pytest.approx(spectrum.max() / spectrum.min(), rel=0.06)
