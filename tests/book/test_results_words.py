"""convnorm_book.results.words: settings and numbers in a reader's words, read from the
presets (nothing typed)."""
from __future__ import annotations

from dataclasses import replace

from convnorm_book.results import words
from convnorm_lab.experiments import PRESETS


def test_protocol_words_read_the_preset():
    cpu, fast = PRESETS["cpu"], PRESETS["fast"]
    assert words.data_sizes(cpu) == "5,000 training, 1,000 validation and 2,000 test images"
    assert words.data_sizes(fast) == "45,000 training, 5,000 validation and 10,000 test images"
    assert words.schedule(cpu) == "8 epochs, the learning rate divided by 10 after epochs 5 and 7"
    assert words.schedule(cpu, adversarial=True) == "3 epochs, the learning rate divided by 10 after epoch 2"
    assert words.schedule(cpu, decay=False) == "8 epochs at a constant learning rate"
    assert words.schedule(fast).startswith(
        f"{fast.epochs} epochs on a one-cycle schedule (a linear warm-up over 20 % of the steps")
    assert words.schedule(fast, decay=False).endswith("after a linear warm-up over 20 % of the steps")
    assert words.optimizer(replace(cpu, lr_reductions=(1,))) == \
        "SGD with momentum 0.9 at a learning rate of 0.1 (batch 128) and weight decay 0.0001"
    assert words.optimizer(cpu).startswith(  # each network's rate, by the learning-rate rule
        "SGD with momentum 0.9 at each network's learning rate, 0.1 or the smaller one the learning-rate rule chose")
    assert words.optimizer(fast, regularize=False).startswith(
        "SGD with Nesterov momentum 0.9 at each network's learning rate, 0.4 or")
    assert words.optimizer(fast, regularize=False).endswith("and no weight decay")
    changed = replace(cpu, epochs=12, milestones=(9,), batch_size=64)
    assert words.schedule(changed) == "12 epochs, the learning rate divided by 10 after epoch 9"
    assert "(batch 64)" in words.optimizer(changed)


def test_numbers_by_size():
    assert words.number(123.4) == "123" and words.number(0.5) == "0.50" and words.number(0.0497) == "0.0497"
    assert words.number(2.19e-5) == "2.19 × 10⁻⁵" and words.number(1.39e-5, like=2.19e-5) == "1.39 × 10⁻⁵"
    assert words.percent(0.2) == "20 %" and words.percent(0.125) == "12.5 %"
