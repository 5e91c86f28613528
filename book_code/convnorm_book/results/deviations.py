"""Where each preset departs from the paper's protocol, and the choices the paper leaves
open, in a reader's words: the rows of the appendix's deviations table
(:func:`~convnorm_book.results.provenance.deviations_table`). The values are the lab's
(presets, each normalization's declaration, the experiments' shared settings); the
sentences that give their sources and reasons are the book's, here."""
from __future__ import annotations

from convnorm_lab.experiments import PRESETS, get_preset
from convnorm_lab.experiments.context import FREE_REPLAYS, RAMP_FRACTION
from convnorm_lab.experiments.experiment import networks_in_words, training_images
from convnorm_lab.experiments.learning_rate import MARGIN, TRIAL_SEED
from convnorm_lab.experiments.presets import scarcity_epoch_images, training_steps
from convnorm_lab.models.normalizations import CONVNORM, NORMALIZATIONS, OCNN, ONI

from .words import listing, schedule


def _count(value: int | None, full: str) -> str:
    return full if value is None else f"{value:,}"


def protocol_deviations(name: str) -> list[dict[str, str]]:
    """Every setting in which preset ``name`` differs from the paper's protocol, and the
    settings the paper leaves open, with where the value used comes from and why.

    Each row: ``setting``; ``paper`` (what the paper states, or "not stated");
    ``here`` (what preset ``name`` does); ``source`` of the value used here: ``"paper"``,
    ``"authors' code"`` or ``"this book"`` (a compression or a choice of ours); and
    ``reason``.
    """
    p, ref = get_preset(name), PRESETS["paper"]
    rows = []

    def row(setting, paper, here, source, reason):
        rows.append({"setting": setting, "paper": paper, "here": here, "source": source, "reason": reason})

    if p.arch is not None:
        row("network", "ResNet18 (VGG16 in the convergence study)", networks_in_words(p),
            "this book", "a network small enough to train on a laptop's processor")
    if (p.epochs, p.milestones, p.schedule) != (ref.epochs, ref.milestones, ref.schedule):
        row("schedule (CIFAR-10)", schedule(ref), schedule(p), "this book",
            "a schedule that fits the minutes a reader's GPU, or a short GPU session, has"
            + ("; the rate stays high for most of a short schedule (the paper: a third), so that the network is "
               "trained before the rate falls" if p.schedule == "step" else
               "; the one-cycle shape is how the fast-CIFAR recipes reach full accuracy in few epochs, and the "
               "length is the shortest expected to bring the BatchNorm ResNet18 to the accuracy floor (shorter "
               "ones fell short on a GPU)"))
    if p.batch_size != ref.batch_size or p.lr != ref.lr:
        row("batch size and learning rate", f"batch not stated (authors' code: {ref.batch_size}), lr {ref.lr:g}",
            f"batch {p.batch_size}, lr {p.lr:g}", "this book",
            "a large batch fills the GPU; the rate is scaled linearly with the batch (the usual rule), "
            "with a warm-up so that the large rate does not diverge in the first steps")
    else:
        row("batch size and learning rate", f"batch not stated (authors' code: {ref.batch_size}), lr {ref.lr:g}",
            f"batch {p.batch_size}, lr {p.lr:g}", "authors' code", "the paper does not state the batch")
    if p.lr_reductions != ref.lr_reductions:
        reductions = listing(p.lr_reductions)
        row("learning rate of each network", f"{ref.lr:g} for every network (ONI: a tenth)",
            f"chosen for each network by one rule on validation data: trained on seed {TRIAL_SEED}'s data at its own "
            f"rate divided by {reductions}, a network keeps its own rate unless another reaches a best validation "
            f"accuracy more than {MARGIN * 100:g} points higher", "this book",
            "a network without BatchNorm may need a lower rate than the recipe's; the same trials for every "
            "network tune none more than another (the learning-rate rule, below)")
    if p.nesterov:
        row("momentum", "SGD, momentum 0.9", "SGD, Nesterov momentum 0.9", "this book",
            "the fast-CIFAR recipes use Nesterov momentum; it changes the update, not the network")
    if p.weight_decay != ref.weight_decay:
        row("weight decay", f"{ref.weight_decay:g}", f"{p.weight_decay:g}", "this book",
            "short schedules need stronger regularization to reach full accuracy (the fast-CIFAR recipes' value); "
            "every method gets the same")
    if p.precision != ref.precision:
        baselines = ", ".join(f"{n.label}'s {n.float32}" for n in NORMALIZATIONS.values()
                              if n.float32 is not None and n is not CONVNORM.base)
        row("arithmetic", "float32 (not stated)", "mixed precision: bfloat16 where the GPU has it, float16 with "
            f"loss scaling where it does not; each ConvNorm layer (its {CONVNORM.base.float32}) in float32, and so "
            f"each baseline's reparametrization ({baselines})", "this book",
            "about twice the speed on tensor cores; the transforms stay exact enough in float32, and every "
            "method's normalization of its weights is computed in the same precision, so that none is favoured")
    divisor, penalty = ONI.base.lr_divisor, OCNN.base.penalty
    row("ONI learning rate", "0.01 (0.1 gives NaN)", f"the base rate / {divisor} ({p.lr / divisor:g})",
        "paper", "the paper's footnote")
    row("OCNN penalty", "λ = 0.01 (chosen on validation); 0.0001 in the adversarial study",
        f"λ = {penalty.weight:g}; {penalty.adversarial_weight:g} in the adversarial study, on every convolution",
        "this book", "the paper states λ but not which layers carry the penalty (the authors' code: each "
        "block's first convolution and the shortcuts); every convolution is the method as its authors "
        "(Wang et al.) define it")
    row("baselines with BatchNorm", "not stated", "in the adversarial, label-noise and data-scarcity studies SN, "
        "ONI and OCNN are each followed by BatchNorm, like ConvNorm; in SimBA and conditioning no network has "
        "BatchNorm", "this book", "so that each method differs from the BN network in its normalization alone, as "
        "ConvNorm+BN does (the authors' ConvNorm has its BatchNorm built in)")
    row("ConvNorm's running normalizer", "not stated (authors' code: a cosine ramp over 40,000 training steps)",
        f"the same ramp over {RAMP_FRACTION:.1%} of the training's steps", "this book",
        "40,000 steps are that share of the paper's 42,240; a fixed 40,000 would leave a short training on the "
        "ramp's first stretch, where evaluation uses the last weights' normalizer alone")
    row("free adversarial training", "the method of Shafahi et al. (length not stated)",
        schedule(p, adversarial=True) + f", each minibatch replayed {FREE_REPLAYS} times; the perturbation "
        "is carried from one minibatch to the next", "this book",
        "carrying the perturbation is the method as Shafahi et al. define it (the authors' code resets it each "
        "minibatch)" + ("" if p.adv_epochs == ref.adv_epochs else "; the length is compressed like the main "
                        "schedule (authors' code: 30 epochs, at 10 and 20)"))
    row("PGD step size and start", "not stated", "2/255, random start within the radius ε_adv", "authors' code",
        "the paper does not state them")
    row("data-scarcity subsets", "randomly sampled", "random subsets that keep every class's share (class-balanced)",
        "this book", "a 10 % subset drawn without regard to class can leave some classes short; balancing removes "
        "that source of variance from the comparison")
    smallest, full = min(p.fractions), training_images(p)
    subset = round(smallest * full)
    epoch_images = scarcity_epoch_images(p, subset, full)
    if epoch_images is not None:
        steps = training_steps(p, epoch_images)
        passes = p.epochs * epoch_images / subset
        rule = (f"each subset passed over as often as the paper passes over it, {p.scarcity_passes}, up to the full "
                f"set's steps" if p.scarcity_passes is not None else "as many steps as the full training set for "
                "every fraction")
        row("data-scarcity training length",
            f"{ref.epochs} epochs for every fraction ({training_steps(ref, smallest * training_images(ref)):,} steps "
            f"and {ref.epochs} passes over the subset at {smallest:.0%} of the data)",
            f"{rule}: at {smallest:.0%} of the data, {steps:,} steps and {passes:,.0f} passes over the subset",
            "this book", f"the paper's rule at this preset's length would give {training_steps(p, smallest * full):,} "
            f"steps at {smallest:.0%} of the data, too few to train the network, so that scarcity would be "
            "confounded with under-training"
            + ("; the paper's passes keep each image seen as often as in the paper, where the full set's steps "
               "would pass over a small subset several times as often" if p.scarcity_passes is not None else
               f"; the same steps keep the subsets trained, as the paper's {ref.epochs} epochs do"))
    row("label noise", "symmetric, noise rate r_noise", "symmetric: a flipped label is uniform over all classes, so "
        "about 9/10 of r_noise of the labels change (CIFAR-10), on the training and validation labels", "paper",
        "the paper's definition (its appendix)")
    row("conditioning study", "networks trained with the hyperparameters of Table 1, condition numbers of the "
        "convolutions", "networks trained with this preset's standard (non-adversarial) schedule; the exact "
        "singular values of the operator each trained layer applies in evaluation (for ConvNorm: its running "
        "normalizer and affine kernel included)", "this book",
        "the operator the network applies is what its conditioning is about; the adversarial recipe of "
        "Table 1 is not needed to measure it")
    row("model reported", "the epoch with the best validation accuracy (under label noise: the maximum test "
        "accuracy over the epochs); not stated for the attacks and the condition numbers",
        "the best validation epoch for every accuracy (under label noise, the paper's maximum and, beside it, the "
        "best noisy-validation epoch) and for the SimBA attack; the last epoch for the attacks after adversarial "
        "training and for the condition numbers", "this book",
        "the paper's selection wherever it states one; where it does not, the network the training ends with, "
        "which is the one its schedule was made for (free adversarial training ends at its smallest learning "
        "rate)")
    row("convergence speed", "iterations at batch 128 (ConvNorm's 1,000 against BN's 8,000)",
        f"images seen, iterations times the batch ({p.batch_size:,} here): the paper's iterations are "
        f"{1_000 * ref.batch_size:,} and {8_000 * ref.batch_size:,} images", "this book",
        "an iteration of another batch sees another number of images; images seen compare across batches")
    if (p.epochs, p.schedule) != (ref.epochs, ref.schedule):
        row("label-noise regime", f"{schedule(ref)}: long enough for the networks to memorize the noisy "
            "labels, and the maximum test accuracy is taken over that whole course",
            f"{schedule(p)}: whether the networks reach the memorizing regime is read from their training "
            "accuracy on the noisy labels (near the share of correct labels: not memorized; near 100 %: memorized), "
            "which the chapter on robustness shows", "this book",
            "a schedule too short to memorize tests the paper's gaps before the regime they may arise in, so the "
            "chapter says which regime its records are in")
    if p.max_train is not None:
        row("training images", "45,000 (10% of 50,000 held out)", f"{p.max_train:,} (class-balanced)",
            "this book", "a training set a processor can take")
    if p.max_val is not None or p.max_test is not None:
        row("validation / test images", "5,000 / 10,000",
            f"{_count(p.max_val, '5,000')} / {_count(p.max_test, '10,000')}", "this book",
            "evaluation after every epoch costs less")
    if p.noise_rates != ref.noise_rates:
        row("label-noise rates", "0.2, 0.4, 0.6, 0.8", ", ".join(f"{r:g}" for r in p.noise_rates), "this book",
            "the lowest and the highest rate, to save time")
    if p.fractions != ref.fractions:
        row("training fractions (scarcity)", "0.1, 0.3, 0.5, 0.7", ", ".join(f"{f:g}" for f in p.fractions),
            "this book", "fewer fractions, to save time")
    if p.simba_samples != ref.simba_samples or p.simba_iters is not None:
        row("SimBA", "1,000 images, 3,072 iterations",
            f"{p.simba_samples:,} images, {_count(p.simba_iters, '3,072')} iterations", "this book",
            "the attack queries the network thousands of times per image")
    if p.attack_samples is not None:
        row("PGD/FGSM test images", "10,000", f"{p.attack_samples:,}", "this book", "the attacks take time")
    if "cifar100" not in p.datasets:
        row("CIFAR-100", "reported", "not run", "this book",
            "the book's records use CIFAR-10 (the paper preset runs CIFAR-100 when its archive is given)")
    row("ImageNet, GANs", "reported", "not run", "this book", "far beyond the compute of this book")
    row("CIFAR-10 copy", "the official files", "the official images (the official archive, or their lossless copy) "
        "where found, else a lossy JPEG copy (quality 75); a record names the copy it read", "this book",
        "the official archive cannot always be downloaded; the lossless copy holds the same pixels, and accuracies "
        "on the JPEG copy run lower (the appendix measures by how much at the reduced scale)")
    return rows
