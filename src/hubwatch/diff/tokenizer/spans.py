"""Where two byte strings start and stop differing, found a block at a time in C."""

from __future__ import annotations

_BLOCK = 1 << 16


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes `a` and `b` share, compared a block at a time."""
    n, same = min(len(a), len(b)), 0
    while same < n:
        block = min(_BLOCK, n - same)
        if a[same : same + block] != b[same : same + block]:
            low, high = same, same + block - 1  # the answer lies in [low, high]
            while low < high:
                mid = (low + high + 1) // 2
                if a[same:mid] == b[same:mid]:
                    low = mid
                else:
                    high = mid - 1
            return low
        same += block
    return n


def common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """How many trailing bytes `a` and `b` share, up to `limit`."""
    la, lb, same = len(a), len(b), 0
    while same < limit:
        block = min(_BLOCK, limit - same)
        if a[la - same - block : la - same] != b[lb - same - block : lb - same]:
            low, high = same, same + block - 1
            while low < high:
                mid = (low + high + 1) // 2
                if a[la - mid : la - same] == b[lb - mid : lb - same]:
                    low = mid
                else:
                    high = mid - 1
            return low
        same += block
    return limit
