"""convnorm_book.results.findings, .checks and .diagnosis: the facts the chapters state
beside the comparisons, computed from records built with known answers."""
from __future__ import annotations

from convnorm_book.results import checks, diagnosis, findings, records
from result_files import paper_values, record, results_root, root, write  # noqa: F401 (fixtures)

BASIC = ("none", "bn", "convnorm", "convnorm+bn")


def test_ranking_counts_a_tie_apart(root, paper_values):
    for seed in (0, 1):
        write(root, "generalization", "cpu", seed,
              {"cifar10": {m: record(a) for m, a in zip(BASIC, (0.50, 0.60, 0.55, 0.65 - 0.1 * seed))}})
    data = records.stored("generalization", root, presets=("cpu",))
    # seed 0: ConvNorm+BN first (65 %); seed 1: BN first (60 % against 55 %)
    assert findings.ranking(data, paper_values, "convnorm+bn").startswith(
        "ConvNorm+BN is the most accurate of the four networks in one of the two pairs of a measure and a seed; "
        "the paper ranks it first under one of its one")


def test_maximum_optimism_and_scarcity_subsets(root):
    for seed in (0, 1):
        write(root, "label-noise", "cpu", seed,
              {rate: {m: record(0.40, max_test_acc=0.40 + gap) for m in ("none", "bn")}
               for rate, gap in (("0.2", 0.01), ("0.8", 0.05))},
              robust_norms=["none", "bn"])
        write(root, "data-scarcity", "cpu", seed, {f: {"n_train": n, **{m: record(0.4) for m in BASIC}}
                                                   for f, n in (("0.1", 500), ("0.3", 1500), ("0.7", 3500))})
    text = findings.maximum_optimism(records.stored("label-noise", root, presets=("cpu",)))
    assert "by 1.0 and 5.0 points on average at 20% and 80% noise" in text
    text = findings.scarcity_subsets(records.stored("data-scarcity", root, presets=("cpu",)))
    assert text.startswith("Our subsets of the 5,000 training images hold 500, 1,500 and 3,500 images at 10%, 30% "
                           "and 70%")
    assert "class-balanced" not in text and "the paper samples at random" in text


def test_scarcity_length_is_read_from_the_records(root, tmp_path):
    sizes = (("0.1", 500), ("0.3", 1500), ("0.7", 3500))
    for seed in (0, 1):
        write(root, "data-scarcity", "cpu", seed,
              {f: {"n_train": n, **{m: record(0.4, epoch_images=5000, data={"n_train": n}) for m in BASIC}}
               for f, n in sizes})
    text = findings.scarcity_length(records.stored("data-scarcity", root, presets=("cpu",)))
    assert text.startswith("Every subset trains for as many steps as the full set would, 120: each epoch draws 5,000 "
                           "images, passing over the 10% subset 10 times.")
    assert "120 epochs" in text  # the paper's length, read from its preset
    (tmp_path / "older").mkdir()
    older = results_root(tmp_path / "older")  # records that state no epoch length trained each subset once an epoch
    for seed in (0, 1):
        write(older, "data-scarcity", "cpu", seed,
              {f: {"n_train": n, **{m: record(0.4, data={"n_train": n}) for m in BASIC}} for f, n in sizes})
    assert findings.scarcity_length(records.stored("data-scarcity", older, presets=("cpu",))).startswith(
        "Every subset trains for the same number of epochs, as in the paper")


def layers(norms, channel=1.0, out=4):
    return [{"name": f"c{i}", "shape": [out, out, 3, 3], "spectral_norm": s, "condition_number": 2.0,
             "channel_condition_number": channel} for i, s in enumerate(norms)]


def test_channel_table_leaves_out_networks_that_failed_and_takes_geometric_means(root):
    write(root, "conditioning", "cpu", 0, {"none": {**record(0.3), "layers": layers((2.0, 2.0), 2.0)},
                                           "convnorm": {**record(0.3), "layers": layers((1.0, 3.0), 1.5)}})
    diverged = {**record(0.3, diverged=True), "layers": layers((9.0,) * 2, 9.0)}
    write(root, "conditioning", "cpu", 1, {"none": {**record(0.3), "layers": layers((2.0, 2.0), 8.0)},
                                           "convnorm": diverged})
    table = findings.channel_table(records.stored("conditioning", root, presets=("cpu",)))
    assert table.column("vanilla") == ["4.0", "4.0"] and table.column("ConvNorm") == ["1.5", "1.5"]  # √(2·8) = 4
    assert table.notes[0].endswith("vanilla: 2 seeds; ConvNorm: 1 seeds.")
    assert findings.channel_causes_table(records.stored("conditioning", root, presets=("cpu",))) is None


def test_channel_causes_table_reads_both_counterfactuals(root):
    causes = {"channel_condition_number_unit_affine": 1.2, "channel_condition_number_final_normalizer": 3.0}
    for seed in (0, 1):
        write(root, "conditioning", "cpu", seed, {
            "none": {**record(0.3), "layers": layers((2.0,), 2.0)},
            "convnorm": {**record(0.3), "layers": [{**layer, **causes} for layer in layers((1.0,), 4.0)]}})
    table = findings.channel_causes_table(records.stored("conditioning", root, presets=("cpu",)))
    assert table.rows == [["1", "4.00", "1.20", "3.00"]]


def test_the_diagnosis_reads_plateaus_gains_and_layers_above_the_bound(root):
    assert diagnosis.plateau({"train_loss": [2.30, 2.29, 2.0, 1.5]}) == 2  # 0.95 ln 10 = 2.19
    assert diagnosis.plateau({"train_loss": [2.30, 2.30]}) == 2  # never learns: every epoch
    assert diagnosis.gain(layers((2.0, 3.0))) == 6.0
    assert diagnosis.above_bound(layers((2.5, 1.0), out=4)) == 1  # √4 = 2


def test_noise_regime_sets_training_accuracy_beside_the_share_of_correct_labels(root):
    for seed in (0, 1):
        write(root, "label-noise", "cpu", seed, {rate: {m: record(0.3, history=(0.1, 0.2, 0.3)) for m in ("none", "bn")}
                                                 for rate in ("0.2", "0.8")}, robust_norms=["none", "bn"])
    table = findings.noise_regime(records.stored("label-noise", root, presets=("cpu",)))
    assert table.column("labels still correct") == ["82", "28"]  # 1 − r · 9/10
    assert table.column("BN") == ["30", "30"]  # the training accuracy after the last epoch


def test_runtime_keeps_one_record_of_each_timing(root, paper_values):
    def timing(convnorm, cayley):
        return {m: {"relative_to_bn": r, "seconds_per_epoch": 10 * r} for m, r in
                (("bn", 1.0), ("convnorm+bn", convnorm), ("cayley", cayley))}

    write(root, "runtime", "short-schedule", 0, timing(2.0, 6.0), device="GPU X")
    write(root, "runtime", "paper", 0, timing(2.5, 7.0), device="GPU X")
    write(root, "runtime", "cpu", 0, timing(1.5, 1.2), device="CPU Y")
    found = records.runtime_records(root)
    assert list(found) == ["short-schedule", "cpu"]  # the paper preset timed what the GPU protocol did
    text = findings.runtime(found, paper_values)
    assert "On GPU X (50 timed steps), ConvNorm+BN takes 2.00 times the vanilla network's time and Cayley 6.00" in text
    assert "the paper: 2.86 and 8.67 times. The ordering vanilla < ConvNorm < Cayley holds here." in text
    assert text.endswith("The ordering vanilla < ConvNorm < Cayley does not hold here.")


def test_layer_and_step_benchmarks(tmp_path):
    def bench(batch, ratio):
        return records.StoredFile(tmp_path, {"device": "GPU X"},
                                  {"setup": {"batch": batch}, "time_ratio_median": ratio})

    text = findings.layer_benchmark([bench(32, 5.0), bench(128, 3.0)], [bench(128, 2.0)])
    assert text.startswith("The layer benchmark (one training step at batch 128 on GPU X) takes 3.00 times the plain "
                           "step run eagerly and 2.00 times")
    assert findings.layer_benchmark([bench(32, 5.0)], [bench(128, 2.0)]) == ""


#: a calibration record's run-time part: seconds per step of each network, eagerly and as one graph
STEPS = {"eager": {"conv2d+bn": 0.010, "convnorm2d+bn": 0.020, "authors+bn": 0.060},
         "cuda_graph": {"conv2d+bn": 0.008, "convnorm2d+bn": 0.012, "authors+bn": 0.036}}


def calibration(tmp_path, steps=STEPS):
    time = {mode: {k: {"seconds_per_step": s, "relative_to_conv2d_bn": s / values["conv2d+bn"],
                       "seconds_per_epoch": s * 352} for k, s in values.items()} for mode, values in steps.items()}
    setup = {"gpu": "GPU X", "model": "CIFAR ResNet18", "batch": 128, "step": "one SGD step",
             "eager": "interleaved, medians", "cuda_graph": "each network in its own process, 50 replays"}
    return records.StoredFile(tmp_path / "gpu_calibration_x.json", {}, {"setup": setup, "time": time})


def test_step_benchmark_reads_a_calibration_record(tmp_path, paper_values):
    text = findings.step_benchmark(calibration(tmp_path))
    assert text.startswith("On GPU X, at batch 128, a training step with this package's ConvNorm2d+BN takes 2.00 "
                           "times eagerly and 1.50 times as one CUDA graph as long as with Conv2d+BN")
    assert "the authors' algorithm in its place, 6.00 times eagerly and 4.50 times as one CUDA graph" in text
    assert "is the implementation's alone: this package's step takes 0.33 times the authors' time as one CUDA " \
           "graph." in text
    with_paper = findings.step_benchmark(calibration(tmp_path), paper_values)
    # an epoch as one graph: 0.008 and 0.012 s a step, 352 steps; the paper's Table 8: 21 and 60 s
    assert "A 45,000-image epoch as one CUDA graph takes 2.8 s with Conv2d+BN and 4.2 s with ConvNorm2d+BN (1.50 " \
           "times); the paper's Table 8: 21 s and 60 s (2.86 times) on its GPU." in with_paper
    eager_only = findings.step_benchmark(calibration(tmp_path, {"eager": STEPS["eager"]}))
    assert "as one CUDA graph" not in eager_only and "takes 0.33 times the authors' time eagerly" in eager_only
    slower = findings.step_benchmark(calibration(tmp_path, {"eager": {"conv2d+bn": 0.01, "convnorm2d+bn": 0.044,
                                                                      "authors+bn": 0.035}}))
    assert "this package's step is the slower, taking 1.26 times the authors' time eagerly." in slower
    assert findings.step_benchmark(calibration(tmp_path, {"eager": {"conv2d+bn": 0.01}})) == ""


def test_reached_span_and_singular_layers(root):
    for seed in (0, 1):
        write(root, "generalization", "cpu", seed,
              {"cifar10": {m: record(a) for m, a in zip(BASIC, (0.20, 0.50, 0.30, 0.52 + 0.02 * seed))}})
    data = records.stored("generalization", root, presets=("cpu",))
    assert findings.reached(data, "test_acc") == "vanilla 20.0 %, BN 50.0 %, ConvNorm 30.0 % and ConvNorm+BN 53.0 %"
    assert findings.span(data, "test_acc") == "20 to 53 %"

    def layers(kappas):
        return [{"spectral_norm": 1.0, "condition_number": k, "channel_condition_number": 1.0} for k in kappas]

    write(root, "conditioning", "cpu", 0,
          {"none": {"layers": layers((3.0, 4.0))}, "oni": {"layers": layers((1e7, 2e8))}})
    conditioning = records.stored("conditioning", root, presets=("cpu",))
    text = findings.singular_layers(conditioning)
    assert text.startswith("ONI's trained layers have condition numbers from 1.0e+07 to 2.0e+08: their smallest "
                           "singular value is 5e-09 to 1e-07 of the largest, no more than the rounding error")
    assert "well above the rounding error" in findings.singular_layers(conditioning, "none")


def test_model_selection_mismatches_name_the_run(root):
    good = record(0.3, history=(0.1, 0.3, 0.2))
    good["history"]["val_acc"] = [0.1, 0.3, 0.3]  # the first maximum: epoch 2
    good["summary"].update(best_val_epoch=2, max_test_acc=0.3)
    bad = {**good, "summary": {**good["summary"], "test_acc_at_best_val": 0.2}}
    write(root, "generalization", "cpu", 0, {"cifar10": {"none": good, "bn": bad, "convnorm": {"diverged": True},
                                                         "convnorm+bn": good}})
    found = checks.model_selection_mismatches(records.stored("generalization", root, presets=("cpu",)))
    assert found == ["seed 0, CIFAR-10, BN: test accuracy at the best validation epoch 0.2, the history's 0.3"]


def test_two_timings_states_each_steps_milliseconds_and_their_ratios():
    calibration = records.calibration()
    timed = records.runtime_records()
    text = findings.two_timings(timed, calibration)
    eager = calibration.results["time"]["eager"]
    gpu = [data for data in timed.values() if data.devices == calibration.results["setup"]["gpu"]]
    if not gpu:
        assert text == ""
        return
    step = {m: 1e3 * gpu[0].files[0].results[m]["seconds_per_step"] for m in ("bn", "convnorm+bn")}
    bench = {m: 1e3 * eager[k]["seconds_per_step"] for m, k in (("bn", "conv2d+bn"), ("convnorm+bn", "convnorm2d+bn"))}
    for times in (step, bench):
        assert f"at {times['bn']:.1f} ms" in text and f"{times['convnorm+bn']:.1f} ms" in text
        assert f"({times['convnorm+bn'] / times['bn']:.2f} times)" in text
