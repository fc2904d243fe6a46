"""The stored table is `as_json` of `size()`'s table: the one-pass build from the fits that an
estimate keeps says every word and figure the Table, Row and Cell path says, config by config."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hubwatch.estimator import CannotEstimate, size
from hubwatch.estimator.sizing import DEFAULT_JOB, stored
from hubwatch.estimator.table import as_json
from tests.estimator.make_golden import default_types, golden_configs

CONFIGS: dict[str, Any] = dict(golden_configs()) | {
    f"defaults:{t}": {"model_type": t, "architectures": [a]} for t, a in default_types().items()
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_stored_table_and_batches_are_the_sizings(name: str) -> None:
    found = CONFIGS[name]
    config = found if isinstance(found, dict) else json.loads(found.read_text())
    try:
        sized = size(config, job=DEFAULT_JOB)
    except CannotEstimate as exc:
        with pytest.raises(CannotEstimate, match=f"^{re.escape(str(exc))}$"):
            stored(config)
        return
    model, params, memory, table, batches = stored(config)
    assert (model, params, memory) == (sized.model, sized.params, sized.memory)
    assert sized.table is not None
    assert json.dumps(table) == json.dumps(as_json(sized.table))  # keys in the same order too
    rows = sized.max_batch.items()
    assert json.dumps(batches) == json.dumps(
        {
            w: {f.gpu: {"cards": f.cards, "max_batch": f.max_batch, "split": f.split} for f in row}
            for w, row in rows
        }
    )
