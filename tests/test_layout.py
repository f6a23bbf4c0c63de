"""The package's shape: layering of the imports, the packages list (the wheel itself: tests/test_installed.py).

Layers, one direction only: theorems <- verify <- executor <- datasets <- training <- attacks <- experiments <-
testing <- reports <- bench <- cli. Every import of
every module (top level or inside a function, i.e. lazy or not) is read from the source with
``ast``; relative imports are resolved against the module's installed name.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tsdp import layers

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

ROOT = Path(__file__).resolve().parents[1]
# repository folder -> installed package (pyproject `package-dir`), and the layers bottom to top: tsdp.layers
FOLDERS = layers.FOLDERS
LAYERS = tuple(layer.package for layer in layers.LAYERS)
TOP_LEVEL = tuple(folder for folder in FOLDERS if folder != "tsdp")  # names that exist only as tsdp.<name>
FORBIDDEN = {  # third-party imports a layer must never make (opacus imports torch)
    "tsdp.theorems": ("torch", "dp_accounting", "opacus"),
    "tsdp.verify": ("torch", "opacus"),
    "tsdp.executor": ("torch", "opacus"),  # it runs anyone's units of work; what a unit needs, the unit imports
    "tsdp.datasets": ("torch", "opacus"),  # series are numpy; the loop (tsdp.training) makes tensors of them
}
FACADE = layers.FACADE  # tsdp/__init__.py: the API, lazily re-exports from every layer


def _package_files():
    """(installed module name, path) of every .py file of the package."""
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__pycache__"]
            if len(parts) != len(rel.parts):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join([package, *parts]), path


def _imports(module: str, path: Path):
    """(imported absolute module name, line) for every import in the file, lazy ones included."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            yield target, node.lineno
            for alias in node.names:  # `from tsdp import verify` / `from . import pld`: submodules
                yield f"{target}.{alias.name}", node.lineno
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) \
                == "import_module" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and not node.args[0].value.startswith("."):
            yield node.args[0].value, node.lineno  # importlib.import_module("tsdp.attacks...")


def _layer(name: str):
    """Index of the layer a tsdp module belongs to (None: not a layer module, e.g. the façade)."""
    for i, layer in enumerate(LAYERS):
        if name == layer or name.startswith(layer + "."):
            return i
    return None


def _facade_exports():
    """tsdp/__init__.py's lazy `_EXPORTS` map: public name -> module."""
    tree = ast.parse((ROOT / "tsdp" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
                exports = ast.literal_eval(node.value)
                return {k: v[0] if isinstance(v, tuple) else v for k, v in exports.items()}
    raise AssertionError("tsdp/__init__.py has no _EXPORTS map")


def layering_violations(files=None):
    """Every import that points up a layer, names a forbidden library, or uses an old top-level name
    (``files``: (module, path) pairs; default every module of the package)."""
    exports = _facade_exports()
    found = []
    for module, path in (_package_files() if files is None else files):
        if module == FACADE:
            continue
        own = _layer(module)
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
        for target, line in _imports(module, path):
            top = target.split(".")[0]
            if top in TOP_LEVEL:
                found.append(f"{where}:{line}: imports top-level {target!r} (use tsdp.{target})")
                continue
            if top == "tsdp":
                name = target
                if target.startswith("tsdp.") and target.count(".") == 1 and target[5:] in exports:
                    name = exports[target[5:]]  # `from tsdp import TrainingConfig`: the module behind it
                layer = _layer(name)
                if own is not None and layer is not None and layer > own:
                    found.append(f"{where}:{line}: {LAYERS[own]} imports {target} ({LAYERS[layer]}, a layer above)")
                continue
            for layer, banned in FORBIDDEN.items():
                if (module == layer or module.startswith(layer + ".")) and top in banned:
                    found.append(f"{where}:{line}: {layer} imports {target}")
    return found


def test_the_walk_sees_lazy_and_relative_imports():
    """The walker itself: a function-level import and a two-dot relative import are both found."""
    imports = dict(_imports("tsdp.theorems.bounds.base", ROOT / "theorems" / "bounds" / "base.py"))
    assert "tsdp.theorems.config" in imports  # `from ..config import ...`
    lazy = [t for t, _ in _imports("tsdp.verify.one_step", ROOT / "verify" / "one_step.py")]
    assert "tsdp.theorems.registry" in lazy  # `from tsdp.theorems.registry import attained_pair`, inside a function
    modules = dict(_package_files())
    assert {"tsdp.theorems.bounds.base", "tsdp.verify.pld", "tsdp.training.train", "tsdp.reports.run",
            "tsdp.cli.main"} <= set(modules)


def test_every_import_points_down_the_layers():
    """theorems <- verify <- executor <- datasets <- training <- attacks <- experiments <- testing <- reports <- bench
    <- cli, lazily imported or not; theorems never imports torch or dp-accounting, verify, the executor and datasets
    never torch; no old top-level names."""
    violations = layering_violations()
    assert not violations, "\n".join(violations)


@pytest.mark.parametrize("module,source", [
    ("tsdp.training.x", "from tsdp.attacks.canary import evidence"),  # the loop imports an attack
    ("tsdp.datasets.x", "from tsdp.training.train import train"),  # the data imports the loop
    ("tsdp.attacks.x", "def f():\n    from tsdp.experiments import cells"),  # lazily, an attack imports an experiment
    ("tsdp.reports.x", "import tsdp.bench.loop"),  # a report imports a benchmark
    ("tsdp.experiments.x", "from ..bench import rounds"),  # relative, up to the benchmarks
    ("tsdp.executor.x", "def f():\n    import tsdp.attacks.montecarlo.trials"),  # the executor imports a unit's code
])
def test_an_import_up_the_new_layers_is_flagged(tmp_path, module, source):
    """The check itself on each new layer's place: a module importing a layer above its own is reported."""
    path = tmp_path / "x.py"
    path.write_text(source + "\n", encoding="utf-8")
    found = layering_violations([(module, path)])  # `from a import b` is read as a and as a.b
    assert found and all("a layer above" in f and f.split(": ", 1)[1].startswith(module.rsplit(".", 1)[0])
                         for f in found), found


def test_pyproject_installs_every_top_level_package_folder_under_tsdp():
    """Each repository folder with an __init__.py is one of pyproject's package-dir entries, under its own name."""
    if tomllib is None:  # pragma: no cover - Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    folders = {d.name for d in ROOT.iterdir() if (d / "__init__.py").is_file()}
    assert {v: k for k, v in package_dir.items()} == {f: FOLDERS[f] for f in folders} == FOLDERS


def test_every_layer_is_a_package_folder_and_every_package_folder_a_layer():
    """tsdp.layers, the one list of layers, names each layer's folder; those are the repository's package folders
    (the façade's aside) and tsdp/cli, bottom to top in the order of DESIGN.md's layering."""
    folders = {d.name for d in ROOT.iterdir() if (d / "__init__.py").is_file()} - {FACADE}
    listed = [layer.folder for layer in layers.LAYERS]
    assert set(listed) == folders | {"tsdp/cli"}
    assert all((ROOT / folder / "__init__.py").is_file() for folder in listed)
    assert all(layer.package == "tsdp." + layer.folder.rpartition("/")[2] for layer in layers.LAYERS)
    design = " ".join((ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8").replace("`", "").split())
    chain = " <- ".join(layer.package.removeprefix("tsdp.") for layer in layers.LAYERS)
    assert chain.replace("<- cli", "<- CLI") in design


def import_graph():
    """{module: {tsdp modules it imports}} over every module of the package, lazy imports included.

    Targets that name an object (``from .x import f`` also yields ``x.f``) are dropped: only
    edges between modules remain. An edge to an enclosing package (``from . import sibling``) is
    dropped too: Python runs every ancestor package before a module anyway, so it is the
    package's own structure, not a dependency. The façade (tsdp/__init__.py) imports by name at
    run time only.
    """
    modules = dict(_package_files())
    return {m: {t for t, _ in _imports(m, path) if t in modules and t != m and not m.startswith(t + ".")}
            for m, path in modules.items()}


def import_cycles(graph):
    """Every cycle of ``graph`` as a list of modules (one per strongly connected component of size > 1)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_anywhere():
    """No module reaches itself through imports, lazy or not (the registry imports the
    bounds; a bound never imports the registry)."""
    cycles = import_cycles(import_graph())
    assert cycles == [], cycles


def test_the_cycle_finder_finds_a_planted_cycle():
    """The check itself: a cycle added to the real graph is reported, with its members."""
    graph = {k: set(v) for k, v in import_graph().items()}
    graph["tsdp.theorems.bounds.base"].add("tsdp.theorems.registry")
    cycles = import_cycles(graph)
    assert any({"tsdp.theorems.bounds.base", "tsdp.theorems.registry"} <= set(c) for c in cycles)


AUDITED = ("tsdp.datasets", "tsdp.training", "tsdp.attacks")  # what an audit runs through: data, loop, attacks


def _floor(module: str) -> str:
    """A floor of the audit chain: a module of attacks.montecarlo, else its attacks subpackage, else its layer
    (tsdp.training, tsdp.datasets)."""
    parts = module.split(".")
    if parts[:3] == ["tsdp", "attacks", "montecarlo"]:
        return module
    return ".".join(parts[:3] if parts[1] == "attacks" else parts[:2])


def longest_chain(graph, start: str):
    """The longest import chain from ``start``, counting floors (:func:`_floor`), within :data:`AUDITED`.

    A floor outside the Monte Carlo subpackage (the loop, the data) is the chain's end: it is
    the thing audited, not a step of the audit.
    """
    def audited(name):
        return any(name == p or name.startswith(p + ".") for p in AUDITED)

    floors = {}
    for m, targets in graph.items():
        if audited(m):
            floors.setdefault(_floor(m), set())
            if _floor(m) == m:  # a montecarlo module: its edges continue the chain
                floors[m].update(_floor(t) for t in targets if audited(t))
    best = {}

    def depth(f, seen):
        if f in best:
            return best[f]
        chains = [depth(g, seen | {f}) for g in sorted(floors.get(f, ())) if g != f and g not in seen]
        # of the longest, one that reaches what is audited (a floor outside the subpackage), whatever the set order
        reaches = lambda chain: not chain[-1].startswith("tsdp.attacks.montecarlo.")  # noqa: E731
        best[f] = [f] + max(chains, key=lambda chain: (len(chain), reaches(chain)), default=[])
        return best[f]

    return depth(_floor(start), frozenset())


def test_the_audit_chain_has_at_most_five_floors():
    """The Monte Carlo audit reaches the loop in at most five floors (it was seven:
    auditor → audit_engine → sequential → distributed → auditor_run → worst_case → loop)."""
    chain = longest_chain(import_graph(), "tsdp.attacks.montecarlo.audit")
    assert len(chain) <= 5, " → ".join(chain)
    assert chain[-1] == "tsdp.training"


NAMED_BY_JOB = ("executor", "datasets", "training", "attacks", "experiments", "bench")  # folders whose names the rule below holds


def test_no_module_name_is_a_prefix_variant_of_a_sibling():
    """Names say what a module does; no two siblings differ by an ``audit``/``auditor``-style prefix (in the data,
    the loop, the attacks, the experiments and the benchmarks)."""
    def stem(name):
        return name.split("_")[0].rstrip("or").rstrip("s")

    offenders = []
    folders = [d for top in NAMED_BY_JOB for d in [ROOT / top, *(ROOT / top).rglob("*")]
               if d.is_dir() and d.name != "__pycache__"]
    for folder in folders:
        names = sorted(p.stem for p in folder.iterdir() if (p.suffix == ".py" and p.stem != "__init__")
                       or (p.is_dir() and (p / "__init__.py").exists()))
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if a.startswith(b + "_") or b.startswith(a + "_") or ("_" in a + b and stem(a) == stem(b)):
                    offenders.append(f"{folder.relative_to(ROOT)}: {a} / {b}")
    assert offenders == [], offenders


def _declared_packages():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if tomllib is None:  # pragma: no cover - Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    return set(tomllib.loads(text)["tool"]["setuptools"]["packages"])


def test_every_package_folder_is_in_pyproject_packages():
    """A folder with an __init__.py that pyproject's `packages` omits would be missing from the wheel."""
    folders = set()
    for folder, package in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            folders.add(".".join([package, *rel.parts]))
    declared = _declared_packages()
    assert folders - declared == set(), f"package folders missing from pyproject packages: {sorted(folders - declared)}"
    assert declared - folders == set(), f"pyproject packages without a folder: {sorted(declared - folders)}"


def test_no_consumer_switches_on_the_type_of_a_bound():
    """Bounds answer for themselves (pair_form, delta_eps, attained_pair, has_pair), so no module
    outside theorems/ calls isinstance on a Bound class."""
    import ast

    bound_classes = {"Bound", "PairBound", "WorMixtureBound", "Claim", "InferenceBound"}
    offenders = []
    for folder in (f for f in FOLDERS if f != "theorems"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
                    names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                    names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                    if names & bound_classes:
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
