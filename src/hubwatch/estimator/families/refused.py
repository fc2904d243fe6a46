"""Model types people use that no family counts yet, each with what its count would need.

A config of one of these is refused with the reason, never counted as another family's shape.
"""

from __future__ import annotations

NOT_COUNTED: dict[str, str] = {
    "zamba2": (
        "Zamba2's shared attention blocks, reused with per-use LoRA adapters between its "
        "Mamba-2 layers, are not modelled"
    ),
}
"""model_type -> what is missing to count it."""
