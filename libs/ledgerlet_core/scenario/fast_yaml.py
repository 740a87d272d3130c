"""Large YAML read by rapidyaml, where it provably gives what PyYAML gives.

PyYAML builds a Python node, event and value for every YAML node, in Python: a
5,000-node fleet (200 MB of flow-style YAML) took over six minutes and 13 GiB.
rapidyaml (C++) parses it into a tree in seconds; the tree is emitted as JSON, which
msgspec turns into the same dicts, lists and scalars PyYAML would have built.

rapidyaml reads YAML 1.2 and is more lenient than libyaml, so the result is used only
where this module can show it equals PyYAML's (same values, same types, same key
order); for anything else :func:`read_fast` answers ``None`` and PyYAML reads the
text as before, errors and all:

* every plain scalar (each distinct text once) is resolved by the loader's own YAML
  1.1 resolvers and constructors (``yes``, ``0x1F``, ``1_000``, ``1:30``,
  timestamps ...) and must equal what rapidyaml's JSON gives for the same text;
  plain keys must resolve to strings (JSON keys are strings);
* quoted and block scalars are strings on both sides;
* refused here (PyYAML reads them): aliases and merge keys, tags, directives,
  tabs, carriage returns, control characters, line breaks other than ``\\n`` (YAML 1.1
  also breaks lines at NEL, LS and PS), repeated keys (PyYAML names the line), nesting
  deeper than rapidyaml's emitter goes, the float spellings rapidyaml's JSON rewrites,
  and each construct where a differential fuzzer found rapidyaml reading what libyaml
  refuses (the patterns and checks below: plain scalars libyaml would not scan, keys
  that may span lines, ``...``, a document that is a block scalar ...).

It is pure: text in, values out. When the ``rapidyaml`` wheel is missing, PyYAML
reads everything.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import msgspec
import yaml

#: rapidyaml and its bare SWIG functions, imported on first use (see :func:`_rapidyaml`)
ryml: Any = None
_ryml: Any = None
_imported = False

#: texts shorter than this go straight to PyYAML: quick enough there, and rapidyaml
#: prints its own message on standard error when it cannot parse a text
FAST_MIN_CHARS: Final = 1 << 20
#: container nesting (documents included) read here; rapidyaml's JSON emitter stops at 64
MAX_DEPTH: Final = 48

#: characters libyaml refuses or reads as line breaks where rapidyaml does not (NEL, LS,
#: PS), tabs and carriage returns; in ASCII text, the bytes to look for
_UNREAD_CHARS: Final = re.compile("[^\\n\\x20-\\x7e\\xa0-\\u2027\\u202a-\\ud7ff\\ue000-\\ufffd\\U00010000-\\U0010ffff]")
_READ_ASCII: Final = bytes([10, *range(0x20, 0x7F)])
#: texts where rapidyaml reads what libyaml refuses or reads otherwise: a colon right
#: before a flow indicator, directives, document end markers (rapidyaml reads a document
#: after one without ``---``), a line opening with ``:`` (rapidyaml takes a flow key's
#: colon from the next line), a backslash ending a line (an escaped line break in a
#: double-quoted scalar: rapidyaml folds the empty line after one differently)
_UNPROVEN_TEXT: Final = (":[", ":]", ":{", ":}", ":,", "\n%", "\n...", "\\\n")
_UNPROVEN_LINE: Final = re.compile(r"\n[ ]*:(?:[ \n]|$)")
#: ... and, looked for only where the text has the characters they need: a quoted
#: scalar followed by `` - `` on its line (rapidyaml reads a sequence entry there), an
#: explicit key ``?`` in a flow collection (rapidyaml closes ``[?`` by itself), text
#: after a block scalar's header, an anchor whose name libyaml would not scan
_UNPROVEN_RARE: Final = (
    (("' ", '" '), re.compile("['\"] +-(?: |$)", re.MULTILINE)),
    (("?",), re.compile(r"[\[{,][ \n]*\?(?:[ \n]|$)")),
    (("|", ">"), re.compile(r"(?:^|[-?:] )[ ]*[|>][-+0-9]*(?: +[^ #\n]|[^-+0-9 #\n])", re.MULTILINE)),
    (("&",), re.compile(r"(?:^|[ \[{,])&(?![0-9A-Za-z_-]+(?:[ \n,\]}]|$))", re.MULTILINE)),
)
_ANCHOR_NAME: Final = re.compile(rb"[0-9A-Za-z_-]+")
#: characters a plain scalar cannot start with
_INDICATORS: Final = frozenset(",[]{}#&*!|>'\"%@`")
#: a document start marker; and the comments and blank lines that may stand before the first
_DOC_START: Final = re.compile(r"(?:^|\n)---(?=[ \n]|$)")
_NO_CONTENT: Final = re.compile(r"(?:[ ]*(?:#[^\n]*)?\n)*")
#: where the tree's nodes start, near enough: flow entries, lines, block sequence entries
_NODE_STARTS: Final = (b",", b"{", b"[", b"\n", b"- ")
#: rapidyaml's JSON writes these for inf/nan spellings, whatever the style
_NANINF_JSON: Final = ('".inf"', '"-.inf"', '".nan"')


def _rapidyaml() -> Any:
    """rapidyaml, imported on first use (the import takes tens of milliseconds, which
    every command and service would pay at start for files it mostly never reads this
    way); ``None`` when the wheel is missing."""
    global ryml, _ryml, _imported
    if not _imported:
        _imported = True
        try:
            import ryml as module  # type: ignore[import-untyped]
        except ImportError:  # the wheel is a dependency; without it PyYAML reads all
            return None
        ryml, _ryml = module, module._ryml
    return ryml


def available() -> bool:
    """Whether the rapidyaml wheel is installed."""
    return _rapidyaml() is not None


def read_fast(text: str, loader: type[Any]) -> list[Any] | None:
    """The non-empty documents of ``text`` as ``yaml.load_all(text, loader)`` reads them
    (``None`` left out), or ``None`` when that is not proven for this text."""
    if _rapidyaml() is None or not _text_proven(text):
        return None
    buf = bytearray(text, "utf-8")
    tree = ryml.Tree()
    # room for every node up front: grown by doubling instead, the tree takes up to twice
    # the memory and the parse several times longer. A node starts at a comma, a bracket,
    # a line or a "- " (a few bytes at least, whatever the text holds)
    tree.reserve(min(sum(buf.count(c) for c in _NODE_STARTS) + 2, len(buf) // 12 + 16))
    try:
        ryml.parse_in_place(buf, tree)
    except ryml.ExceptionBasic:
        return None
    scan = _scan(tree)
    if scan is None:
        return None
    plain_vals, plain_keys, roots = scan
    if not _markers_agree(text, len(roots)):
        return None
    if not _scalars_proven(plain_vals, plain_keys, loader):
        return None
    try:
        emitted = [ryml.emit_json(tree, r) for r in roots]
    except ryml.ExceptionBasic:
        return None
    del tree, buf  # the tree is the largest thing here: gone before the values are built
    docs: list[Any] = []
    emitted.reverse()
    while emitted:
        js = emitted.pop()  # each document's JSON is dropped once its values are built
        if any(s in js for s in _NANINF_JSON):
            return None
        try:
            doc = msgspec.json.decode(js)
        except (msgspec.DecodeError, RecursionError):
            return None
        if doc is not None:
            docs.append(doc)
    return docs


class _Unproven(Exception):
    """Raised inside the walk: the tree holds something not proven here."""


def _scan(tree: Any) -> tuple[set[bytes], set[bytes], list[int]] | None:
    """One walk over the tree: the distinct plain values and keys, and the documents'
    roots; ``None`` for anything not proven here (aliases, tags, repeated keys, deep
    nesting, anchors or scalars libyaml would not scan as rapidyaml did)."""
    this = tree.this  # the bare SWIG pointer: calls with it are several times faster
    node_type, key, val = _ryml.Tree_type, _ryml.Tree_key, _ryml.Tree_val
    first_child, next_sibling, none = _ryml.Tree_first_child, _ryml.Tree_next_sibling, ryml.NONE
    unproven = ryml.KEYREF | ryml.VALREF | ryml.KEYTAG | ryml.VALTAG
    anchored = ryml.KEYANCH | ryml.VALANCH  # an anchor alone changes no value, if libyaml reads its name
    container, is_map, flow_style = ryml.MAP | ryml.SEQ, ryml.MAP, ryml.FLOW_SL | ryml.FLOW_ML
    key_plain, key_nil, val_plain, val_nil = ryml.KEY_PLAIN | ryml.KEYNIL, ryml.KEYNIL, ryml.VAL_PLAIN, ryml.VALNIL
    block_scalar = ryml.VAL_LITERAL | ryml.VAL_FOLDED
    plain: set[bytes] = set()  # plain scalars in block context
    flow_plain: set[bytes] = set()  # ... and inside a flow collection, where ,[]{} end them
    keys_plain: set[bytes] = set()
    flow_keys: set[bytes] = set()

    rare = unproven | anchored
    all_keys: set[bytes] = set()  # every key, looked at once for a line break or a space

    again: list[Callable[[int, int, int], None]] = []

    def walk(node: int, flags: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _Unproven
        in_flow = bool(flags & flow_style)
        add_value = (flow_plain if in_flow else plain).add
        child = first_child(this, node)
        mapping = bool(flags & is_map)
        seen: set[bytes] = set()  # a mapping's keys
        add_key, add_plain_key = seen.add, (flow_keys if in_flow else keys_plain).add
        while child != none:
            f = node_type(this, child)
            if f & rare and (f & unproven or not _anchors_ok(tree, child, f)):
                raise _Unproven
            if mapping:
                k = b"" if f & key_nil else bytes(key(this, child))
                if k in seen:
                    raise _Unproven  # repeated: PyYAML names the line
                add_key(k)
                if f & key_plain:
                    add_plain_key(k)
            if f & container:
                again[0](child, f, depth + 1)
            elif f & val_nil:
                plain.add(b"")
            elif f & val_plain:
                add_value(bytes(val(this, child)))
            child = next_sibling(this, child)
        all_keys.update(seen)

    root = node_type(this, 0)
    if root == 0:  # nothing but comments or blank lines
        return set(), set(), []
    roots = [0]
    if root & ryml.STREAM == ryml.STREAM:  # several documents: each is emitted alone
        roots = []
        doc = first_child(this, 0)
        while doc != none:
            roots.append(doc)
            doc = next_sibling(this, doc)
    again.append(walk)
    try:
        for doc in roots:
            f = node_type(this, doc)
            if f & block_scalar or (f & rare and (f & unproven or not _anchors_ok(tree, doc, f))):
                return None  # a document that is a block scalar: libyaml ends it at column 0, rapidyaml does not
            if f & container:
                walk(doc, f, 1)
            elif f & val_nil:
                plain.add(b"")
            elif f & val_plain:
                plain.add(bytes(val(this, doc)))
    except _Unproven:
        return None
    finally:
        # walk calls itself through ``again``: emptied, it keeps no cycle holding the tree
        # (the largest thing here) until the cyclic collector runs, which reading pauses
        again.clear()
    if any(b" " in k or b"\n" in k for k in all_keys):
        return None  # perhaps a key over several lines, which libyaml refuses
    if not all(_plain_ok(s, False) for s in plain) or not all(_plain_ok(s, False) for s in keys_plain):
        return None
    if not all(_plain_ok(s, True) for s in flow_plain) or not all(_plain_ok(s, True) for s in flow_keys):
        return None
    return plain | flow_plain, keys_plain | flow_keys, roots


def _anchors_ok(tree: Any, node: int, flags: int) -> bool:
    """Anchor names libyaml scans: letters, digits, ``-`` and ``_``."""
    names = []
    if flags & ryml.KEYANCH:
        names.append(tree.key_anchor(node))
    if flags & ryml.VALANCH:
        names.append(tree.val_anchor(node))
    return all(n is not None and _ANCHOR_NAME.fullmatch(bytes(n)) for n in names)


def _text_proven(text: str) -> bool:
    """No character or construct rapidyaml reads otherwise than libyaml (each looked for
    with a quick search: the text may be a gigabyte)."""
    if text.startswith(("%", "...")) or text[:256].lstrip(" ").startswith(":") or text.endswith("\\"):
        return False
    if text.isascii():
        if text.encode("ascii").translate(None, _READ_ASCII):
            return False
    elif _UNREAD_CHARS.search(text):
        return False
    if any(s in text for s in _UNPROVEN_TEXT) or _UNPROVEN_LINE.search(text):
        return False
    return not any(any(c in text for c in needs) and rx.search(text) for needs, rx in _UNPROVEN_RARE)


def _markers_agree(text: str, documents: int) -> bool:
    """Each ``---`` at a line's start began a document, as in libyaml (rapidyaml reads one
    inside a flow collection or a quoted scalar as text)."""
    first = _DOC_START.search(text)
    if first is None:
        return documents <= 1
    markers = len(_DOC_START.findall(text, first.start()))
    implicit = 0 if _NO_CONTENT.fullmatch(text, 0, first.end() - 3) else 1
    return documents == markers + implicit


def _plain_ok(raw: bytes, in_flow: bool) -> bool:
    """Whether libyaml scans this text as one plain scalar, as rapidyaml did (rapidyaml
    also takes ``]x``, ``x:`` or ``a: b`` as plain where libyaml refuses them)."""
    if not raw:
        return True
    s = raw.decode()
    if s[0] in _INDICATORS or s in ("-", "?", ":") or (in_flow and s[0] in "?:"):
        return False
    if ": " in s or " #" in s or s.endswith(":") or "\n" in s:
        return False
    return not (in_flow and any(c in s for c in ",[]{}"))


def _scalars_proven(plain_vals: set[bytes], plain_keys: set[bytes], loader: type[Any]) -> bool:
    """Each plain value means what PyYAML makes of it, and each plain key is a string.

    The expected values come from the loader's own resolvers and constructors; what
    rapidyaml makes of the same texts comes from one small document of them all."""
    resolve = _Resolver(loader)
    if any(type(resolve.value(k.decode())) is not str for k in plain_keys):
        return False
    if not plain_vals:
        return True
    texts = list(plain_vals)
    expected = [resolve.value(t.decode()) for t in texts]
    sample = ryml.Tree()
    try:
        ryml.parse_in_arena(b"".join(b"- " + t + b"\n" for t in texts), sample)
        got = msgspec.json.decode(ryml.emit_json(sample, 0))
    except (ryml.ExceptionBasic, msgspec.DecodeError):
        return False
    return (
        isinstance(got, list)
        and len(got) == len(expected)
        and all(type(g) is type(e) and g == e for g, e in zip(got, expected, strict=True))
    )


class _Resolver(yaml.resolver.BaseResolver):
    """A plain scalar as ``loader`` reads it: its implicit resolvers pick the tag, its
    constructors build the value."""

    def __init__(self, loader: type[Any]) -> None:
        super().__init__()
        self.yaml_implicit_resolvers = loader.yaml_implicit_resolvers
        self._constructors = loader.yaml_constructors
        self._constructor = yaml.constructor.SafeConstructor()
        self._first = frozenset(loader.yaml_implicit_resolvers)

    def value(self, text: str) -> Any:
        """``text`` as an untagged plain scalar; a tag with no constructor (``=``,
        ``<<``) answers an object equal to nothing JSON gives."""
        if text and text[0] not in self._first and None not in self._first:
            return text
        tag = self.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
        build = self._constructors.get(tag)
        if build is None:
            return _Unconstructed()
        try:
            return build(self._constructor, yaml.ScalarNode(tag, text))
        except Exception:  # PyYAML would fail here too: it reads the text and says so
            return _Unconstructed()


class _Unconstructed:
    """A plain scalar PyYAML would refuse or treat specially: equal to nothing."""

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0
