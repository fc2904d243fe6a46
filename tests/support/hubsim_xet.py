"""The Hub simulator's Xet storage: content-defined chunks, xorbs, file hashes and terms.

Built from the Hub's Xet specification (huggingface/hub-docs, docs/xet/): chunking.md (the
gearhash CDC and its TABLE, MIN/MAX chunk sizes and MASK), hashing.md (chunk hashes: blake3 keyed
with DATA_KEY; xorb and file hashes: the aggregated Merkle tree of chunk hashes, INTERNAL_NODE_KEY;
the file hash keyed again with zeros), api.md (hashes as strings: each 8-byte group reversed;
`GET /v2/reconstructions/{file_id}`) and download-protocol.md (terms: xorb hash, chunk range
[start, end), unpacked length). What is simplified: a xorb here holds the new chunks of one
upload, whatever their count (the Hub caps a xorb at 64 MiB); that changes no chunk's identity,
so two files share the same chunks here as on the Hub. The file hashes equal hf_xet's
(`hash_files`), which tests/test_xet_chunking.py checks.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from blake3 import blake3

from .hubsim_http import HubError, Reply, json_reply

MIN_CHUNK = 8 * 1024
MAX_CHUNK = 128 * 1024
MASK = 0xFFFF000000000000
WINDOW = 64
"""The gear hash at a byte depends on the 64 bytes before it only (a 64-bit shift register)."""
# chunking.md's TABLE: rust-gearhash's DEFAULT_TABLE (src/table.rs at adad44e).
TABLE = (
    0xB088D3A9E840F559,
    0x5652C7F739ED20D6,
    0x45B28969898972AB,
    0x6B0A89D5B68EC777,
    0x368F573E8B7A31B7,
    0x1DC636DCE936D94B,
    0x207A4C4E5554D5B6,
    0xA474B34628239ACB,
    0x3B06A83E1CA3B912,
    0x90E78D6C2F02BAF7,
    0xE1C92DF7150D9A8A,
    0x8E95053A1086D3AD,
    0x5A2EF4F1B83A0722,
    0xA50FAC949F807FAE,
    0x0E7303EB80D8D681,
    0x99B07EDC1570AD0F,
    0x689D2FB555FD3076,
    0x00005082119EA468,
    0xC4B08306A88FCC28,
    0x3EB0678AF6374AFD,
    0xF19F87AB86AD7436,
    0xF2129FBFBE6BC736,
    0x481149575C98A4ED,
    0x0000010695477BC5,
    0x1FBA37801A9CEACC,
    0x3BF06FD663A49B6D,
    0x99687E9782E3874B,
    0x79A10673AA50D8E3,
    0xE4ACCF9E6211F420,
    0x2520E71F87579071,
    0x2BD5D3FD781A8A9B,
    0x00DE4DCDDD11C873,
    0xEAA9311C5A87392F,
    0xDB748EB617BC40FF,
    0xAF579A8DF620BF6F,
    0x86A6E5DA1B09C2B1,
    0xCC2FC30AC322A12E,
    0x355E2AFEC1F74267,
    0x2D99C8F4C021A47B,
    0xBADE4B4A9404CFC3,
    0xF7B518721D707D69,
    0x3286B6587BF32C20,
    0x0000B68886AF270C,
    0xA115D6E4DB8A9079,
    0x484F7E9C97B2E199,
    0xCCCA7BB75713E301,
    0xBF2584A62BB0F160,
    0xADE7E813625DBCC8,
    0x000070940D87955A,
    0x8AE69108139E626F,
    0xBD776AD72FDE38A2,
    0xFB6B001FC2FCC0CF,
    0xC7A474B8E67BC427,
    0xBAF6F11610EB5D58,
    0x09CB1F5B6DE770D1,
    0xB0B219E6977D4C47,
    0x00CCBC386EA7AD4A,
    0xCC849D0ADF973F01,
    0x73A3EF7D016AF770,
    0xC807D2D386BDBDFE,
    0x7F2AC9966C791730,
    0xD037A86BC6C504DA,
    0xF3F17C661EAA609D,
    0xACA626B04DAAE687,
    0x755A99374F4A5B07,
    0x90837EE65B2CAEDE,
    0x6EE8AD93FD560785,
    0x0000D9E11053EDD8,
    0x9E063BB2D21CDBD7,
    0x07AB77F12A01D2B2,
    0xEC550255E6641B44,
    0x78FB94A8449C14C6,
    0xC7510E1BC6C0F5F5,
    0x0000320B36E4CAE3,
    0x827C33262C8B1A2D,
    0x14675F0B48EA4144,
    0x267BD3A6498DECEB,
    0xF1916FF982F5035E,
    0x86221B7FF434FB88,
    0x9DBECEE7386F49D8,
    0xEA58F8CAC80F8F4A,
    0x008D198692FC64D8,
    0x6D38704FBABF9A36,
    0xE032CB07D1E7BE4C,
    0x228D21F6AD450890,
    0x635CB1BFC02589A5,
    0x4620A1739CA2CE71,
    0xA7E7DFE3AAE5FB58,
    0x0C10CA932B3C0DEB,
    0x2727FEE884AFED7B,
    0xA2DF1C6DF9E2AB1F,
    0x4DCDD1AC0774F523,
    0x000070FFAD33E24E,
    0xA2ACE87BC5977816,
    0x9892275AB4286049,
    0xC2861181DDF18959,
    0xBB9972A042483E19,
    0xEF70CD3766513078,
    0x00000513ABFC9864,
    0xC058B61858C94083,
    0x09E850859725E0DE,
    0x9197FB3BF83E7D94,
    0x7E1E626D12B64BCE,
    0x520C54507F7B57D1,
    0xBEE1797174E22416,
    0x6FD9AC3222E95587,
    0x0023957C9ADFBF3E,
    0xA01C7D7E234BBE15,
    0xABA2C758B8A38CBB,
    0x0D1FA0CEEC3E2B30,
    0x0BB6A58B7E60B991,
    0x4333DD5B9FA26635,
    0xC2FD3B7D4001C1A3,
    0xFB41802454731127,
    0x65A56185A50D18CB,
    0xF67A02BD8784B54F,
    0x696F11DD67E65063,
    0x00002022FCA814AB,
    0x8CD6BE912DB9D852,
    0x695189B6E9AE8A57,
    0xEE9453B50ADA0C28,
    0xD8FC5EA91A78845E,
    0xAB86BF191A4AA767,
    0x0000C6B5C86415E5,
    0x267310178E08A22E,
    0xED2D101B078BCA25,
    0x3B41ED84B226A8FB,
    0x13E622120F28DC06,
    0xA315F5EBFB706D26,
    0x8816C34E3301BACE,
    0xE9395B9CBB71FDAE,
    0x002CE9202E721648,
    0x4283DB1D2BB3C91C,
    0xD77D461AD2B1A6A5,
    0xE2EC17E46EEB866B,
    0xB8E0BE4039FBC47C,
    0xDEA160C4D5299D04,
    0x7EEC86C8D28C3634,
    0x2119AD129F98A399,
    0xA6CCF46B61A283EF,
    0x2C52CEDEF658C617,
    0x2DB4871169ACDD83,
    0x0000F0D6F39ECBE9,
    0x3DD5D8C98D2F9489,
    0x8A1872A22B01F584,
    0xF282A4C40E7B3CF2,
    0x8020EC2CCB1BA196,
    0x6693B6E09E59E313,
    0x0000CE19CC7C83EB,
    0x20CB5735F6479C3B,
    0x762EBF3759D75A5B,
    0x207BFE823D693975,
    0xD77DC112339CD9D5,
    0x9BA7834284627D03,
    0x217DC513E95F51E9,
    0xB27B1A29FC5E7816,
    0x00D5CD9831BB662D,
    0x71E39B806D75734C,
    0x7E572AF006FB1A23,
    0xA2734F2F6AE91F85,
    0xBF82C6B5022CDDF2,
    0x5C3BEAC60761A0DE,
    0xCDC893BB47416998,
    0x6D1085615C187E01,
    0x77F8AE30AC277C5D,
    0x917C6B81122A2C91,
    0x5B75B699ADD16967,
    0x0000CF6AE79A069B,
    0xF3C40AFA60DE1104,
    0x2063127AA59167C3,
    0x621DE62269D1894D,
    0xD188AC1DE62B4726,
    0x107036E2154B673C,
    0x0000B85F28553A1D,
    0xF2EF4E4C18236F3D,
    0xD9D6DE6611B9F602,
    0xA1FC7955FB47911C,
    0xEB85FD032F298DBD,
    0xBE27502FB3BEFAE1,
    0xE3034251C4CD661E,
    0x441364D354071836,
    0x0082B36C75F2983E,
    0xB145910316FA66F0,
    0x021C069C9847CAF7,
    0x2910DFC75A4B5221,
    0x735B353E1C57A8B5,
    0xCE44312CE98ED96C,
    0xBC942E4506BDFA65,
    0xF05086A71257941B,
    0xFEC3B215D351CEAD,
    0x00AE1055E0144202,
    0xF54B40846F42E454,
    0x00007FD9C8BCBCC8,
    0xBFBD9EF317DE9BFE,
    0xA804302FF2854E12,
    0x39CE4957A5E5D8D4,
    0xFFB9E2A45637BA84,
    0x55B9AD1D9EA0818B,
    0x00008ACBF319178A,
    0x48E2BFC8D0FBFB38,
    0x8BE39841E848B5E8,
    0x0E2712160696A08B,
    0xD51096E84B44242A,
    0x1101BA176792E13A,
    0xC22E770F4531689D,
    0x1689EFF272BBC56C,
    0x00A92A197F5650EC,
    0xBC765990BDA1784E,
    0xC61441E392FCB8AE,
    0x07E13A2CED31E4A0,
    0x92CBE984234E9D4D,
    0x8F4FF572BB7D8AC5,
    0x0B9670C00B963BD0,
    0x62955A581A03EB01,
    0x645F83E5EA000254,
    0x41FCE516CD88F299,
    0xBBDA9748DA7A98CF,
    0x0000AAB2FE4845FA,
    0x19761B069BF56555,
    0x8B8F5E8343B6AD56,
    0x3E5D1CFD144821D9,
    0xEC5C1E2CA2B0CD8F,
    0xFAF7E0FEA7FBB57F,
    0x000000D3BA12961B,
    0xDA3F90178401B18E,
    0x70FF906DE33A5FEB,
    0x0527D5A7C06970E7,
    0x22D8E773607C13E9,
    0xC9AB70DF643C3BAC,
    0xEDA4C6DC8ABE12E3,
    0xECEF1F410033E78A,
    0x0024C2B274AC72CB,
    0x06740D954FA900B4,
    0x1D7A299B323D6304,
    0xB3C37CB298CBEAD5,
    0xC986E3C76178739B,
    0x9FABEA364B46F58A,
    0x6DA214C5AF85CC56,
    0x17A43ED8B7A38F84,
    0x6ECCEC511D9ADBEB,
    0xF9CAB30913335AFB,
    0x4A5E60C5F415EED2,
    0x00006967503672B4,
    0x9DA51D121454BB87,
    0x84321E13B9BBC816,
    0xFB3D6FB6AB2FDD8D,
    0x60305EED8E160A8D,
    0xCBBF4B14E9946CE8,
    0x00004F63381B10C3,
    0x07D5B7816FCC4E10,
    0xE5A536726A6A8155,
    0x57AFB23447A07FDD,
    0x18F346F7ABC9D394,
    0x636DC655D61AD33D,
    0xCC8BAB4939F7F3F6,
    0x63C7A906C1DD187B,
)
# hashing.md
DATA_KEY = bytes([
    102, 151, 245, 119, 91, 149, 80, 222, 49, 53, 203, 172, 165, 151, 24, 28,
    157, 228, 33, 16, 155, 235, 43, 88, 180, 208, 176, 75, 147, 173, 242, 41,
])  # fmt: skip
INTERNAL_NODE_KEY = bytes([
    1, 126, 197, 199, 165, 71, 41, 150, 253, 148, 102, 102, 180, 138, 2, 230,
    93, 221, 83, 111, 55, 199, 109, 210, 248, 99, 82, 230, 74, 83, 113, 63,
])  # fmt: skip
BRANCHING = 4
"""xet-core's mean fan-out of the aggregated hash tree (merklehash, aggregated_hashes.rs)."""
_MASK64 = (1 << 64) - 1
_BLOCK = 1 << 22


def reference_boundaries(data: bytes) -> list[int]:
    """Chunk ends, byte by byte as chunking.md's pseudocode says (slow: for tests)."""
    if len(data) < MIN_CHUNK:
        return [len(data)] if data else []
    ends, h, start = [], 0, 0
    for i, b in enumerate(data):
        h = ((h << 1) + TABLE[b]) & _MASK64
        size = i + 1 - start
        if size < MIN_CHUNK:
            continue
        if size >= MAX_CHUNK or (h & MASK) == 0:
            ends.append(i + 1)
            start, h = i + 1, 0
    if start < len(data):
        ends.append(len(data))
    return ends


def _candidates(data: bytes) -> list[int]:
    """Every position whose 64-byte window hash passes the mask (as chunk ends, i + 1).

    The hash is reset at each boundary, but it is only tested 8 KiB into a chunk, where the
    last 64 bytes alone make it: so one pass over the file, in numpy, finds every candidate.
    """
    table = np.array(TABLE, dtype=np.uint64)
    found: list[int] = []
    for at in range(0, len(data), _BLOCK):
        lo = max(0, at - WINDOW)
        gears = table[np.frombuffer(data[lo : at + _BLOCK], dtype=np.uint8)]
        h = np.zeros_like(gears)
        for k in range(WINDOW):  # uint64 arrays wrap, as the spec's arithmetic does
            h[k:] += gears[: len(gears) - k] << np.uint64(k)
        hits = np.nonzero((h & np.uint64(MASK)) == 0)[0] + lo
        found += [int(i) + 1 for i in hits if i >= at]
    return found


def boundaries(data: bytes) -> list[int]:
    """Chunk ends of `data` by chunking.md's algorithm (the same as `reference_boundaries`)."""
    if len(data) < MIN_CHUNK:
        return [len(data)] if data else []
    ends: list[int] = []
    start = 0
    for end in _candidates(data):
        while end - start > MAX_CHUNK:
            start += MAX_CHUNK
            ends.append(start)
        if end - start >= MIN_CHUNK:
            ends.append(end)
            start = end
    while len(data) - start > MAX_CHUNK:
        start += MAX_CHUNK
        ends.append(start)
    if start < len(data):
        ends.append(len(data))
    return ends


def hash_string(raw: bytes) -> str:
    """A 32-byte hash as api.md writes it: each 8-byte group as a little-endian u64 in hex."""
    return "".join(raw[i : i + 8][::-1].hex() for i in range(0, 32, 8))


def chunk_hash(data: bytes) -> bytes:
    return blake3(data, key=DATA_KEY).digest()


def _node(children: list[tuple[bytes, int]]) -> tuple[bytes, int]:
    text = "".join(f"{hash_string(h)} : {size}\n" for h, size in children)
    return blake3(text.encode(), key=INTERNAL_NODE_KEY).digest(), sum(s for _, s in children)


def _cut(level: list[tuple[bytes, int]]) -> int:
    """How many of `level`'s first hashes the next node takes (xet-core's next_merge_cut)."""
    if len(level) <= 2:
        return len(level)
    end = min(2 * BRANCHING + 1, len(level))
    for i in range(2, end):
        if int.from_bytes(level[i][0][24:32], "little") % BRANCHING == 0:
            return i + 1
    return end


def merkle_root(chunks: list[tuple[bytes, int]]) -> bytes:
    """The aggregated hash of (chunk hash, size) pairs (hashing.md, xorb hashes)."""
    level = list(chunks)
    if not level:
        return bytes(32)
    while len(level) > 1:
        merged, i = [], 0
        while i < len(level):
            cut = i + _cut(level[i:])
            merged.append(_node(level[i:cut]))
            i = cut
        level = merged
    return level[0][0]


def file_hash(chunks: list[tuple[bytes, int]]) -> str:
    """The Xet file hash (the tree listing's `xetHash`): the root keyed again with zeros."""
    return hash_string(blake3(merkle_root(chunks), key=bytes(32)).digest())


@dataclass(frozen=True)
class Term:
    """One reconstruction term: a run of consecutive chunks of one xorb."""

    xorb: str
    start: int
    end: int
    unpacked_length: int

    def json(self) -> dict[str, object]:
        return {
            "hash": self.xorb,
            "unpacked_length": self.unpacked_length,
            "range": {"start": self.start, "end": self.end},
        }


@dataclass
class XetStore:
    """Files uploaded through Xet: every chunk stored once (global dedupe), in the xorb of the
    upload that first brought it; a file is the terms that rebuild it."""

    files: dict[str, list[Term]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    _chunks: dict[bytes, tuple[str, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def upload(self, data: bytes) -> str:
        """Store `data` (deduplicated against every earlier upload); its file hash."""
        pieces, start = [], 0
        for end in boundaries(data):
            pieces.append((chunk_hash(data[start:end]), end - start))
            start = end
        file_id = file_hash(pieces)
        with self._lock:
            if file_id not in self.files:
                self.files[file_id] = self._terms(pieces)
                self.sizes[file_id] = len(data)
        return file_id

    def _terms(self, pieces: list[tuple[bytes, int]]) -> list[Term]:
        new = [(h, n) for h, n in dict(pieces).items() if h not in self._chunks]
        xorb = hash_string(merkle_root(new)) if new else ""
        for index, (h, _) in enumerate(new):
            self._chunks[h] = (xorb, index)
        terms: list[Term] = []
        for h, size in pieces:
            where, index = self._chunks[h]
            last = terms[-1] if terms else None
            if last and last.xorb == where and last.end == index:
                terms[-1] = Term(where, last.start, index + 1, last.unpacked_length + size)
            else:
                terms.append(Term(where, index, index + 1, size))
        return terms

    def reconstruction(self, file_id: str, cas_url: str) -> dict[str, object] | None:
        """The `QueryReconstructionResponseV2` of a stored file, None if unknown."""
        terms = self.files.get(file_id)
        if terms is None:
            return None
        xorbs: dict[str, list[dict[str, object]]] = {}
        for term in terms:
            chunks = {"start": term.start, "end": term.end}
            # NOTE: signed URLs to xorb bytes; nothing here serves them (no test needs data)
            url = f"{cas_url}/xorbs/default/{term.xorb}"
            ranges = [{"chunks": chunks, "bytes": {"start": 0, "end": term.unpacked_length - 1}}]
            xorbs.setdefault(term.xorb, []).append({"url": url, "ranges": ranges})
        body = {"offset_into_first_range": 0, "terms": [t.json() for t in terms]}
        return {**body, "xorbs": xorbs}


_DAY_S = 24 * 3600


class XetService:
    """The simulator's Xet side: `xetHash` in listings, read tokens, reconstructions.

    Files are uploaded as they are first listed (a history is listed oldest first, as it was
    pushed), so a re-upload is deduplicated against what came before it, as on the Hub.
    """

    def __init__(self) -> None:
        self.enabled = False
        self.store = XetStore()
        self.tokens: dict[str, tuple[str, str]] = {}
        """Access token -> (repo id, revision) it was issued for."""
        self.served: Counter[str] = Counter()
        """Reconstructions served, by Xet file hash."""
        self.token_headers_only = False
        """Answer the token endpoint with headers and an empty body (huggingface_hub's reading)."""
        self._by_oid: dict[str, str] = {}

    def upload(self, data: bytes) -> str:
        """Upload an LFS object ahead of its listing (a benchmark's many large files would
        otherwise be chunked inside one tree request); its Xet hash."""
        oid = hashlib.sha256(data).hexdigest()
        if oid not in self._by_oid:
            self._by_oid[oid] = self.store.upload(data)
        return self._by_oid[oid]

    def listed(self, item: dict[str, Any], read: Callable[[str], bytes | None]) -> dict[str, Any]:
        """A tree item with its `xetHash` when Xet is on and the LFS object is held."""
        lfs = item.get("lfs")
        if not self.enabled or not isinstance(lfs, dict):
            return item
        oid = lfs["oid"]
        if oid not in self._by_oid:
            data = read(oid)
            if data is None:
                return item
            self._by_oid[oid] = self.store.upload(data)
        return {**item, "xetHash": self._by_oid[oid]}

    def token(self, repo_id: str, sha: str, cas_url: str) -> Reply:
        if not self.enabled:
            raise HubError(404, "Xet is not enabled for this repo")
        access = f"xet_{secrets.token_hex(8)}"
        self.tokens[access] = (repo_id, sha)
        exp = str(int(time.time()) + _DAY_S)
        headers = {"X-Xet-Cas-Url": cas_url, "X-Xet-Access-Token": access}
        headers["X-Xet-Token-Expiration"] = exp
        if self.token_headers_only:
            return Reply(200, headers, b"")
        reply = json_reply({"accessToken": access, "exp": int(exp), "casUrl": cas_url})
        reply.headers.update(headers)
        return reply

    def serve(self, file_id: str, auth: str | None, cas_url: str) -> Reply:
        """`GET /v2/reconstructions/{file_id}` (api.md): 401 without a token we issued."""
        if (auth or "").removeprefix("Bearer ").strip() not in self.tokens:
            return json_reply({"error": "Unauthorized"}, 401)
        body = self.store.reconstruction(file_id, cas_url)
        if body is None:
            return json_reply({"error": "Not Found"}, 404)
        self.served[file_id] += 1
        return json_reply(body)
