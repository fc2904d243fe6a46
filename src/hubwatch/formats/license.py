"""Licence files (LICENSE, MODEL_LICENSE, NOTICE, USE_POLICY…) read as text: the licence's name
and version, and the terms that matter to a user, recognised in English and Chinese."""

from __future__ import annotations

import posixpath
import re
from typing import Any

_NAME = re.compile(
    r"^(.*[_-])?(licen[cs]e|notice|copying)([_.-].*)?$|^(acceptable[_-])?use[_-]policy(\..*)?$",
    re.I,
)
CLAIMED = (
    "*LICENSE*", "*LICENCE*", "*License*", "*license*", "*licence*", "NOTICE*", "*/NOTICE*",
    "COPYING*", "*/COPYING*", "USE_POLICY*", "*/USE_POLICY*", "*_USE_POLICY*",
)  # fmt: skip
"""fnmatch patterns covering `is_license` (the generic differ's claims)."""

NON_COMMERCIAL, ATTRIBUTION, NO_REDISTRIBUTION, ACCEPTABLE_USE, USER_CAP = (
    "non-commercial",
    "attribution",
    "redistribution restricted",
    "acceptable use",
    "user cap",
)
# Each restriction, by the phrases that impose it. A licence that says none of them is read as
# permissive; one that says more than before restricts more.
_TERMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (NON_COMMERCIAL, re.compile(
        r"non[- ]?commercial|research purposes only|solely for[^.。]{0,60}research"
        r"|(will|shall|may|must) not[^.。]{0,200}\bfor any\b[^.。]{0,30}\bcommercial\b"
        r"|not for commercial|非商业|不得[^。]{0,30}商业", re.I)),
    (ATTRIBUTION, re.compile(
        r"(must|shall)[^.。]{0,60}\b(attribution|give credit|retain[^.。]{0,40}notices?"
        r"|be included in all copies|display[^.。]{0,30}built with)|\battribution\b"
        r"|应包含在本软件的所有副本|署名", re.I)),
    (NO_REDISTRIBUTION, re.compile(
        r"non-?transferable|non-?sublicensable|(will|shall|may) not[^.。]{0,120}\b(re)?distribut"
        r"|不可转让|不可再许可|不得[^。]{0,40}分发", re.I)),
    (ACCEPTABLE_USE, re.compile(
        r"acceptable use|use policy|prohibited uses?|use restrictions"
        r"|(will|shall|may) not use[^.。]{0,80}\b(for|to)\b|military|illegal purposes"
        r"|不得利用|军事", re.I)),
    (USER_CAP, re.compile(r"monthly active users|月活跃用户", re.I)),
)  # fmt: skip
_VERSION = re.compile(r"\bversion\s+(\d+(?:\.\d+)*)|\bv(\d+(?:\.\d+)+)\b", re.I)


def is_license(path: str) -> bool:
    """Whether `path` is a licence, notice or use-policy file (any folder, any extension)."""
    return bool(_NAME.match(posixpath.basename(path))) and not path.endswith((".py", ".json"))


def read_terms(text: str) -> dict[str, Any]:
    """A licence's name (its title line), version and the restrictions it imposes."""
    title = next((line.strip() for line in text.splitlines() if line.strip()), "")
    name = title if len(title) <= 100 else None
    version = _VERSION.search(text[:2000])
    return {
        "name": name,
        "version": next((g for g in version.groups() if g), None) if version else None,
        "restrictions": [term for term, pattern in _TERMS if pattern.search(text)],
    }
