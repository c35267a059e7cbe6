"""The report shows each number once: the metrics a table shows leave the Metrics block."""

import json
import re

from biaslab.report import render_report
from biaslab.report.overlap import shown_in_tables

OOD_TABLE = {
    "title": "MNIST test digits (in) against each set (out)",
    "columns": ["OOD set", "detector", "AUROC", "AUPR", "FPR at 95% TPR"],
    "rows": [
        ["animal-mnist", "MSP", 0.7401, 0.6592, 0.685],
        ["animal-mnist", "max logit", 0.6104, 0.5281, 0.75],
        ["animal-mnist", "energy", 0.519, 0.4647, 0.79],
        ["gaussian-noise", "MSP", 1.0, 1.0, 0.0],
    ],
}
OOD_METRICS = {
    "auroc_animal-mnist_msp": 0.74015,
    "auroc_animal-mnist_max_logit": 0.6104,
    "auroc_gaussian-noise_msp": 0.99999,
    "test_accuracy": 0.818,
    "animal_mnist_duplicates": 284,
}


def test_metrics_a_table_shows_are_found_by_header_row_and_value():
    shown = shown_in_tables(OOD_METRICS, [OOD_TABLE])
    assert shown == {
        "auroc_animal-mnist_msp": 0,
        "auroc_animal-mnist_max_logit": 0,
        "auroc_gaussian-noise_msp": 0,
    }


def test_a_value_alone_a_header_alone_or_a_row_alone_is_not_enough():
    counts = {"columns": ["lab", "passed", "failed"], "rows": [["xor", 2, 0], ["ood", 1, 0]]}
    assert shown_in_tables({"claims_failed": 0}, [counts]) == {}  # a total of 0 is not the 0 of a lab
    assert shown_in_tables({"auroc_animal-mnist_msp": 0.5}, [OOD_TABLE]) == {}  # another value
    # the row that names it best ("animal-mnist, energy"), not another one holding its value
    assert shown_in_tables({"aupr_animal-mnist_energy": 0.6592}, [OOD_TABLE]) == {}
    assert shown_in_tables({"aupr_animal-mnist_energy": 0.4647}, [OOD_TABLE]) == {
        "aupr_animal-mnist_energy": 0
    }
    assert shown_in_tables({"auroc_msp": [0.7401], "auroc_ok": True}, [OOD_TABLE]) == {}  # not numbers


def test_rows_named_by_a_number_and_tables_of_fewer_decimals():
    angles = {"columns": ["angle (degrees)", "MLP", "CNN"], "rows": [[0, 0.95, 0.97], [45, 0.6, 0.8]]}
    shift = {"columns": ["shift", "domain AUROC"], "rows": [["covariate", 0.999]]}
    metrics = {"mlp_accuracy_45deg": 0.6, "cnn_accuracy_0deg": 0.97, "covariate_domain_AUROC": 0.99929}
    assert shown_in_tables(metrics, [angles, shift]) == {
        "mlp_accuracy_45deg": 0,
        "cnn_accuracy_0deg": 0,
        "covariate_domain_AUROC": 1,
    }
    assert shown_in_tables({"covariate_domain_AUROC": 0.9981}, [shift]) == {}  # 0.998, not 0.999


def numeric_sets(html: str) -> list[frozenset]:
    """The numbers (as printed) of each table of a page, the claims and key/value tables aside."""
    tables = re.findall(r"<table(?: [^>]*)?>(.*?)</table>", html, re.DOTALL)
    return [frozenset(re.findall(r'<td class="num"[^>]*>([^<]*)</td>', t)) for t in tables]


def assert_no_table_repeats_another(html: str) -> None:
    """No two tables of a page (the Metrics block included) hold the same set of numbers, and
    no table's numbers are all inside another's."""
    sets = [s for s in numeric_sets(html) if s]
    for i, a in enumerate(sets):
        for b in sets[i + 1 :]:
            assert not (a <= b or b <= a), sorted(a & b)


def test_the_ood_report_shows_its_aurocs_once(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"experiment": "ood", "profile": "quick", "seed": 0}))
    results = {
        "experiment": "ood",
        "title": "OOD",
        "metrics": OOD_METRICS,
        "tables": [OOD_TABLE],
        "claims": [],
    }
    (run / "results.json").write_text(json.dumps(results))
    html = render_report(run).read_text(encoding="utf-8")
    metrics = html.split('<h2 id="metrics">', 1)[1].split("<h2", 1)[0]
    assert "3 metrics of results.json are shown in" in metrics and 'href="#table-1"' in metrics
    assert "Test accuracy" in metrics and 'title="test_accuracy"' in metrics and "284" in metrics
    assert "0.7401" not in metrics and "auroc" not in metrics.lower().replace('title="auroc', "")
    assert_no_table_repeats_another(html)
    assert json.loads((run / "results.json").read_text())["metrics"] == OOD_METRICS  # results.json as it was
