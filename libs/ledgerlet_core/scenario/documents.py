"""YAML or JSON text to documents, within the bounds of :mod:`bounds`.

Shared by the scenario loader (one document) and ``ledgerlet import`` (any number:
``kubectl get -o yaml`` prints one ``List``, files joined with ``---`` hold several).
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgspec
import yaml

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario import fast_yaml
from ledgerlet_core.scenario.bounds import check_aliases, check_block_depth

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
#: the longest integer text read (Python converts at most this many digits; an int64, the
#: most any field holds, has 19: anything this long is refused where it is used)
MAX_INT_CHARS: Final = 4000


class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's parser when there is one), refusing a mapping that
    repeats a key: YAML says keys are unique, and PyYAML would silently keep the last."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key_node.value!r}",
                        key_node.start_mark,
                    )
                seen.add(key_node.value)
        result: dict[Any, Any] = super().construct_mapping(node, deep)
        return result

    def construct_bounded_int(self, node: yaml.ScalarNode) -> int:
        """An integer, refused with its line when it is too long to convert (PyYAML's
        ``int()`` raised a bare ValueError past Python's limit on digits)."""
        if len(node.value) > MAX_INT_CHARS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"an integer of {len(node.value):,} characters is too long to read (at most {MAX_INT_CHARS:,})",
                node.start_mark,
            )
        # (not super(): fast_yaml calls the loader's constructors on a bare SafeConstructor)
        value: int = yaml.constructor.SafeConstructor.construct_yaml_int(self, node)
        return value


UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", UniqueKeyLoader.construct_bounded_int)


class KubernetesLoader(UniqueKeyLoader):
    """Reads timestamps as the strings Kubernetes' own (YAML-to-JSON) decoding keeps:
    an unquoted ``creationTimestamp: 2024-01-01T00:00:00Z`` is text to the API server,
    where YAML 1.1 would make it a ``datetime``."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in UniqueKeyLoader.yaml_implicit_resolvers.items()
    }


def read_documents(text: str, source: str, loader: type[UniqueKeyLoader] = UniqueKeyLoader) -> list[Any]:
    """Every document of YAML 1.1 (as Kubernetes tooling reads it) or JSON, which is
    parsed much faster. A text opening with ``{`` is tried as JSON first; flow-style YAML
    opens the same way, so it is then read as YAML (and if neither reads it, the JSON
    error is the one reported). Empty documents are left out. A large YAML text is read
    by rapidyaml where that gives exactly what PyYAML gives (:mod:`fast_yaml`), by
    PyYAML otherwise."""
    json_error: msgspec.DecodeError | None = None
    if text.lstrip().startswith("{"):
        try:
            return [msgspec.json.decode(text.encode())]
        except msgspec.DecodeError as exc:
            json_error = exc
        except RecursionError:
            raise InputError("nested too deeply", file=source, obj="JSON") from None
    check_block_depth(text, source)
    if len(text) >= fast_yaml.FAST_MIN_CHARS:
        fast = fast_yaml.read_fast(text, loader)
        if fast is not None:  # it read no alias (none to bound) and no repeated key
            return fast
    try:
        docs = list(yaml.load_all(text, Loader=loader))
    except RecursionError:
        raise InputError("nested too deeply", file=source, obj="YAML") from None
    except yaml.YAMLError as exc:
        if json_error is not None:
            raise InputError(f"not valid JSON: {json_error}", file=source, obj="JSON") from None
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"not valid YAML: {problem}", file=source, obj="YAML", field=where) from None
    docs = [d for d in docs if d is not None]
    if "&" in text:  # anchors, so perhaps aliases
        for doc in docs:
            check_aliases(doc, source)
    return docs


def read_document(text: str, source: str) -> Any:
    """The one document a file must hold (a scenario)."""
    docs = read_documents(text, source)
    if len(docs) != 1:
        raise InputError(f"expected exactly one YAML document, found {len(docs)}", file=source)
    return docs[0]
