"""The one scoped pause of the cyclic garbage collector, for work that allocates much and frees
nothing (parsing a large tokenizer, importing modules), that no other thread can notice."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc(*, freeze: bool = False) -> Iterator[None]:
    """No cyclic collection inside the block, when this thread is the only one alive; with
    `freeze`, what is alive after it is moved to the permanent generation, so no later
    collection (nor the one at exit) walks it again.

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
        if freeze:
            gc.freeze()
        if pause:
            gc.enable()
