"""A scoped pause of the cyclic garbage collector that no other thread can notice."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic collection inside the block, when this thread is the only one alive.

    The collector's switch is process-wide: with another thread alive (the API server, a
    scheduler) pausing it would stop that thread's collections too, so it is left running.
    Only a collector this call paused is re-enabled, which keeps the prior state exactly and
    makes nesting safe.
    """
    pause = threading.active_count() == 1 and gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause:
            gc.enable()
