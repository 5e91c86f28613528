"""Facts the chapters state beside the comparisons, each computed from the records and the
paper's values and written as sentences: how far our absolute accuracies are from the
paper's, how often a method ranks first, what the SimBA budget and the attacked networks
were, how optimistic the maximum over epochs is, how large the scarcity subsets are and
how long they trained, how near to singular ONI's layers are, and what the run time and
the step benchmarks measured. Nothing here tests a claim (the primary endpoints are
tested in :mod:`~convnorm_book.results.endpoints`); every number is read, none typed."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from convnorm_lab.experiments import PRESETS
from convnorm_lab.experiments.catalog import RUNTIME
from convnorm_lab.models.normalizations import BN, CAYLEY, CONVNORM, CONVNORM_BN, NONE, ONI

from .paper_values import paper_mean, paper_value
from .records import Records, StoredFile, classes, failure, is_diverged, lookup, simba_iterations, training_images
from .scope import correct_share
from .stats import collect
from .tables import STEP_BENCHMARK_MODELS, STEP_BENCHMARK_MODES, Table
from .words import device_name, group_name, listing, method_label, number, spelled


def _percent(value: float) -> str:
    return f"{value:.1f} %"


def ranking(records: Records, paper_values: dict | None, method: str, group: str | None = None) -> str:
    """How often ``method`` is the most accurate network, over every (measure, seed) pair
    of the records, beside how often the paper's table ranks it first. A tie for first is
    a tie, counted apart, never a win."""
    schema, settings = records.schema, records.settings
    group = schema.group_keys(settings)[0] if group is None else group
    measures, methods = schema.measures_at(settings), schema.method_keys(settings)
    first = tied = total = 0
    for file in records.files:
        for measure in measures:
            values = {m: lookup(file.results, schema.path(group, m, measure)) for m in methods
                      if failure(lookup(file.results, schema.record_path(group, m))) is None}
            if method in values and None not in values.values():
                total += 1
                leaders = [m for m, v in values.items() if v == max(values.values())]
                first += leaders == [method]
                tied += method in leaders and len(leaders) > 1
    text = (f"{method_label(method)} is the most accurate of the {spelled(len(methods))} networks in "
            f"{spelled(first)} of the {spelled(total)} pairs of a measure and a seed"
            + (f" and tied for first in {spelled(tied)}" if tied else ""))
    if paper_values is not None:
        paper = [{m: paper_mean(paper_value(paper_values, records.experiment, m, measure, group)) for m in methods}
                 for measure in measures]
        paper = [p for p in paper if None not in p.values()]
        ranked = sum(max(p, key=p.get) == method for p in paper)
        text += f"; the paper ranks it first under {spelled(ranked)} of its {spelled(len(paper))}"
    return text + "."


def simba_budget(records: Records) -> str:
    """What the SimBA attack could spend and what it did, and how well each attacked
    network had trained (which decides the images attacked and how confidently they are
    classified)."""
    schema, settings = records.schema, records.settings
    iterations, budget = simba_iterations(settings), 2 * simba_iterations(settings)
    methods = schema.method_keys(settings)
    queries = schema.measure("queries", settings)
    top = max(collect(records, schema.path(None, m, queries)).max for m in methods)
    accuracy = {m: collect(records, schema.path(None, m, schema.measure("test_acc", settings)), 100, accuracy=True)
                for m in methods}
    best = max(accuracy, key=lambda m: accuracy[m].mean)
    paper = simba_iterations(PRESETS["paper"])
    counts = ("comparable with the paper's" if iterations == paper else "not comparable with the paper's, "
              "though the ordering is")
    return (f"The attack tries {iterations:,} pixel directions an image (the paper: {paper:,}), at most "
            f"{budget:,} queries; no network's average exceeds {number(top)}, so the counts are {counts}. The "
            "attacked networks' clean test accuracy: " + listing(f"{method_label(m)} {_percent(a.mean)}"
                                                                for m, a in accuracy.items())
            + f". The best trained is {method_label(best)}: how well a network has trained decides which images "
              "are attacked and how confidently they are classified, not only its Lipschitz constant.")


def maximum_optimism(records: Records) -> str:
    """How far the maximum test accuracy over the epochs (the paper's metric under label
    noise) lies above the test accuracy at the best noisy-validation epoch, on average
    over the methods, at each rate."""
    schema, settings = records.schema, records.settings
    rates = schema.group_keys(settings)
    maximum, selected = schema.measure("max_test_acc", settings), schema.measure("test_acc", settings)
    gaps = [np.mean([collect(records, schema.path(r, m, maximum), 100, accuracy=True).mean
                     - collect(records, schema.path(r, m, selected), 100, accuracy=True).mean
                     for m in schema.method_keys(settings)]) for r in rates]
    return ("The maximum over the epochs, taken on the test set itself, lies above the test accuracy at the best "
            "noisy-validation epoch by " + listing(f"{gap:.1f}" for gap in gaps) + " points on average at "
            + listing(group_name(schema, r) for r in rates) + " noise: the paper's metric is the optimistic one.")


def scarcity_subsets(records: Records) -> str:
    """The sizes of the training subsets, and how they were drawn (a deviation from the
    paper, which samples them at random)."""
    schema = records.schema
    fractions = schema.group_keys(records.settings)
    sizes = [lookup(records.files[0].results, (f, "n_train")) for f in fractions]
    return (f"Our subsets of the {training_images(records.settings):,} training images hold "
            + listing(f"{int(n):,}" for n in sizes) + " images at "
            + listing(group_name(schema, f) for f in fractions)
            + "; each is a random subset drawn class by class, so that every class keeps its share, where the "
              "paper samples at random without saying that it balances the classes.")


def scarcity_length(records: Records) -> str:
    """How long the networks trained on each subset, read from the records: each epoch
    drawing more images than the subset holds (the book's rule at shortened schedules: the
    full set's number of steps) or the subset once (the paper's rule, the same epochs at
    every fraction, under which a subset of 10 % takes a tenth of the steps)."""
    schema = records.schema
    fractions = schema.group_keys(records.settings)
    method = schema.method_keys(records.settings)[0]
    smallest = min(fractions, key=float)
    trained = [r for file in records.files if (r := lookup(file.results, (smallest, method))) and not is_diverged(r)]
    if trained and all(r.get("epoch_images", r["data"]["n_train"]) > r["data"]["n_train"] for r in trained):
        record = trained[0]
        return (f"Every subset trains for as many steps as the full set would, {record['history']['steps'][-1]:,}: "
                f"each epoch draws {record['epoch_images']:,} images, passing over the "
                f"{group_name(schema, smallest)} subset {record['epoch_images'] / record['data']['n_train']:.3g} "
                "times. The paper trains every fraction for the same number of epochs instead, so that a subset "
                "takes the share of a full training's steps that it holds of the images; its "
                f"{PRESETS['paper'].epochs} epochs leave even its smallest subset trained, our shorter schedule would "
                "not, and scarce data would be confounded with short training.")
    return ("Every subset trains for the same number of epochs, as in the paper, so a subset takes the fraction of a "
            "full training's steps that it holds of the images.")


def runtime(records: Mapping[str, Records], paper_values: dict) -> str:
    """Per preset timed: ConvNorm+BN's and Cayley's time relative to the vanilla network
    (BN) beside the paper's, and whether the paper's ordering holds."""
    table = paper_values["tables"][RUNTIME.schema.paper_table]
    paper = dict(zip(table["columns"], table["rows"]["seconds_per_epoch"]))
    sentences = []
    for data in records.values():
        ratio = {m: collect(data, (m, "relative_to_bn")).mean for m in (CONVNORM_BN, CAYLEY)}
        holds = 1 < ratio[CONVNORM_BN] < ratio[CAYLEY]
        sentences.append(f"On {device_name(data.devices)} ({data.settings.runtime_steps} timed steps), ConvNorm+BN "
                         f"takes {ratio[CONVNORM_BN]:.2f} times the vanilla network's time and Cayley "
                         f"{ratio[CAYLEY]:.2f} times; the paper: {paper['ConvNorm'] / paper['vanilla']:.2f} and "
                         f"{paper['Cayley'] / paper['vanilla']:.2f} times. The ordering vanilla < ConvNorm < Cayley "
                         f"{'holds' if holds else 'does not hold'} here.")
    return " ".join(sentences)


def layer_benchmark(eager: Sequence[StoredFile], graphed: Sequence[StoredFile]) -> str:
    """ConvNorm's training step over the plain one, eagerly and replayed as one CUDA
    graph, at the largest batch both benchmarks ran (the records of
    ``bench_layer_cuda_batch*.json`` and ``bench_layer_cuda_graph_batch*.json``); empty
    when either is missing."""
    ratios = [{file.results["setup"]["batch"]: (file.results["time_ratio_median"], file.device) for file in files}
              for files in (eager, graphed)]
    shared = set(ratios[0]) & set(ratios[1])
    if not shared:
        return ""
    batch = max(shared)
    (e, device), (g, _) = ratios[0][batch], ratios[1][batch]
    return (f"The layer benchmark (one training step at batch {batch} on {device}) takes {e:.2f} times the plain "
            f"step run eagerly and {g:.2f} times when the whole step is replayed as one CUDA graph, which removes "
            "the cost of launching ConvNorm's many small GPU kernels: much of the overhead measured eagerly is that "
            "launch cost, a property of the implementation rather than of the method.")


def _faster(ours_over_theirs: float) -> str:
    """This package's step time over the authors' in words: which is faster, and by how much."""
    if ours_over_theirs <= 1:
        return f"this package's step takes {ours_over_theirs:.2f} times the authors' time"
    return f"this package's step is the slower, taking {ours_over_theirs:.2f} times the authors' time"


def step_benchmark(file: StoredFile, paper_values: dict | None = None) -> str:
    """How this package's layer and the authors' algorithm compare step for step, from a
    calibration record (see :func:`~convnorm_book.results.tables.step_benchmark_table`):
    per mode timed (eager; one CUDA graph, each graph timed in its own process), each
    step's time relative to Conv2d+BN's; with ``paper_values``, the seconds of a
    45,000-image epoch beside the paper's Table 8."""
    time, setup = file.results["time"], file.results["setup"]
    keys = tuple(STEP_BENCHMARK_MODELS)
    modes = [mode for mode in STEP_BENCHMARK_MODES if all(k in time.get(mode, {}) for k in keys)]
    if not modes:
        return ""
    words = {mode: adverb for mode, (_, adverb) in STEP_BENCHMARK_MODES.items()}
    ratio = {mode: {k: time[mode][k]["relative_to_conv2d_bn"] for k in keys} for mode in modes}
    ours = listing(f"{ratio[m]['convnorm2d+bn']:.2f} times {words[m]}" for m in modes)
    theirs = listing(f"{ratio[m]['authors+bn']:.2f} times {words[m]}" for m in modes)
    best = modes[-1]
    text = (f"On {setup['gpu']}, at batch {setup['batch']}, a training step with this package's ConvNorm2d+BN takes "
            f"{ours} as long as with Conv2d+BN; with a plain torch.fft port of the authors' algorithm in its place, "
            f"{theirs}. Both compute the same layer, so the gap between them is the implementation's alone: "
            f"{_faster(ratio[best]['convnorm2d+bn'] / ratio[best]['authors+bn'])} {words[best]}.")
    if paper_values is not None:
        table = paper_values["tables"][RUNTIME.schema.paper_table]
        paper = dict(zip(table["columns"], table["rows"]["seconds_per_epoch"]))
        epoch = {k: time[best][k]["seconds_per_epoch"] for k in keys}
        text += (f" A {training_images(PRESETS['paper']):,}-image epoch {words[best]} takes "
                 f"{epoch['conv2d+bn']:.1f} s with Conv2d+BN and {epoch['convnorm2d+bn']:.1f} s with ConvNorm2d+BN "
                 f"({ratio[best]['convnorm2d+bn']:.2f} times); the "
                 f"paper's {table['label']}: {paper['vanilla']:g} s and {paper['ConvNorm']:g} s "
                 f"({paper['ConvNorm'] / paper['vanilla']:.2f} times) on its GPU.")
    return text


def two_timings(records: Mapping[str, Records], file: StoredFile) -> str:
    """The run-time experiment and the step benchmark set side by side where both timed the
    eager step on the same GPU at the same batch: each one's plain and ConvNorm step, in
    milliseconds, and their ratio. A ratio over a step of a few milliseconds moves with the
    plain step's time, so the two ratios differ mostly where the plain steps do: the
    sentence says which step moved more. Empty where no such pair is recorded."""
    eager = file.results["time"].get("eager", {})
    setup = file.results["setup"]
    for data in records.values():
        if data.devices != setup["gpu"] or data.settings.batch_size != setup["batch"] or "conv2d+bn" not in eager:
            continue
        run = {m: 1e3 * collect(data, (m, "seconds_per_step")).mean for m in (BN, CONVNORM_BN)}
        bench = {m: 1e3 * eager[k]["seconds_per_step"] for m, k in ((BN, "conv2d+bn"), (CONVNORM_BN, "convnorm2d+bn"))}
        moved = {m: abs(run[m] - bench[m]) / bench[m] for m in (BN, CONVNORM_BN)}
        which = "plain" if moved[BN] > moved[CONVNORM_BN] else "ConvNorm"
        return (f"The run-time experiment, on the same GPU at the same batch, timed the plain step at "
                f"{run[BN]:.1f} ms and ConvNorm's at {run[CONVNORM_BN]:.1f} ms ({run[CONVNORM_BN] / run[BN]:.2f} "
                f"times); the step benchmark, interleaving the networks, at {bench[BN]:.1f} ms and "
                f"{bench[CONVNORM_BN]:.1f} ms ({bench[CONVNORM_BN] / bench[BN]:.2f} times). The {which} step moved "
                f"more between the two ({100 * moved[BN]:.0f} % against {100 * moved[CONVNORM_BN]:.0f} %): a "
                "ratio over a step of a few milliseconds moves with the plain step's time, so the two ratios "
                "bracket ConvNorm's cost on this GPU rather than contradict each other.")
    return ""


def means(records: Records, measure: str, group: str | None = None) -> dict[str, float]:
    """Each method's mean ``measure`` over the seeds that finished (in percent for an
    accuracy or a rate), in the schema's order of methods."""
    schema, settings = records.schema, records.settings
    group = schema.group_keys(settings)[0] if group is None else group
    chosen = schema.measure(measure, settings)
    return {m: collect(records, schema.path(group, m, chosen), 100.0 if chosen.percent else 1.0,
                       accuracy=not chosen.analysis).mean
            for m in schema.method_keys(settings)}


def rank(records: Records, measure: str, method: str, higher_is_better: bool = True) -> tuple[int, int]:
    """``method``'s place among the networks by mean ``measure`` (1 is the best; a network
    tied with others shares their place) and the number of networks ranked."""
    found = means(records, measure)
    sign = 1 if higher_is_better else -1
    return 1 + sum(sign * v > sign * found[method] for v in found.values()), len(found)


def reached(records: Records, measure: str, group: str | None = None) -> str:
    """Each method's mean ``measure`` in words: ``"vanilla 26.8 %, BN 52.9 % and
    ConvNorm+BN 53.3 %"`` (in ``group``, default the first)."""
    percent = records.schema.measure(measure, records.settings).percent
    return listing(f"{method_label(m)} {_percent(v) if percent else number(v)}"
                   for m, v in means(records, measure, group).items())


def span(records: Records, measure: str, group: str | None = None) -> str:
    """The lowest and the highest of the methods' mean ``measure``: ``"27 to 33 %"``, or
    one value where they round alike."""
    values = list(means(records, measure, group).values())
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    unit = " %" if records.schema.measure(measure, records.settings).percent else ""
    return f"{low}{unit}" if low == high else f"{low} to {high}{unit}"


def singular_layers(records: Records, method: str = ONI) -> str:
    """How near to singular ``method``'s trained layers are: the range of their condition
    numbers and of their smallest singular value relative to the largest, beside the
    rounding of single precision, in which the networks are trained (a layer that exact
    arithmetic makes singular shows a ratio no larger than about that rounding)."""
    import torch

    layers = [layer["condition_number"] for file in records.files
              for layer in (file.results[method].get("layers") or ()) if failure(file.results[method]) is None]
    if not layers:
        return f"Every {method_label(method)} training failed to train: no layer to look at."
    eps = torch.finfo(torch.float32).eps
    return (f"{method_label(method)}'s trained layers have condition numbers from {min(layers):.1e} to "
            f"{max(layers):.1e}: their smallest singular value is {1 / max(layers):.0e} to {1 / min(layers):.0e} of "
            f"the largest, " + ("no more than the rounding error of the single precision the networks are trained "
                                "in" if 1 / min(layers) <= 10 * eps else "well above the rounding error of the single "
                                "precision the networks are trained in, so no layer is singular to working precision")
            + f" (relative precision {eps:.1e}).")


def noise_regime(records: Records) -> Table:
    """Whether the networks under label noise reached the memorizing regime: per noise rate
    :math:`r`, the share of training labels that stayed correct
    (:func:`~convnorm_book.results.scope.correct_share`), and
    each method's mean training accuracy on the noisy labels after the last epoch. A network
    that fits only the correct labels stays near that share; one that memorizes the wrong
    ones climbs towards 100 %."""
    schema, settings = records.schema, records.settings
    methods = schema.method_keys(settings)
    rows = []
    for rate in schema.group_keys(settings):
        share = correct_share(float(rate), classes((rate,)))
        finals = [collect(records, schema.record_path(rate, m) + ("summary", "final_train_acc"), 100, accuracy=True)
                  for m in methods]
        rows.append([group_name(schema, rate), f"{100 * share:.0f}"] + [f"{s.mean:.0f}" for s in finals])
    return Table("Training accuracy on the noisy labels after the last epoch (%)",
                 ["noise rate", "labels still correct"] + [method_label(m) for m in methods], rows,
                 [f"Means over the {len(records.files)} seeds. Near the share of correct labels, a network has fitted "
                  "the correct labels and not the wrong ones; towards 100 %, it memorizes the wrong ones too."])


def _trained_layers(records: Records, method: str) -> list[list[dict]]:
    """The analysed layers of every seed's ``method`` network that trained."""
    return [file.results[method]["layers"] for file in records.files
            if failure(file.results[method]) is None and file.results[method].get("layers")]


def channel_table(records: Records, methods: Sequence[str] = (NONE, CONVNORM)) -> Table:
    """Per conv layer of the conditioning records, each method's channel condition number
    of the operator its trained layer applies, as the geometric mean over the seeds whose
    training trained (networks that failed to train left out)."""
    layers = {m: _trained_layers(records, m) for m in methods}
    count = len(next(iter(layers.values()))[0])
    rows = [[str(i + 1), layers[methods[0]][0][i]["name"]]
            + [f"{np.exp(np.mean([np.log(seed[i]['channel_condition_number']) for seed in layers[m]])):.1f}"
               for m in methods] for i in range(count)]
    return Table("Channel condition number of each trained layer, as applied",
                 ["layer", "name"] + [method_label(m) for m in methods], rows,
                 ["Geometric mean over the seeds, and over each layer's channels the arithmetic mean; ConvNorm's "
                  "normalized kernels have 1 in every channel. "
                  + "; ".join(f"{method_label(m)}: {len(layers[m])} seeds" for m in methods) + "."])


#: what the conditioning analysis records of each ConvNorm layer, in a reader's words
CAUSES = {"channel_condition_number": "as applied", "channel_condition_number_unit_affine": "affine kernel all-pass",
          "channel_condition_number_final_normalizer": "final weights' normalizer"}


def channel_causes_table(records: Records) -> Table | None:
    """Per ConvNorm layer, its channel condition number as applied, with the affine kernel
    replaced by an all-pass one, and with the final weights' normalizer in place of the
    running one (:func:`convnorm_lab.experiments.catalog.conditioning.channel_causes`), as
    geometric means over the seeds that trained; ``None`` where the records predate that
    analysis."""
    layers = _trained_layers(records, CONVNORM)
    if not layers or any(key not in layers[0][0] for key in CAUSES):
        return None
    rows = [[str(i + 1)] + [f"{np.exp(np.mean([np.log(seed[i][key]) for seed in layers])):.2f}" for key in CAUSES]
            for i in range(len(layers[0]))]
    return Table("What sets the channel condition number of ConvNorm's trained layers", ["layer", *CAUSES.values()],
                 rows, [f"Geometric means over {len(layers)} seeds. Both replaced, every channel is a tight frame "
                        "(condition number 1, up to the regularizer ε)."])
