"""The truth bench's checks in the suite: the synthetic labelled histories meet the targets."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support.truth import (
    CUSTOM_CODE_TARGETS,
    TARGETS,
    Expected,
    Reported,
    RevisionReport,
    Score,
    load_truth,
    report_lines,
    score,
    track_git,
)
from tests.support.truth_code_histories import CODE_HISTORIES
from tests.support.truth_histories import HISTORIES, History

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"


def test_at_least_15_synthetic_histories_each_with_expectations() -> None:
    assert len(HISTORIES) >= 15
    assert len({h.name for h in HISTORIES}) == len(HISTORIES)
    for history in HISTORIES:
        titles = [c.message for c in history.commits]
        assert len(set(titles)) == len(titles), history.name
        assert set(history.expected) <= set(titles), history.name


def test_a_prefix_kind_matches_any_kind_under_it_and_a_path_must_be_equal() -> None:
    report = Reported("generation.other", "info", "generation_config.json", "")
    assert Expected("generation.", "info").matches(report)
    assert not Expected("generation", "info").matches(report)
    assert Expected("generation.other", "info", "generation_config.json").matches(report)
    assert not Expected("generation.other", "info", "config.json").matches(report)


def test_scoring_counts_misses_false_reports_and_severity() -> None:
    truth = HISTORIES[0].truth()
    revisions = [
        RevisionReport("a" * 40, "Upload", (Reported("files.added", "info", None, "3 added"),)),
        RevisionReport(
            "b" * 40,
            "Re-number the vocabulary",
            (
                Reported("tokenizer.vocab", "behavior", "tokenizer.json", "re-numbered"),
                Reported("tokenizer.vocab", "breaking", "tokenizer.json", "again"),
                Reported("json.changed", "info", "tokenizer.json", "noise"),
            ),
        ),
    ]
    s = score(truth, revisions)
    assert (s.expected, s.found, s.agreed, s.reports, s.matched_reports) == (2, 2, 1, 4, 3)
    assert s.reports_per_event == 1.5
    assert len(s.false_reports) == 1 and "json.changed" in s.false_reports[0]
    assert s.failures() == [
        "precision 75.0% < 95%",
        "severity agreement 50.0% < 95%",
        "reports per event 1.50 > 1.2",
    ]


def test_an_expected_change_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "h.yaml"
    path.write_text(
        "history: h\nsource: data/hub-mirrors/h.bundle\nlabelled: by hand\nrevisions:\n"
        "  - sha: 0a854d4\n    changes:\n"
        "      - {kind: generation.stop_tokens, severity: breaking, path: g.json, why: x}\n"
    )
    truth = load_truth(path)
    assert truth.revisions == {
        "0a854d4": (Expected("generation.stop_tokens", "breaking", "g.json", "x"),)
    }


def test_synthetic_histories_meet_the_targets(tmp_path: Path) -> None:
    scores: list[tuple[str, Score]] = []
    for history in HISTORIES:
        upstream = tmp_path / "up" / history.name
        history.build(upstream)
        reports = track_git(upstream, f"synthetic/{history.name}", tmp_path / history.name)
        scores.append((history.name, score(history.truth(), reports)))
    overall = Score()
    for _, s in scores:
        overall.add(s)
    report = "\n".join(report_lines(scores))
    assert overall.recall >= TARGETS["recall"], report
    assert overall.precision >= TARGETS["precision"], report
    assert overall.severity >= TARGETS["severity"], report
    assert overall.reports_per_event <= TARGETS["reports_per_event"], report


def _scores(tmp_path: Path, histories: Sequence[History]) -> Score:
    overall = Score()
    for history in histories:
        upstream = tmp_path / "up" / history.name
        history.build(upstream)
        reports = track_git(upstream, f"synthetic/{history.name}", tmp_path / history.name)
        overall.add(score(history.truth(), reports))
    return overall


def test_issue_27_histories_each_name_a_class_and_are_unique() -> None:
    names = [h.name for h in (*HISTORIES, *CODE_HISTORIES)]
    assert len(names) == len(set(names))
    assert len(CODE_HISTORIES) >= 10


def test_custom_code_synthetic_histories_meet_the_custom_code_targets(tmp_path: Path) -> None:
    overall = _scores(tmp_path, CODE_HISTORIES)
    report = "\n".join(report_lines([("custom code", overall)]))
    assert overall.custom_code_failures() == [], report
    assert overall.recall >= TARGETS["recall"], report


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chatglm-6b", "chatglm3-6b"])
def test_real_custom_code_histories_meet_the_custom_code_targets(name: str, tmp_path: Path) -> None:
    truth = load_truth(DATA / "truth" / f"{name}.yaml")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(TESTS / truth.source), str(clone)], check=True)
    result = score(truth, track_git(clone, f"mirror/{name}", tmp_path / "work"))
    report = "\n".join(report_lines([(name, result)]))
    assert result.major_recall >= CUSTOM_CODE_TARGETS["major_recall"], report
    assert result.major_severity >= CUSTOM_CODE_TARGETS["major_severity"], report
    assert result.reports_per_event <= CUSTOM_CODE_TARGETS["reports_per_event"], report

    # (a setting the repo's tokenizer class takes), the label says tokenizer.vocab: true, but
    # another kind. Any other report above info that no label names fails here.
    assert result.false_claims <= (1 if name == "chatglm-6b" else 0), report
