"""The package's structure holds (issue #43): no import circle among its modules, and no
module reaching into another's private names.  Read from the source with ``ast``, nothing
imported or run, so the tests cost a fraction of a second.

Each rule is a function over a source tree; the tests run it on ``jupyter_refs/`` and on a
small tree made in ``tmp_path`` that breaks it, so a rule that stopped seeing anything would
fail too.
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jupyter_refs"


def modules(package: pathlib.Path) -> dict[str, pathlib.Path]:
    """Every module of ``package`` by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom,
              known: dict[str, pathlib.Path]) -> Iterator[str]:
    """The package's modules one import statement loads: ``from . import x`` the submodule
    ``x`` when there is one, else the module it names (a name defined in its ``__init__``)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module if is_package else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = f"{base}.{node.module}" if node.module else base
        else:
            source = node.module or ""
        targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                   for alias in node.names]
    for target in targets:
        while target and target not in known:  # ``import a.b.c`` where c is a name in a.b
            target = target.rpartition(".")[0]
        if target and target != module:
            yield target


def import_graph(package: pathlib.Path) -> dict[str, dict[str, int]]:
    """module -> {module it imports: the first line that does}, for every import statement
    anywhere in the module: at the top, inside functions, and under ``if TYPE_CHECKING:``.

    A deferred import still makes the two modules need each other: it only moves the
    failure from import time to the call.  A ``TYPE_CHECKING`` import is counted too: the
    annotation names the other module's class, so neither can be read, checked or documented
    (``typing.get_type_hints``) without the other, and the way out costs nothing at run
    time — a ``Protocol`` in a module below both, as ``protocol/parts.py`` and
    ``client_parts.py`` do.
    """
    known = modules(package)
    graph: dict[str, dict[str, int]] = {name: {} for name in known}
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(name, path.name == "__init__.py", node, known):
                    graph[name].setdefault(target, node.lineno)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import circles: each strongly connected set of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def describe(graph: dict[str, dict[str, int]], circle: list[str]) -> str:
    inside = set(circle)
    return "\n".join(f"  {a} -> {b} (line {line})" for a in circle
                     for b, line in sorted(graph[a].items()) if b in inside)


def test_no_import_circle():
    graph = import_graph(PACKAGE)
    assert "jupyter_refs.client" in graph["jupyter_refs.dropin"]  # the graph sees imports
    found = circles(graph)
    assert not found, "import circles:\n" + "\n\n".join(describe(graph, c) for c in found)


def write(root: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "pkg"


def test_a_deferred_or_type_only_import_closes_a_circle(tmp_path):
    package = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "def f():\n    from .a import g\n",
        "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import D\n",
        "pkg/d.py": "from .c import C\n",
        "pkg/e.py": "import pkg.a\n",
    })
    graph = import_graph(package)
    assert graph["pkg.b"] == {"pkg.a": 2} and graph["pkg.e"] == {"pkg.a": 1}
    assert circles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]


# -- private names ------------------------------------------------------------------------

#: A line carrying this comment reaches into an object that is not the package's: dask's
#: (the adapter drives distributed's comms and clients) or Python's (asyncio's loop).  Their
#: private names are theirs to change; the rule is about the package's own modules.
NOT_OURS = "# not ours:"


def private(name: str) -> bool:
    """``_x``: private.  ``__x__`` (Python's) and ``_x_`` (IPython's ``_repr_html_``,
    ``_ipython_display_``) are protocols meant to be called from outside."""
    return name.startswith("_") and not name.endswith("_")


def definitions(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Each private name -> the modules that define it: a function or class, an attribute
    assigned on ``self`` / ``cls``, a name assigned at module or class level."""
    where: dict[str, set[str]] = {}
    for module, tree in trees.items():
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(node.name)
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                names.append(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append(node.id)
            for name in names:
                if private(name):
                    where.setdefault(name, set()).add(module)
    return where


def crossings(package: pathlib.Path) -> list[str]:
    """Every place a module of ``package`` uses another module's private name:

    * ``from .x import _name`` (or ``from package.x import _name``);
    * ``x._name`` where ``x`` is a module of the package this one imported;
    * ``obj._name`` on anything but ``self`` / ``cls``, where ``_name`` is defined in another
      module of the package and not in this one (``client._state._set_state`` in
      coordination.py, ``cluster._drops`` in client.py, ``s._move`` in stealing.py).

    The last is a heuristic, read without types: it cannot tell which class ``obj`` is, so
    a private name that this module defines too is taken for its own (``other._key`` in a
    class's ``__eq__``), and a mixin's ``self._ask`` is the class it is mixed into.
    """
    known = modules(package)
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in known.items()}
    lines = {name: path.read_text().splitlines() for name, path in known.items()}
    where = definitions(trees)
    found = []
    for module, tree in trees.items():
        is_package = known[module].name == "__init__.py"
        imported_modules: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                targets = list(_imported(module, is_package, node, known))
                for alias in node.names:
                    if private(alias.name) and targets:
                        found.append(f"{module}:{node.lineno}: imports {alias.name}")
                    elif any(t.endswith("." + alias.name) for t in targets):
                        imported_modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                imported_modules.update(alias.asname for alias in node.names
                                        if alias.asname and alias.name in known)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not private(node.attr):
                continue
            if NOT_OURS in lines[module][node.lineno - 1]:
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in imported_modules:
                found.append(f"{module}:{node.lineno}: {owner.id}.{node.attr}")
            elif isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            elif node.attr in where and module not in where[node.attr]:
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)} "
                             f"(defined in {', '.join(sorted(where[node.attr]))})")
    return found


def test_no_module_reaches_into_another_modules_private_names():
    assert not crossings(PACKAGE), "\n".join(crossings(PACKAGE))


def test_the_crossings_issue_43_named_are_seen(tmp_path):
    package = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/interrupts.py": "_pending = False\n",
        "pkg/dropin.py": "def _get_client():\n    pass\n",
        "pkg/state.py": "class ClientState:\n    def _set_state(self):\n        pass\n",
        "pkg/client.py": ("class Client:\n    def __init__(self, state):\n        self._state = state\n"
                          "    def drops(self, cluster):\n        return cluster._drops\n"),
        "pkg/cluster.py": ("from . import interrupts\nclass Cluster:\n    def __init__(self):\n"
                           "        self._drops = []\n        self._key = 1\n"
                           "    def __eq__(self, other):\n        return self._key == other._key\n"
                           "    def step(self):\n        return interrupts._pending\n"),
        "pkg/coordination.py": ("from .dropin import _get_client\n"
                                "def as_future(client):\n    client._state._set_state()\n"
                                "    loop._scheduled[0]._drops  # not ours: asyncio's\n"),
    })
    assert sorted(crossings(package)) == [
        "pkg.client:5: cluster._drops (defined in pkg.cluster)",
        "pkg.cluster:9: interrupts._pending",
        "pkg.coordination:1: imports _get_client",
        "pkg.coordination:3: client._state (defined in pkg.client)",
        "pkg.coordination:3: client._state._set_state (defined in pkg.state)",
    ]
