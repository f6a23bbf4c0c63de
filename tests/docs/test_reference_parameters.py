"""Every function and class the API reference renders, and every public one of the layers held to it, documents
its parameters: the google ``Args:`` section (``Attributes:`` for a class whose parameters are its fields) that
mkdocstrings renders as the parameter table. Read from the source as the reference reads it (griffe on the
laid-out package, docs/hooks/api_source.py), so a name counted here is a name the built site shows without one."""
from __future__ import annotations

import importlib.util
import re
from typing import Iterator, List

import pytest

from .fences import ROOT

griffe = pytest.importorskip("griffe")

_DIRECTIVE = re.compile(r"^::: (\S+)", re.M)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("api_source_hook", ROOT / "docs" / "hooks" / "api_source.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    tree = hook.lay_out(ROOT, tmp_path_factory.mktemp("api") / "src")
    return griffe.load("tsdp", search_paths=[str(tree)], docstring_parser="google", resolve_aliases=False,
                       try_relative_path=False)


def _parameters(obj) -> List[str]:
    try:
        parameters = obj.parameters
    except (AttributeError, ValueError):
        return []
    return [p.name for p in parameters if p.name not in ("self", "cls")
            and p.kind.value not in ("variadic positional", "variadic keyword")]


def _documents_parameters(obj) -> bool:
    if obj.docstring is None:
        return False
    wanted = {"parameters", "attributes"} if obj.is_class else {"parameters"}
    return any(section.kind.value in wanted for section in obj.docstring.parse("google"))


def _public(obj) -> Iterator:
    """``obj`` and what the reference renders with it: a module's public functions and classes, a class's public
    methods (mkdocstrings' filter ``!^_``)."""
    if obj.is_module:
        for name, member in obj.members.items():
            if not name.startswith("_") and not member.is_alias:
                yield from _public(member)
    elif obj.is_function or obj.is_class:
        yield obj
        if obj.is_class:
            for name, member in obj.members.items():
                if not name.startswith("_") and not member.is_alias and member.is_function:
                    yield member


def _documented_by_its_base(obj) -> bool:
    """A method whose docstring has no Args section, overriding a method of a base class that documents the same
    parameters: its parameters are documented once, on the base (e.g. the claims' ``compute`` and ``rule``)."""
    if not (obj.is_function and obj.parent is not None and obj.parent.is_class):
        return False
    if obj.docstring is not None and any(s.kind.value == "parameters" for s in obj.docstring.parse("google")):
        return False
    for base in obj.parent.mro():
        inherited = base.members.get(obj.name)
        if inherited is not None and not inherited.is_alias and inherited.is_function:
            return _parameters(inherited) == _parameters(obj) and _documents_parameters(inherited)
    return False


def _missing(objects, *, inherited: bool = False) -> List[str]:
    """The paths of the objects with parameters and no Args section (``inherited``: an override whose base documents
    them counts as documented, as ``inspect.getdoc`` reads it; a rendered page shows only the object's own)."""
    return sorted({o.path for o in objects if _parameters(o) and not _documents_parameters(o)
                   and not (inherited and _documented_by_its_base(o))})


def _rendered(package) -> Iterator:
    for page in sorted((ROOT / "docs" / "reference").glob("*.md")):
        for name in _DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            obj = package[name.removeprefix("tsdp.")]
            yield from _public(obj.final_target if obj.is_alias else obj)


def test_the_reference_renders_parameters_for_every_rendered_function(package):
    rendered = list(_rendered(package))
    assert len(rendered) > 100  # the pages were read
    missing = _missing(rendered)
    assert missing == [], f"reference pages: {len(missing)} of {len(rendered)} rendered objects lack an Args section"


def test_every_public_function_of_every_layer_documents_its_parameters(package):
    everything = [o for layer in package.members.values() if not layer.is_alias and layer.is_module
                  for o in _public(layer)]
    assert len(everything) > 1000  # every layer was read
    missing = _missing(everything, inherited=True)
    assert missing == [], f"public functions and classes with parameters but no Args section: {missing}"


def _has_docstring(obj) -> bool:
    """Its own docstring, or, for a method without one, the docstring of the method it overrides in a tsdp base
    class (what ``help()`` and ``inspect.getdoc`` show, e.g. the claims' ``compute``)."""
    if obj.docstring is not None and obj.docstring.value.strip():
        return True
    if obj.is_function and obj.parent is not None and obj.parent.is_class:
        for base in obj.parent.mro():
            inherited = base.members.get(obj.name)
            if inherited is not None and not inherited.is_alias and inherited.docstring is not None:
                return bool(inherited.docstring.value.strip())
    return False


def test_every_public_function_and_class_of_every_layer_has_a_docstring(package):
    """Parameters or not: a public function, class or method (no leading underscore, in every layer and the CLI)
    says what it is; the test above sees only those with parameters."""
    everything = [o for layer in package.members.values() if not layer.is_alias and layer.is_module
                  for o in _public(layer)]
    assert len(everything) > 1000  # every layer was read
    missing = sorted(o.path for o in everything if not _has_docstring(o))
    assert missing == [], f"public functions and classes without a docstring: {missing}"


def test_an_override_counts_as_documented_only_where_its_base_documents_the_same_parameters(package):
    """The claims' overrides are documented by :class:`Claim`'s methods; a rendered page still needs its own Args."""
    compute = package["reports.claim_c1.C1"].members["compute"]
    assert not _documents_parameters(compute) and _documented_by_its_base(compute)
    assert _missing([compute]) == [compute.path] and _missing([compute], inherited=True) == []
    assert not _documented_by_its_base(package["reports.claim_base.Claim"].members["compute"])  # no base above it


def _untyped_documented_parameters(objects) -> List[str]:
    """``path:name`` of each parameter an ``Args:`` section documents with neither an annotation nor a type in the
    docstring: griffe warns on it and the manual's strict build fails (a ``**changes`` without ``: object`` failed
    CI once)."""
    untyped = []
    for obj in objects:
        if obj.docstring is None:
            continue
        for section in obj.docstring.parse("google"):
            if section.kind.value == "parameters":
                untyped += [f"{obj.path}:{p.name}" for p in section.value if p.annotation is None]
    return sorted(set(untyped))


def test_every_rendered_documented_parameter_has_a_type(package):
    rendered = list(_rendered(package))
    assert len(rendered) > 100  # the pages were read
    untyped = _untyped_documented_parameters(rendered)
    assert untyped == [], f"documented parameters without annotation or type (griffe warns, --strict fails): {untyped}"
