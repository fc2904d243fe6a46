"""Reading an untrusted config.json: typed, bounded look-ups with the family's own defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hubwatch.errors import HubwatchError

# Sizes beyond these are not a model anyone can build; a config claiming them is wrong or hostile.
LIMITS: dict[str, int] = {
    "hidden": 1 << 20,
    "layers": 10_000,
    "heads": 1 << 16,
    "vocab": 100_000_000,
    "intermediate": 1 << 24,
    "experts": 1 << 16,
    "context": 1 << 28,
    "small": 1 << 20,
}
MAX_PARAMS = 10**15
"""A thousand times the largest published model: anything above is a bad config."""


class CannotEstimate(HubwatchError):
    """The config cannot be estimated; the message says why, for a person."""


_MISSING = object()


class Reader:
    """Typed look-ups in one (sub-)config, falling back on the family's defaults."""

    def __init__(
        self,
        raw: object,
        defaults: Mapping[str, Any],
        where: str = "config",
        defaulted: list[str] | None = None,
    ) -> None:
        if not isinstance(raw, Mapping):
            raise CannotEstimate(f"{where} is {type(raw).__name__}, not a JSON object")
        self.raw: Mapping[str, Any] = raw
        self.defaults = defaults
        self.where = where
        self.defaulted: list[str] = [] if defaulted is None else defaulted
        """Keys taken from the family's defaults, shared with nested readers."""
        self._marked: set[str] = set()
        """This reader's keys already in `defaulted` (a config's defaults are read many
        times, and the list is searched from its start)."""

    def _get(self, keys: tuple[str, ...], default: object) -> tuple[str, object]:
        key, value = self._find(keys, default)
        if value is _MISSING:
            raise CannotEstimate(f"{self.where} lacks {keys[0]!r} and its family has no default")
        return key, value

    def _find(self, keys: tuple[str, ...], default: object) -> tuple[str, object]:
        """`_get` without its error: the value _MISSING where it would raise."""
        raw = self.raw
        for key in keys:
            value = raw.get(key)
            if value is not None:
                return key, value
        for key in keys:
            if key in self.defaults:
                self._defaulted(key)
                if self.defaults[key] is not None or default is _MISSING:
                    return key, self.defaults[key]
                break  # the config class's own null: the caller's default, if any, decides
        return keys[0], default

    def _defaulted(self, key: str) -> None:
        if key in self._marked:
            return
        self._marked.add(key)
        if f"{self.where}.{key}" not in self.defaulted:
            self.defaulted.append(f"{self.where}.{key}")

    def integer(
        self, *keys: str, limit: str = "small", minimum: int = 1, default: object = _MISSING
    ) -> int:
        """A positive (or >= minimum) integer under the first of `keys` present."""
        key, value = self._get(keys, default)
        return self._checked(keys, key, value, limit, minimum)

    def _checked(
        self, keys: tuple[str, ...], key: str, value: object, limit: str, minimum: int
    ) -> int:
        """`value` (found under `key`) as an integer within `minimum` and the limit."""
        if type(value) is int and minimum <= value <= LIMITS[limit]:
            return value  # the common case, all checks below passed at once
        if value is None:
            raise CannotEstimate(f"{self.where} lacks {keys[0]!r} and its family has no default")
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise CannotEstimate(f"{self.where}.{key} is {_shown(value)}, not an integer")
        if value < minimum:
            raise CannotEstimate(f"{self.where}.{key} is {value}; it must be at least {minimum}")
        if value > LIMITS[limit]:
            raise CannotEstimate(
                f"{self.where}.{key} is {value}, beyond any real model (at most {LIMITS[limit]})"
            )
        return value

    def opt_integer(self, *keys: str, limit: str = "small", minimum: int = 1) -> int | None:
        """An integer if present (and not null), else the default, else None."""
        raw = self.raw
        for key in keys:
            if key in raw and raw[key] is None:
                return None  # an explicit null: "none" (no sliding window, no q LoRA rank)
        key, value = self._find(keys, _MISSING)
        if value is None or value is _MISSING:
            return None  # the config class's default is null too, or there is none
        return self._checked(keys, key, value, limit, minimum)

    def flag(self, key: str, default: bool | object = _MISSING) -> bool:
        key, value = self._get((key,), default)
        if not isinstance(value, bool):
            raise CannotEstimate(f"{self.where}.{key} is {_shown(value)}, not true or false")
        return value

    def get(self, key: str, default: object = None) -> object:
        """The raw value under `key` (nested objects, lists), else the family's default."""
        value = self.raw.get(key)
        if value is None and key in self.defaults:
            self._defaulted(key)
            value = self.defaults[key]
        return default if value is None else value

    def window(self, key: str = "sliding_window") -> int | None:
        """A sliding window in tokens; null and 0 both mean none (qwen2_moe's config class
        writes 0 when sliding windows are off)."""
        return self.opt_integer(key, limit="context", minimum=0) or None

    def name(self, key: str, default: str | None = None) -> str | None:
        value = self.raw.get(key)
        if value is None and key in self.defaults:
            self._defaulted(key)
            value = self.defaults[key]
        return value if isinstance(value, str) else default

    def int_list(self, key: str, default: list[int] | None = None) -> list[int]:
        value = self.raw.get(key)
        if value is None and key in self.defaults:
            self._defaulted(key)
            value = self.defaults[key]
        if value is None:
            value = default if default is not None else []
        if not isinstance(value, list) or len(value) > LIMITS["layers"]:
            raise CannotEstimate(f"{self.where}.{key} is not a list of at most 10000 integers")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise CannotEstimate(f"{self.where}.{key} holds something other than integers")
        return list(value)

    def str_list(self, key: str) -> list[str] | None:
        value = self.raw.get(key)
        if value is None and key in self.defaults:
            self._defaulted(key)
            value = self.defaults[key]
        if value is None:
            return None
        if not isinstance(value, list) or len(value) > LIMITS["layers"]:
            raise CannotEstimate(f"{self.where}.{key} is not a list of at most 10000 names")
        if not all(isinstance(v, str) for v in value):
            raise CannotEstimate(f"{self.where}.{key} holds something other than names")
        return list(value)

    def sub(self, key: str, defaults: Mapping[str, Any]) -> Reader:
        """The nested config under `key` (text_config…), read with its own family's defaults."""
        value = self.raw.get(key)
        if value is None:
            value = {}
        return Reader(value, defaults, f"{self.where}.{key}", self.defaulted)

    def nested(self, key: str) -> Reader:
        """The nested config under `key`, read with the defaults nested under `key` in ours.

        NOTE: a wrapper's config class builds an absent sub-config with its own defaults
        (`key`), but fills a given one's missing keys from the sub-config class's defaults
        (`key@class`): PaliGemma's default vision tower has no head, SigLIP's class has one.
        """
        given = isinstance(self.raw.get(key), Mapping)
        inner = self.defaults.get(f"{key}@class" if given else key)
        if given and inner is None:
            inner = self.defaults.get(key)
        return self.sub(key, inner if isinstance(inner, Mapping) else {})


def _shown(value: object) -> str:
    text = repr(value) if not isinstance(value, Mapping | list) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."
