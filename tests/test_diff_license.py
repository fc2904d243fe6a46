"""Licence files read as text: each term recognised, graded by whether it restricts more or less."""

from __future__ import annotations

from typing import Any

import pytest

from hubwatch.diff import diff_revisions
from hubwatch.formats.license import is_license, read_terms
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity
from tests.support.revisions import BASE_CONFIG, view

B, BEH, INFO = Severity.BREAKING, Severity.BEHAVIOR, Severity.INFO
BASE = "The Tiny License\nVersion 1.0\n\nYou may use, copy and modify the Model.\n"
TERMS = {
    "non-commercial": "Use the Model solely for your non-commercial research purposes.\n",
    "attribution": "You must retain this notice and give attribution in all copies.\n",
    "redistribution restricted": "You may not distribute the Model or derivatives of it.\n",
    "acceptable use": "You shall not use the Model for military or illegal purposes.\n",
    "user cap": "Products with over 700 million monthly active users need a licence.\n",
}
GLM_GRANT = (
    "the Licensor hereby grants to you a non-exclusive, worldwide, non-transferable, "
    "non-sublicensable, revocable, royalty-free copyright license to use the Software"
)


def licence_change(before: str | None, after: str | None, path: str = "LICENSE") -> Change:
    files: dict[str, Any] = {"config.json": BASE_CONFIG}
    old = files | ({path: before} if before is not None else {})
    new = files | ({path: after} if after is not None else {})
    [change] = [c for c in diff_revisions(view(old), view(new)) if c.kind.startswith("license.")]
    return change


@pytest.mark.parametrize("term", sorted(TERMS))
def test_a_term_added_is_more_restrictive_and_breaking(term: str) -> None:
    change = licence_change(BASE, BASE + TERMS[term])
    assert change.kind == "license.changed" and change.severity is B
    assert f"more restrictive: adds {term}" in change.summary


@pytest.mark.parametrize("term", sorted(TERMS))
def test_a_term_lifted_is_less_restrictive_and_behavior(term: str) -> None:
    change = licence_change(BASE + TERMS[term], BASE)
    assert change.severity is BEH and f"less restrictive: drops {term}" in change.summary


def test_commercial_use_leaving_the_forbidden_uses_is_less_restrictive() -> None:
    before = f"{GLM_GRANT} solely for your non-commercial research purposes.\n" + (
        "You will not use, copy, modify, merge, publish, distribute, reproduce, or create "
        "derivative works of the Software, in whole or in part, for any commercial, military, "
        "or illegal purposes.\n"
    )
    after = before.replace(" solely for your non-commercial research purposes", "").replace(
        "any commercial, military", "any military"
    )
    change = licence_change(before, after, "MODEL_LICENSE")
    assert change.severity is BEH and "drops non-commercial" in change.summary


def test_a_new_name_with_the_same_terms_is_info() -> None:
    change = licence_change(BASE, BASE.replace("Tiny License", "Small License"))
    assert change.severity is INFO and "retitled The Tiny License → The Small License" in (
        change.summary
    )


def test_a_new_version_with_the_same_terms_is_info() -> None:
    change = licence_change(BASE, BASE.replace("Version 1.0", "Version 2.0"))
    assert change.severity is INFO and "version 1.0 → 2.0" in change.summary


def test_a_rewording_is_info() -> None:
    change = licence_change(BASE, BASE.replace("copy and modify", "copy, and modify"))
    assert change.severity is INFO and "reworded, the same terms" in change.summary


def test_a_licence_where_there_was_none_is_less_restrictive() -> None:
    change = licence_change(None, BASE + TERMS["non-commercial"], "MODEL_LICENSE")
    assert change.kind == "license.added" and change.severity is BEH


def test_a_licence_removed_is_breaking() -> None:
    change = licence_change(BASE, None)
    assert change.kind == "license.removed" and change.severity is B


def test_a_policy_added_beside_a_licence_is_judged_against_it() -> None:
    old = {"config.json": BASE_CONFIG, "LICENSE": BASE}
    new = old | {"USE_POLICY.md": TERMS["acceptable use"]}
    [change] = [c for c in diff_revisions(view(old), view(new)) if c.kind.startswith("license.")]
    assert change.severity is B and change.before["other_files"] == ["LICENSE"]


def test_licences_of_a_first_revision_are_said_by_files_added() -> None:
    changes = diff_revisions(RevisionView.empty(), view({"config.json": {}, "LICENSE": BASE}))
    assert not [c for c in changes if c.kind.startswith("license.")]


def test_chinese_terms_are_recognised() -> None:
    text = (
        "许可方授予您版权许可，仅用于您的非商业研究目的。您不得出于任何军事或非法目的使用本软件。"
    )
    assert {"non-commercial", "acceptable use"} <= set(read_terms(text)["restrictions"])


def test_hashes_say_what_they_are() -> None:
    change = licence_change(BASE, BASE + TERMS["attribution"])
    assert "git_blob" in change.before and "sha256" not in change.before


@pytest.mark.parametrize(
    ("path", "is_one"),
    [
        ("LICENSE", True),
        ("LICENSE.txt", True),
        ("MODEL_LICENSE", True),
        ("LICENSE-MODEL", True),
        ("NOTICE", True),
        ("sub/LICENCE.md", True),
        ("USE_POLICY.md", True),
        ("README.md", False),
        ("license_check.py", False),
    ],
)
def test_licence_files_by_name(path: str, is_one: bool) -> None:
    assert is_license(path) is is_one
