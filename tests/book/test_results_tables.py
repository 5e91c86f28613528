"""convnorm_book.results.tables: every number an experiment declares is found where the
paper's table has it, and the tables set our numbers over seeds beside the paper's."""
from __future__ import annotations

import math

import numpy as np
import pytest

from convnorm_book.results import comparisons, endpoints, provenance, records, tables
from convnorm_book.results.paper_values import paper_leads, paper_value, table_cell
from convnorm_lab.experiments import EXPERIMENTS, PRESETS
from result_files import REPOSITORY_RESULTS, paper_values, record, results_root, write  # noqa: F401 (fixtures)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_declared_paper_cell_is_in_the_reference_file(name, paper_values):
    """The schema's paper cells exist (a misnamed row or column raises); every method the
    schema names for the paper and every paper measure is found at the paper's preset."""
    schema, paper = EXPERIMENTS[name].schema, PRESETS["paper"]
    found = 0
    for group in schema.group_keys(paper):
        for method in schema.method_keys(paper):
            for measure in schema.measures_at(paper):
                found += paper_value(paper_values, name, method, measure, group) is not None
    assert (found > 0) == (schema.paper_table is not None)


def test_rates_and_attacks_the_paper_did_not_run_have_no_paper_value(paper_values):
    schema = EXPERIMENTS["adversarial"].schema
    pgd2 = schema.measures_at(PRESETS["smoke"])[-1]
    assert pgd2.name == "pgd2" and paper_value(paper_values, "adversarial", "bn", pgd2) is None
    noise = EXPERIMENTS["label-noise"].schema
    assert paper_value(paper_values, "label-noise", "bn", noise.measures[0], "0.9") is None
    broken = {"tables": {**paper_values["tables"], "adversarial": {**paper_values["tables"]["adversarial"],
                                                                "columns": ["SN", "ONI", "OCNN", "ConvNorm", "x"]}}}
    with pytest.raises(ValueError, match="column 'BN'"):
        paper_value(broken, "adversarial", "bn", schema.measures[0])


def test_label_noise_compares_the_papers_metric(paper_values):
    """The paper reports the maximum test accuracy under label noise: only that measure
    is set beside the paper's numbers."""
    schema = EXPERIMENTS["label-noise"].schema
    cpu = PRESETS["cpu"]
    maximum, selected = (schema.measure(m, cpu) for m in ("max_test_acc", "test_acc"))
    assert paper_value(paper_values, "label-noise", "bn", maximum, "0.8") == [53.82, 1.04]
    assert paper_value(paper_values, "label-noise", "bn", selected, "0.8") is None
    assert "Max test accuracy" in paper_values["tables"]["label_noise"]["setting"]


@pytest.fixture
def generalization(tmp_path):
    root = results_root(tmp_path)
    accs = {0: (0.50, 0.60, 0.55, 0.65), 1: (0.52, 0.58, 0.57, 0.66), 2: (0.48, 0.61, 0.53, 0.64)}
    for seed, values in accs.items():
        write(root, "generalization", "cpu", seed,
              {"cifar10": {m: record(a) for m, a in zip(("none", "bn", "convnorm", "convnorm+bn"), values)}},
              device="GPU X")
    return records.stored("generalization", root, presets=("cpu",)), accs


def test_experiment_table_sets_ours_beside_the_paper(generalization, paper_values):
    data, accs = generalization
    table = tables.experiment_table(data, paper_values)
    assert table.columns == ["data set", "method", "ours: test accuracy at the best validation epoch (%)",
                             "paper: test accuracy"]
    row = table.rows[[r[1] for r in table.rows].index("ConvNorm")]
    ours = np.array([v[2] for v in accs.values()]) * 100
    assert row[:3] == ["CIFAR-10", "ConvNorm", f"{ours.mean():.2f} ± {np.std(ours, ddof=1):.2f}"]
    assert row[3] == "92.12 ± 0.32"
    assert "Table 4" in table.title and "six-conv network of width 16" in table.notes[0]
    assert "ResNet18, 45,000 training images, 120 epochs" in table.notes[1]
    assert "<table>" in table._repr_html_()


def test_measure_rows_where_the_paper_has_a_row_per_measure(tmp_path, paper_values):
    root = results_root(tmp_path)
    robust = {"clean": 0.3, "fgsm": 0.2, "pgd10": 0.15, "pgd20": 0.14, "n_test": 500}
    write(root, "adversarial", "cpu", 0, {m: {"robust": robust} for m in EXPERIMENTS["adversarial"].schema.methods})
    table = tables.experiment_table(records.stored("adversarial", root, presets=("cpu",)), paper_values)
    assert table.columns == ["method", "quantity", "ours", "paper"]
    assert ["SN+BN", "accuracy under PGD-20 (%)", "14.0", "44.47 ± 0.37"] in table.rows  # one image of 500: 0.2
    assert len(table.rows) == 5 * 4


def test_numbers_and_paper_cells_print_as_read():
    assert tables.mean_std(2.37, 0.089) == "2.37 ± 0.09" and tables.mean_std(352.4, 37.1) == "352 ± 37"
    assert tables.paper_text([68.2, 0.27]) == "68.20 ± 0.27" and tables.paper_text(0.001) == "0.001"
    assert tables.paper_text([None, None]) == "not reported" and tables.paper_text(21) == "21"
    assert tables.paper_text("/") == "failed training (/)" and tables.paper_text("-") == "not reported (-)"
    assert tables.number(float("nan")) == "—"


def test_reference_cell_names_what_is_missing(paper_values):
    table = paper_values["tables"]["ablation"]
    with pytest.raises(ValueError, match="row 'nope'"):
        table_cell(table, "nope", "with BN")
    with pytest.raises(ValueError, match="column 'nope'"):
        table_cell(table, "with affine", "nope")


def test_one_deviation_table_with_a_column_per_preset_shows_only_what_differs(paper_values):
    from convnorm_book.results.deviations import protocol_deviations

    table = provenance.deviations_table()
    assert table.columns == ["setting", "the paper", "cpu", "fast", "short-schedule", "paper", "why"]
    rows = {row[0]: row[1:] for row in table.rows}
    assert len(rows) == len(table.rows)  # one row per setting
    assert rows["network"][1:5] == ["a six-conv network of width 16", "as the paper", "as the paper", "as the paper"]
    assert rows["batch size and learning rate"][1:5] == ["batch 128, lr 0.1", "batch 512, lr 0.4",
                                                          "batch 128, lr 0.1", "batch 128, lr 0.1"]
    taken = {r["setting"] for name in ("cpu", "fast", "short-schedule", "paper") for r in protocol_deviations(name)
             if r["source"] == "paper"}
    only_paper = {s for s in taken if all(r["source"] == "paper" for name in ("cpu", "fast", "short-schedule",
                                                                             "paper") for r in protocol_deviations(name)
                                          if r["setting"] == s)}
    assert only_paper and not only_paper & set(rows)  # a setting every preset takes from the paper is left out
    assert all(row[-1] for row in table.rows)


def test_step_benchmark_table_reads_both_modes_of_each_network(tmp_path):
    steps = {"eager": {"conv2d+bn": 0.010, "convnorm2d+bn": 0.025, "authors+bn": 0.060},
             "cuda_graph": {"conv2d+bn": 0.008, "convnorm2d+bn": 0.016, "authors+bn": 0.050}}
    time = {mode: {k: {"seconds_per_step": v, "relative_to_conv2d_bn": v / values["conv2d+bn"],
                       "seconds_per_epoch": 352 * v} for k, v in values.items()} for mode, values in steps.items()}
    setup = {"model": "CIFAR ResNet18", "batch": 128, "gpu": "GPU X", "step": "one SGD step",
             "eager": "the three networks interleaved in one process, median of the rounds",
             "cuda_graph": "each network in its own process, 50 replays"}
    table = tables.step_benchmark_table(records.StoredFile(tmp_path / "b.json", {}, {"setup": setup, "time": time}))
    assert table.column("network")[1] == "ConvNorm2d+BN (this package)" and "GPU X" in table.title
    assert table.column("eager: ms per step") == ["10.00", "25.00", "60.00"]
    assert table.column("one CUDA graph: × Conv2d+BN") == ["1.00×", "2.00×", "6.25×"]
    assert table.notes == ["CIFAR ResNet18, batch 128, one SGD step, on GPU X. Eager: the three networks interleaved "
                           "in one process, median of the rounds; one CUDA graph: each network in its own process, "
                           "50 replays."]
    results = {"setup": setup, "time": {"eager": time["eager"]}, "graph_errors": {"authors+bn": "capture failed"}}
    eager_only = tables.step_benchmark_table(records.StoredFile(tmp_path / "b.json", {}, results))
    assert eager_only.column("one CUDA graph: ms per step") == ["—"] * 3
    assert "the authors' algorithm, +BN: capture failed" in eager_only.notes[0]


def test_ours_counts_the_seeds_that_failed_to_train(tmp_path, paper_values):
    root = results_root(tmp_path)
    for seed, value in enumerate((0.50, None, 0.70)):
        write(root, "generalization", "cpu", seed, {"cifar10": {"none": record(value, diverged=value is None),
                                                                "bn": record(None, diverged=True),
                                                                "convnorm": record(0.6), "convnorm+bn": record(0.6)}})
    table = tables.experiment_table(records.stored("generalization", root, presets=("cpu",)), paper_values)
    ours = dict(zip(table.column("method"), table.column("ours: test accuracy at the best validation epoch (%)")))
    entered = [50, 10, 70]  # the diverged seed enters at chance, 1/K
    assert ours["vanilla"] == f"{np.mean(entered):.2f} ± {np.std(entered, ddof=1):.2f} (1 of 3 seeds failed to train)"
    assert ours["BN"] == "/ (all 3 seeds failed to train)"  # the paper's mark for a failed training
    assert any(note.startswith("A failed training") and "as measured" in note for note in table.notes)


def test_paper_leads_over_every_group_the_paper_ran(paper_values):
    leads = paper_leads(paper_values, "label-noise", "convnorm+bn", "bn")
    assert list(leads) == ["20%", "40%", "60%", "80%"] and math.isclose(leads["80%"], 69.26 - 53.82)
    assert (list(paper_leads(paper_values, "generalization", "convnorm", "none"))
            == ["cifar10", "cifar100"])
    with pytest.raises(ValueError, match="methods against groups"):
        paper_leads(paper_values, "adversarial", "convnorm+bn", "bn")


def test_a_table_holds_text_cells_in_full_rows():
    assert str(tables.Table("t", ["a", "b"], [["1", "2"]])).splitlines()[1:] == ["a  b", "1  2"]
    with pytest.raises(TypeError, match="not text"):
        tables.Table("t", ["a", "b"], [["1", 2]])
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        tables.Table("t", ["a", "b"], [["1"]])


@pytest.fixture
def adversarial(tmp_path):
    """ConvNorm+BN leads BN by 10, 9.9, 9.8 points under every attack; ONI+BN's first
    seed diverged (at chance, it enters as measured); the other baselines are tied with
    ConvNorm+BN except SN+BN under FGSM, where it trails by 1.0, 1.3 and 0.8 points."""
    root = results_root(tmp_path)
    methods = EXPERIMENTS["adversarial"].schema.methods
    for seed in range(3):
        results = {}
        for m in methods:
            accuracy = {k: 0.4 for k in ("clean", "fgsm", "pgd10", "pgd20")}
            if m == "bn":
                accuracy = {k: 0.3 + 0.001 * seed for k in accuracy}
            if m == "sn+bn":
                accuracy["fgsm"] = 0.4 - (0.010, 0.013, 0.008)[seed]
            results[m] = record(0.5, diverged=(m, seed) == ("oni+bn", 0)) | {"robust": accuracy}
        write(root, "adversarial", "cpu", seed, results)
    return records.stored("adversarial", root, presets=("cpu",))


def test_comparison_grid_is_baselines_by_attacks(adversarial, paper_values):
    chapter = comparisons.Chapter.of([adversarial], paper_values)
    grid = tables.comparison_grid(chapter("adversarial"))
    assert grid.title == "Paired differences: ConvNorm+BN against each"
    assert grid.columns == [" ", "clean", "FGSM", "PGD-10", "PGD-20"]
    assert grid.column(" ") == ["vs SN+BN", "vs BN", "vs ONI+BN", "vs OCNN+BN"]
    bn_clean = grid.rows[1][1].split("\n")
    assert bn_clean[0].startswith("+9.90 [") and bn_clean[1] == "paper +1.10"  # 83.23 − 82.13
    assert "failed to train: ONI+BN 1 of 3" in grid.rows[2][1]
    legend = grid.notes[0]
    assert "95 % interval" in legend and "not a test" in legend and legend.endswith("its margin: 1 point.")
    assert "+-" not in str(grid) and "<br>" in grid._repr_html_()


def test_comparison_grid_columns_must_vary(adversarial, paper_values):
    found = comparisons.evaluate(adversarial, paper_values)
    assert tables.comparison_grid(found, columns="pair").columns[1:] == ["vs SN+BN", "vs BN", "vs ONI+BN",
                                                                          "vs OCNN+BN"]
    with pytest.raises(ValueError, match="facets that vary"):
        tables.comparison_grid(found, columns="group")
    with pytest.raises(ValueError, match="no comparisons"):
        tables.comparison_grid([])


def test_primary_tables_name_effect_spread_seeds_power_and_verdict(paper_values):
    plans = endpoints.sample_sizes(paper_values)
    declared = tables.sample_size_table(plans)
    assert declared.column("endpoint") == [e.name for e in endpoints.PRIMARY]
    planned = [(seeds, p) for seeds, p in zip(declared.column("seeds"), declared.column("power"))]
    assert all(float(p) >= 0.8 if p != "—" else seeds == "more than the plan allows" for seeds, p in planned)
    assert [seeds == "more than the plan allows" for seeds, _ in planned] == [n.seeds is None for n in plans]
    tested = tables.primary_results_table(endpoints.test(paper_values))
    assert set(tested.column("verdict")) <= {endpoints.SUPPORTED, endpoints.CONTRADICTED, endpoints.INCONCLUSIVE,
                                             endpoints.NOT_RUN}


def test_symbols_are_typeset_in_html_and_a_box_marks_a_table():
    table = tables.Table("R_κ of ConvNorm", ["ε_adv"], [["1"]], box="Indicative only")
    html = table._repr_html_()
    assert "<i>R</i><sub><i>κ</i></sub>" in html and "<i>ε</i><sub>adv</sub>" in html and "R_κ" not in html
    assert html.startswith('<div class="admonition warning"><p class="admonition-title">Indicative only</p>')
    assert str(table).startswith("INDICATIVE ONLY\n")


def test_multi_line_cells_print_as_rows_of_lines():
    text = str(tables.Table("t", ["a", "b"], [["x\ny", "z"]]))
    assert text.splitlines()[1:] == ["a  b", "x  z", "y"]


def test_experiment_table_carries_the_caveats(generalization, paper_values):
    data, _ = generalization
    notes = tables.experiment_table(data, paper_values).notes
    assert any(note.startswith("In these records") for note in notes)
    assert notes[1].startswith("The paper (Table 4): ResNet18")


def test_inventory_lists_what_is_recorded_with_versions_and_failed_trainings(tmp_path):
    root = results_root(tmp_path)
    from convnorm_lab.experiments import PROTOCOL_VERSION

    runs = root / "cpu" / "runs" / "cpu-seed0"
    runs.mkdir(parents=True)
    for key in ("r0", "r1", "unused"):  # seed 0 assembled from two trainings of two minutes each
        write(root, "generalization", "cpu", 0, record(0.5, run_key=key), wall=120.0).rename(runs / f"{key}.json")
    for seed in (0, 1):
        trained = {m: record(0.5, run_key=f"r{i}") for i, m in enumerate(("bn", "convnorm"))} if seed == 0 else {}
        write(root, "generalization", "cpu", seed,
              {"cifar10": {"none": record(0.5, diverged=seed == 1, diverged_at_epoch=4, reason="loss is NaN"),
                           **trained}},
              protocol_version=PROTOCOL_VERSION if seed else None)
    table = provenance.inventory_table(("short-schedule", "cpu"), root)
    assert table.column("experiment") == ["generalization"]  # nothing else is recorded: no row says so
    assert table.column("wall time per seed (min)") == ["4.0, 1.0"]  # the training no file names counts nowhere
    assert table.column("protocol version") == [f"before 1, {PROTOCOL_VERSION} (current)"]
    assert table.column("failed to train") == ["seed 1, CIFAR-10, vanilla: diverged at epoch 4 (loss is NaN)"]
    empty = provenance.inventory_table(("short-schedule",), root)
    assert empty.rows == [] and empty.notes == ["No record is stored yet: the appendix says how to make them."]
    assert provenance.has_records("cpu", root) and not provenance.has_records("short-schedule", root)


def test_grid_sets_methods_against_attacks_or_rates(tmp_path, paper_values):
    """The adversarial study as methods × attacks; label noise as methods × rates of the
    paper's measure; a diverged run entered at chance and counted in its cell."""
    root = results_root(tmp_path)
    for seed, clean in enumerate((0.30, 0.34)):
        robust = {"clean": clean, "fgsm": 0.2, "pgd10": 0.15, "pgd20": 0.14, "n_test": 500}
        write(root, "adversarial", "cpu", seed,
              {m: {"robust": robust} for m in EXPERIMENTS["adversarial"].schema.methods})
        write(root, "label-noise", "cpu", seed,
              {rate: {m: record(0.4, max_test_acc=0.5, diverged=(seed, rate, m) == (1, "0.8", "none"))
                      for m in ("none", "bn")} for rate in ("0.2", "0.8")}, robust_norms=["none", "bn"])
    adversarial = tables.grid(records.stored("adversarial", root, presets=("cpu",)), paper_values)
    assert adversarial.columns == ["method", "clean", "FGSM", "PGD-10", "PGD-20"]
    assert adversarial.rows[0][:2] == ["SN+BN", "32.0 ± 2.8\npaper 82.52 ± 0.22"]  # to the 0.2 points of an image
    assert "Table 1" in adversarial.title and "+-" not in str(adversarial)
    noise = tables.grid(records.stored("label-noise", root, presets=("cpu",)), paper_values)
    assert noise.columns == ["method", "20%", "80%"] and "maximum test accuracy" in noise.title
    assert noise.rows[0][2] == "30.00 ± 28.28 (1 of 2 seeds failed to train)\npaper 57.20 ± 0.71"
    selected = tables.grid(records.stored("label-noise", root, presets=("cpu",)), paper_values, measure="test_acc")
    assert selected.rows[1][1] == "40.00 ± 0.00"  # the paper reports no such number: no second line


def test_inventory_names_no_commit(tmp_path):
    root = results_root(tmp_path)
    write(root, "generalization", "cpu", 0, {"cifar10": {"none": record(0.5)}}, commit="abc1234")
    table = provenance.inventory_table(("cpu",), root)
    assert "abc1234" not in str(table) and not any("commit" in column for column in table.columns)
