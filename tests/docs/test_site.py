"""The manual's build pieces: the generated benchmark page, the API source layout, the docstring
rendering, and a navigation that lists every page (CI's `mkdocs build --strict` checks links and
references; these run in the fast suite, without mkdocs)."""
from __future__ import annotations

import importlib.util
import json

import pytest

from .fences import ROOT

DOCS = ROOT / "docs"


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(f"hook_{name}", DOCS / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_page_has_one_section_per_file_with_its_machine():
    page = _hook("benchmark_page")
    files = sorted((DOCS / "benchmarks").glob("*.json"))
    assert files, "the benchmark page needs `tsdp bench ... --json` files in docs/benchmarks/"
    text = page.render()
    for path in files:
        record = json.loads(path.read_text())
        assert record["command"].startswith(f"tsdp bench {record['bench']}"), path
        assert f"## `{record['command']}`" in text
    timed = [json.loads(p.read_text()) for p in files if json.loads(p.read_text())["bench"] != "canary"]
    for record in timed:  # every timing carries where it was measured
        envs = list(page._environments(record))
        assert envs and all("machine" in e["before"] and "load" in e["before"] for e in envs), record["command"]
    assert text.count("## `tsdp bench") == len(files)


def test_benchmark_page_refuses_an_unknown_bench(tmp_path):
    page = _hook("benchmark_page")
    (tmp_path / "x.json").write_text(json.dumps({"bench": "nonesuch", "command": "tsdp bench nonesuch"}))
    with pytest.raises(KeyError):
        page.render(tmp_path)
    with pytest.raises(ValueError):
        page.render(tmp_path / "empty")


def test_api_source_lays_out_the_installed_package(tmp_path):
    tree = _hook("api_source").lay_out(ROOT, tmp_path / "api")
    for module in ("tsdp/__init__.py", "tsdp/cli/main.py", "tsdp/verify/accountant.py", "tsdp/theorems/config.py",
                   "tsdp/attacks/canary/user_training.py", "tsdp/training/train.py", "tsdp/datasets/grunfeld.csv",
                   "tsdp/experiments/paper_tables.json", "tsdp/bench/loop.py", "tsdp/reports/claims.py"):
        assert (tree / module).is_file(), module
    assert not list(tree.rglob("__pycache__"))


def test_docstring_roles_become_optional_links_by_importable_name():
    roles = _hook("docstring_roles")
    text = "Uses :func:`tsdp.verify.accounting.epsilon` and ``sigma``; see :mod:`~verify.pld`::\n\n    code\n"
    assert roles.markdown(text) == (
        'Uses <autoref identifier="tsdp.verify.accounting.epsilon" optional><code>tsdp.verify.accounting.epsilon'
        '</code></autoref> and `sigma`; see <autoref identifier="tsdp.verify.pld" optional><code>pld</code>'
        "</autoref>:\n\n    code\n")
    assert roles.markdown(":class:`~Verdict`\\ s") == (
        '<autoref identifier="Verdict" optional><code>Verdict</code></autoref>s')
    # a repository path links by its installed name; a bare name through the docstring's scope
    assert roles.importable("attacks.canary.evidence.pool") == "tsdp.attacks.canary.evidence.pool"
    assert roles.importable("training.train.train") == "tsdp.training.train.train"
    scope = {"ConfigError": "tsdp.theorems.config.ConfigError"}
    assert roles.importable("ConfigError.name", scope.__getitem__) == "tsdp.theorems.config.ConfigError.name"
    assert roles.importable("numpy.ndarray", scope.__getitem__) == "numpy.ndarray"  # unresolved: as given


def test_the_built_reference_links_its_cross_references():
    """The griffe extension on the real source: a role in a public docstring resolves to its reference entry."""
    griffe = pytest.importorskip("griffe")
    roles = _hook("docstring_roles")
    tree = _hook("api_source").lay_out(ROOT, ROOT / "build" / "api-src-test")
    try:
        module = griffe.load("tsdp.testing.check", search_paths=[str(tree)], resolve_aliases=False)
        rendered = roles.markdown(module.docstring.value, module.resolve)
    finally:
        import shutil

        shutil.rmtree(tree, ignore_errors=True)
    assert '<autoref identifier="tsdp.theorems.config.TrainingConfig" optional>' in rendered


def _nav_pages(node) -> list:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for v in node.values() for p in _nav_pages(v)]
    return [p for v in node for p in _nav_pages(v)]


def test_every_page_is_in_the_navigation_and_every_nav_entry_exists():
    yaml = pytest.importorskip("yaml")  # mkdocs' own dependency (the docs extra)

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", lambda loader, suffix, node: suffix)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    listed = set(_nav_pages(config["nav"]))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "hooks" not in p.parts}
    assert pages == listed, (sorted(pages - listed), sorted(listed - pages))


def test_readme_links_into_the_manual_resolve():
    import re

    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links and all((ROOT / link).is_file() for link in links), [l for l in links if not (ROOT / l).is_file()]


def test_the_examples_page_shows_every_example_script():
    page = (DOCS / "examples.md").read_text()
    scripts = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
    assert scripts and all(f'--8<-- "examples/{name}"' in page for name in scripts), scripts


def _public_callables():
    """(name, object) of every function and class of ``tsdp.__all__`` and of
    ``tsdp.testing.__all__``."""
    import inspect

    import tsdp
    import tsdp.testing

    found = []
    for module, names in ((tsdp, tsdp.__all__),
                          (tsdp.testing, tsdp.testing.__all__)):
        for name in names:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                found.append((f"{module.__name__}.{name}", obj))
    return found


def _parameters(obj) -> list:
    """The names a caller passes (no self, *args, **kwargs); [] where Python cannot tell (a builtin's __init__)."""
    import inspect

    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in signature.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]


def _sections(obj) -> dict:
    """The docstring's Google sections (griffe's parser, as the reference renders them): kind -> list of items."""
    import inspect

    griffe = pytest.importorskip("griffe")
    parsed = griffe.Docstring(inspect.getdoc(obj) or "", parser="google").parse()
    sections: dict = {}
    for section in parsed:
        sections.setdefault(section.kind.value, []).extend(
            section.value if isinstance(section.value, list) else [section.value])
    return sections


def _undocumented(objects) -> list:
    """What the reference's parameter tables would miss: a parameter of a function without an Args entry (or an entry
    naming a parameter the signature lacks), a class's constructor parameter without an Args or Attributes entry,
    a function that returns a value without a Returns section, an entry without a description, a Markdown fence."""
    import inspect

    problems = []
    for name, obj in objects:
        if "```" in (inspect.getdoc(obj) or ""):  # the roles hook reads ``x`` as a literal: a fence breaks
            problems.append(f"{name}: a Markdown fence; an example is a reST literal block (text::, then indented)")
        sections = _sections(obj)
        params = _parameters(obj)
        args = [p.name for p in sections.get("parameters", [])]
        documented = args + ([a.name for a in sections.get("attributes", [])] if inspect.isclass(obj) else [])
        if inspect.isclass(obj):  # an inherited field is documented where it is defined, a base class of tsdp
            documented += [a.name for base in obj.__mro__[1:] if base.__module__.split(".")[0] == "tsdp"
                           for a in _sections(base).get("attributes", [])]
        if not inspect.isclass(obj):
            returns = inspect.signature(obj).return_annotation
            if returns not in (None, "None") and not sections.get("returns"):
                problems.append(f"{name}: no Returns section (it returns {returns})")
        missing = [p for p in params if p not in documented]
        if missing:
            problems.append(f"{name}: parameters without an Args/Attributes entry: {missing}")
        extra = [p for p in args if p not in params]
        if extra:
            problems.append(f"{name}: Args entries the signature lacks: {extra}")
        empty = [getattr(item, "name", "") for kind in ("parameters", "attributes", "returns", "raises")
                 for item in sections.get(kind, []) if not str(getattr(item, "description", "")).strip()]
        if empty:
            problems.append(f"{name}: entries without a description: {empty}")
    return problems


def test_the_public_api_documents_its_parameters_and_returns_in_google_sections():
    """The reference's parameter tables for ``tsdp.__all__`` and ``tsdp.testing.__all__``."""
    objects = _public_callables()
    assert len(objects) >= 40, [name for name, _ in objects]  # the check sees the API, not a failed import
    problems = _undocumented(objects)
    assert not problems, "\n".join(problems)


# Classes of tsdp in the parameters of an exported function that are not options and load from their own layer:
# the data (tsdp.datasets builds it) and the accounting front's memo of resolutions.
_NOT_OPTIONS = {"tsdp.datasets.series.SeriesData", "tsdp.datasets.splits.ForecastSplit",
                "tsdp.verify.resolution.Resolution"}


def _tsdp_classes(hint) -> set:
    """The classes defined in tsdp that a type hint names, through Optional, Union, Sequence and the like."""
    import typing

    if isinstance(hint, type):
        return {hint} if hint.__module__.split(".")[0] == "tsdp" else set()
    return {cls for arg in typing.get_args(hint) for cls in _tsdp_classes(arg)}


def _returned_classes() -> set:
    """The classes of tsdp that the return annotations of the façade's functions name."""
    import inspect
    import typing

    import tsdp

    return {cls for name in tsdp.__all__ if inspect.isfunction(getattr(tsdp, name))
            for cls in _tsdp_classes(typing.get_type_hints(getattr(tsdp, name)).get("return"))}


def test_every_exported_function_takes_options_that_tsdp_exports():
    """``tsdp.train(..., budget=tsdp.Budget(...))``, ``tsdp.audit(..., trials=tsdp.TrialPlan(...))``: every class of
    tsdp a parameter of an exported function or class names is exported by the façade as itself (but the data,
    :data:`_NOT_OPTIONS`, and the ``Choice`` enums, which take their strings: ``Loop(optimizer="sgd")``), and the
    options objects of the functions outside the façade are too."""
    import inspect
    import typing

    import tsdp
    from tsdp.theorems.config import Choice

    seen, returned = set(), _returned_classes()
    for name in tsdp.__all__:
        obj = getattr(tsdp, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)) or obj in returned:  # results: the test below
            continue
        hints = typing.get_type_hints(obj.__init__ if inspect.isclass(obj) else obj)
        hints.pop("return", None)
        seen |= {cls for hint in hints.values() for cls in _tsdp_classes(hint)}
    options = {cls for cls in seen
               if f"{cls.__module__}.{cls.__qualname__}" not in _NOT_OPTIONS and not issubclass(cls, Choice)}
    assert {cls.__name__ for cls in options} >= {"Budget", "Loop", "Evaluation", "Checkpoints", "TrialPlan",
                                                  "Statistic", "Confidence", "ModelTraining", "CanaryOptions",
                                                  "AuditOptions"}  # the check sees the signatures
    missing = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in options
                     if getattr(tsdp, cls.__name__, None) is not cls)
    assert not missing, missing
    from tsdp.attacks.canary.planning import PlanSearch, plan
    from tsdp.attacks.inference.crps_table import InferenceGrid, Releases, crps_tradeoff

    for function, cls in ((plan, PlanSearch), (crps_tradeoff, InferenceGrid), (crps_tradeoff, Releases)):
        assert cls in set(typing.get_type_hints(function).values()) and getattr(tsdp, cls.__name__) is cls
    budget = tsdp.Budget(epochs=2, delta=1e-7)  # the options load and validate from the façade
    assert (budget.epochs, budget.delta) == (2, 1e-7)


def test_every_exported_function_returns_a_class_that_tsdp_exports():
    """``isinstance(result, tsdp.TrainResult)``: every class of tsdp an exported function's return annotation names
    (through Optional, Tuple and the like) is exported by the façade as itself."""
    import tsdp

    returned = _returned_classes()
    assert {cls.__name__ for cls in returned} >= {"TrainResult", "AuditResult", "TrainingAudit", "ModelAuditResult",
                                                   "AccountingResult", "CalibrationResult", "EventAccounting",
                                                   "Bound"}  # the check sees the annotations
    missing = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in returned
                     if getattr(tsdp, cls.__name__, None) is not cls)
    assert not missing, missing


def test_the_integrations_document_their_parameters_and_returns_in_google_sections():
    """The same for the public functions and classes of tsdp.attacks.integrations and of the Opacus loop of
    `tsdp bench planted` (the ``opacus`` extra)."""
    import inspect

    pytest.importorskip("opacus")
    objects = []
    for module in ("tsdp.attacks.integrations.opacus_accountant", "tsdp.attacks.integrations.dpoptimizer_canaries",
                   "tsdp.bench.planted_opacus"):
        mod = importlib.import_module(module)
        objects += [(f"{mod.__name__}.{n}", v) for n, v in vars(mod).items()
                    if not n.startswith("_") and getattr(v, "__module__", None) == mod.__name__
                    and (inspect.isfunction(v) or inspect.isclass(v))]
    assert len(objects) >= 10, [name for name, _ in objects]
    problems = _undocumented(objects)
    assert not problems, "\n".join(problems)


def test_the_google_section_check_sees_a_prose_docstring():
    """The parser the check relies on: a prose docstring has no parameter section, a Google one has it."""
    def prose(config, steps):
        """Account ``config`` for ``steps`` steps; returns ε."""

    def google(config, steps):
        """Account a run.

        Args:
            config: The configuration.
            steps: The steps.

        Returns:
            ε.
        """

    assert "parameters" not in _sections(prose) and "returns" not in _sections(prose)
    assert [p.name for p in _sections(google)["parameters"]] == _parameters(google) == ["config", "steps"]
    assert _sections(google)["returns"][0].description == "ε."
