"""The compare page, in process on SQLite and PostgreSQL: changes grouped by severity, key tables,
unified diffs, estimates with their delta, tensor reports, 404s, upstream text escaped."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from hubwatch.api import create_app
from hubwatch.api.compare_view import diff_lines, estimate_rows
from hubwatch.diff import DIFFERS, TENSOR_DIFF, Piece, RevisionView
from hubwatch.estimator import estimate_json
from hubwatch.models import Change, RepoRef, Severity, SourceKind
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.served import CONFIG, SCRIPT
from tests.test_store import sha, snapshot

ESCAPED = "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"
REPO = RepoRef("org/model", SourceKind.HUB)
QWEN = json.loads(CONFIG)
BEFORE = {
    # A context under the 4,096 tokens serving is sized at, so the longer one costs memory.
    "config.json": {**QWEN, "max_position_embeddings": 2048},
    "generation_config.json": {"eos_token_id": 1, "temperature": 0.7},
    "tokenizer_config.json": {
        "chat_template": "{% for m in messages %}{{ m.content }}\n{% endfor %}"
    },
    "README.md": "---\nlicense: mit\n---\n# model\n\nkept line\nold line\n",
}
AFTER = {
    "config.json": {
        **QWEN,
        "max_position_embeddings": 65536,
        "rope_scaling": {"factor": 2.0, "type": f"yarn{SCRIPT}"},
    },
    "generation_config.json": {"eos_token_id": [1, 2], "temperature": 0.7},
    "tokenizer_config.json": {
        "chat_template": "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
        + SCRIPT
    },
    "README.md": f"---\nlicense: apache-2.0\n---\n# model\n\nkept line\nnew line {SCRIPT}\n",
}
REUPLOAD = Change(
    "weights.reuploaded",
    Severity.BEHAVIOR,
    "model.safetensors: lm_head.weight changed (0.4% of bytes new).",
    "model.safetensors",
    None,
    {
        TENSOR_DIFF: {
            "changed": ["lm_head.weight", f"model.{SCRIPT}.weight"],
            "changed_count": 2,
            "possibly_changed": ["model.norm.weight"],
            "possibly_count": 1,
            "identical": 287,
            "tensors": 290,
            "new_bytes": 4_000_000,
            "bytes": 988_000_000,
            "byte_identical": False,
        }
    },
)


def _files(contents: dict[str, Any]) -> dict[str, bytes]:
    return {
        path: value.encode() if isinstance(value, str) else json.dumps(value, indent=2).encode()
        for path, value in contents.items()
    }


def _reuploads(old: RevisionView, new: RevisionView) -> list[Change]:
    """A stand-in for the Xet tensor diff, which needs the Hub's chunk lists."""
    return [REUPLOAD] if old.files and new.files else []


@pytest.fixture
def api(store: SqlStore) -> InProcess:
    store.add_repo(REPO)
    for n, contents in enumerate((BEFORE, AFTER), start=1):
        files = _files(contents)
        snap = snapshot(n, files, parent=n - 1 if n > 1 else None)
        commit = dataclasses.replace(snap.commit, title=f"commit {n} {SCRIPT}")
        estimate = estimate_json(files["config.json"])
        store.add_revision(
            REPO.repo_id, dataclasses.replace(snap, commit=commit, estimate=estimate)
        )
    differs = {**DIFFERS, "reuploads": _reuploads}
    return InProcess(create_app(store, Settings(), differs=differs))


def _page(api: InProcess, spec: str = f"{sha(1)}..{sha(2)}") -> str:
    response = api.get(f"/repos/org/model/compare/{spec}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def _section(page: str, anchor: str) -> str:
    start = page.index(anchor)
    return page[start : page.find("<h", start + len(anchor))]


def test_changes_are_grouped_by_severity_with_counts(api: InProcess) -> None:
    page = _page(api)
    changes = page[page.index('<section id="changes">') : page.index("</section>")]
    headings = re.findall(r'<h3 id="sev-(\w+)">.*?</span> (\d+)</h3>', changes)
    assert [h[0] for h in headings] == ["breaking", "security", "behavior", "info"]
    assert all(int(n) == _section(changes, f'id="sev-{s}"').count("<li>") for s, n in headings)
    assert "<code>generation.stop_tokens</code>" in _section(changes, 'id="sev-breaking"')
    behavior = _section(changes, 'id="sev-behavior"')
    assert "<code>chat_template.rendered</code>" in behavior and "weights.reuploaded" in behavior
    assert dict(headings)["breaking"] != "0"


def test_config_and_card_keys_that_differ_are_tabled(api: InProcess) -> None:
    page = _page(api)
    rows = re.findall(
        r'<tr><td class="cmp-key"><code>([^<]+)</code></td><td class="cmp-value">([^<]*)</td>'
        r'<td class="cmp-value">([^<]*)</td></tr>',
        page,
    )
    assert ("eos_token_id", "1", "[1, 2]") in rows  # generation_config.json
    assert ("max_position_embeddings", "2048", "65536") in rows
    assert ("rope_scaling.factor", "unset", "2.0") in rows  # nested keys, dotted
    assert ("license", "&#34;mit&#34;", "&#34;apache-2.0&#34;") in rows  # the card's front matter
    assert "temperature" not in page.split('id="keys"')[1].split("</section>")[0]  # unchanged
    assert "<code>README.md front matter</code> (1)" in page


def test_text_files_are_unified_diffs_marked_line_by_line(api: InProcess) -> None:
    page = _page(api)
    readme = _section(page, "<h3><code>README.md</code>")
    assert '<span class="cmp-file">--- a/README.md</span>' in readme
    assert '<span class="cmp-ctx"> kept line</span>' in readme
    assert '<span class="cmp-del">-<mark>old</mark> line</span>' in readme
    assert f'<span class="cmp-add">+<mark>new</mark> line<mark> {ESCAPED}</mark></span>' in readme
    assert '<span class="muted">+2 −2</span>' in page.split("<h3><code>README.md</code>")[1][:40]


def test_chat_template_renders_are_side_by_side(api: InProcess) -> None:
    page = _page(api)
    renders = page[page.index('<section id="renders">') :]
    before = renders.split('<div class="cmp-side cmp-before">')[1].split("</div>")[0]
    after = renders.split('<div class="cmp-side cmp-after">')[1].split("</div>")[0]
    assert "You are a helpful assistant.\n" in before and "<del>" not in before  # only added
    assert "<ins>[system] </ins>You are a helpful assistant." in after
    assert f"<ins>{ESCAPED}</ins>" in after  # the template's markup, shown as text


def test_estimates_are_shown_with_their_delta(api: InProcess) -> None:
    page = _page(api)
    table = page[page.index('<table id="estimate-delta">') :].split("</table>")[0]
    assert "<tr><td>parameters</td><td>494,032,768</td><td>494,032,768</td><td>=</td></tr>" in table
    serving = re.search(
        r"<tr><td>serving memory</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>", table
    )
    assert serving is not None and serving.group(3).startswith("+")  # a longer context
    batches = page[page.index('<table id="batch-delta">') :].split("</table>")[0]
    assert "→" in batches.split("<td>serving</td>")[1].split("</tr>")[0]


def test_a_reupload_shows_its_tensor_report(api: InProcess) -> None:
    tensors = _page(api).split('<section id="tensors">')[1].split("</section>")[0]
    assert REUPLOAD.summary in tensors
    assert "2 changed, 1 possibly changed, 287 byte-identical of 290 tensors" in tensors
    assert "<tr><td><code>lm_head.weight</code></td><td>changed</td></tr>" in tensors
    assert "<td><code>model.norm.weight</code></td><td>possibly changed</td>" in tensors


def test_upstream_markup_is_escaped_on_the_compare_page(api: InProcess) -> None:
    response = api.get(f"/repos/org/model/compare/{sha(1)}..{sha(2)}")
    assert SCRIPT not in response.text
    assert response.text.count(ESCAPED) >= 6  # titles, keys, diffs, renders, tensors
    assert "default-src 'none'" in response.headers["content-security-policy"]


def test_the_timeline_links_each_revision_to_its_compare(api: InProcess) -> None:
    page = api.get("/repos/org/model").text
    assert f'href="/repos/org/model/compare/{sha(1)[:12]}..{sha(2)[:12]}">compare</a>' in page
    assert '<form id="compare-form" method="get" action="/repos/org/model/compare">' in page
    picked = api.get("/repos/org/model/compare", params={"a": sha(1)[:7], "b": sha(2)[:7]})
    assert picked.status_code == 303
    assert picked.headers["location"] == f"/repos/org/model/compare/{sha(1)[:7]}..{sha(2)[:7]}"


@pytest.mark.parametrize(
    "url",
    [
        f"/repos/org/unknown/compare/{sha(1)}..{sha(2)}",
        f"/repos/org/model/compare/{sha(1)}..{sha(9)}",
        f"/repos/org/model/compare/{sha(9)[:8]}..{sha(2)}",
        f"/repos/org/model/compare/{sha(1)}",
        f"/repos/org/model/compare/..{sha(2)}",
    ],
    ids=["repo", "revision-b", "revision-a", "no-dots", "no-a"],
)
def test_unknown_repos_and_revisions_answer_404(api: InProcess, url: str) -> None:
    assert api.get(url).status_code == 404


def test_the_form_refuses_what_is_not_a_sha(api: InProcess) -> None:
    assert api.get("/repos/org/model/compare", params={"a": "../x", "b": "abcd"}).status_code == 422


# -- the pure parts ------------------------------------------------------------------------------


def test_diff_lines_pair_removed_and_added_lines() -> None:
    text = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n ctx\n-old x\n+new x\n-gone\n++++ plus\n"
    lines = diff_lines(text)
    assert [line.kind for line in lines] == [
        "file",
        "file",
        "hunk",
        "ctx",
        "del",
        "add",
        "del",
        "add",
    ]
    assert lines[4].pieces == (Piece("-", False), Piece("old", True), Piece(" x", False))
    assert lines[5].pieces == (Piece("+", False), Piece("new", True), Piece(" x", False))
    assert lines[7].text == "++++ plus"  # an added line, though it starts like a header


def test_estimate_rows_without_estimates_are_empty() -> None:
    assert estimate_rows(None, None) == []
    [params, *_] = estimate_rows(None, estimate_json(CONFIG))
    assert (params.before, params.after, params.delta) == ("?", "494,032,768", "")
