"""The chart's alerts (``templates/prometheusrule.yaml``, README "Alerts"): opt-in, each rule complete,
its PromQL valid and reading only metrics and labels the services export, its thresholds the values'."""

from __future__ import annotations

import functools
import re
from typing import Any

import helm_python as helm
import promql_parser
import pytest

from tests.deploy import chart
from tests.deploy.promql import SCRAPE_LABELS, exported_series, parse, selectors

ENABLED = {"metrics": {"prometheusRule": {"enabled": True}}}


def _rules(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = [m for m in chart.render(values) if m["kind"] == "PrometheusRule"]
    assert len(found) == 1
    rules = [rule for group in found[0]["spec"]["groups"] for rule in group["rules"]]
    by_name = {rule["alert"]: rule for rule in rules}
    assert len(by_name) == len(rules), "alert names repeat"
    return by_name


@functools.cache
def _exported() -> dict[str, set[str]]:
    return exported_series()


def _threshold(expr: str) -> float:
    """The number an alert's expression compares against (``… > N``)."""
    tree = parse(expr)
    assert isinstance(tree, promql_parser.BinaryExpr) and isinstance(tree.rhs, promql_parser.NumberLiteral), expr
    return float(tree.rhs.val)


def test_the_alerts_are_opt_in() -> None:
    assert not [m for m in chart.render({}) if m["kind"] == "PrometheusRule"]
    without_metrics = {"metrics": {"enabled": False, "prometheusRule": {"enabled": True}}}
    assert not [m for m in chart.render(without_metrics) if m["kind"] == "PrometheusRule"]


def test_each_rule_names_its_severity_and_what_to_do() -> None:
    rules = _rules(ENABLED)
    assert {
        "NovabergServerErrors", "NovabergTurnSlow", "NovabergStoreUnavailable", "NovabergPromotionLagging",
        "NovabergParkedJobs", "NovabergPixieRunFailed", "NovabergPipelineLogDropping",
    } <= set(rules)  # fmt: skip
    for name, rule in rules.items():
        assert re.fullmatch(r"Novaberg[A-Z][A-Za-z]+", name)
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"] and len(rule["annotations"]["description"]) > 40, name
        assert re.fullmatch(r"\d+[smh]", rule.get("for", "0s")), name


def test_every_expression_parses_and_reads_only_exported_series_of_its_namespace() -> None:
    exported = _exported()
    for name, rule in _rules(ENABLED).items():
        read = selectors(rule["expr"])
        assert read, name
        for metric, labels in read:
            assert metric in exported, (name, metric)
            assert labels - exported[metric] - SCRAPE_LABELS == set(), (name, metric)
        namespaces = re.findall(r'namespace="([^"]*)"', rule["expr"])
        assert namespaces and set(namespaces) == {chart.NAMESPACE}, name  # another release's series stay out


def test_thresholds_come_from_the_values() -> None:
    defaults = _rules(ENABLED)
    assert _threshold(defaults["NovabergServerErrors"]["expr"]) == 0.05
    assert _threshold(defaults["NovabergTurnSlow"]["expr"]) == 500
    assert _threshold(defaults["NovabergParkedJobs"]["expr"]) == 0
    chosen = {"serverErrorRatio": 0.2, "turnP95Ms": 800, "promotionLagSeconds": 3600, "logBufferFill": 0.5}
    rules = _rules({"metrics": {"prometheusRule": {"enabled": True, **chosen}}})
    assert _threshold(rules["NovabergServerErrors"]["expr"]) == 0.2
    assert _threshold(rules["NovabergTurnSlow"]["expr"]) == 800
    assert _threshold(rules["NovabergPromotionLagging"]["expr"]) == 3600
    assert _threshold(rules["NovabergPipelineLogBacklog"]["expr"]) == 0.5


@pytest.mark.parametrize(
    "bad",
    [
        {"serverErrorRatio": 0},
        {"serverErrorRatio": 1.5},
        {"turnP95Ms": -1},
        {"turnP95Ms": 60_000},  # the last finite bucket of rpc.server.duration: the quantile never exceeds it
        {"logBufferFill": 2},
        {"for": "5m"},
    ],
)
def test_the_schema_refuses_thresholds_that_cannot_fire_or_always_fire(bad: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart.render_files({"metrics": {"prometheusRule": {"enabled": True, **bad}}})


def test_a_syntax_error_is_caught() -> None:
    with pytest.raises(ValueError):
        parse("sum(rate(novaberg_store_unavailable_total[5m])")
    assert selectors('sum by (store) (rate(x_total{namespace="n"}[$__rate_interval]))') == [("x_total", {"namespace", "store"})]


def test_helm_lint_passes_with_the_alerts() -> None:
    assert chart.lint(ENABLED)["errors"] == []
