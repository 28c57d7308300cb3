"""The docs (docs/*.md and the CLI reference generated from click) cover everything a user can
reach, as datasette keeps its docs honest: a command, a route, a setting or a bench script added
without a line in the docs fails here, and so does a page missing from the nav or a site that
does not build cleanly."""

from __future__ import annotations

import ast
import html
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import pytest
import yaml
from forgetmap.cli import main
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app
from pydantic_settings import BaseSettings

from tests.support.services import service_missing

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SOURCE_PACKAGES = ("app", "worker")
SETTING = re.compile(r"\bFORGETMAP_[A-Z][A-Z0-9_]*\b")


def _load_hooks():
    spec = importlib.util.spec_from_file_location("forgetmap_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOKS = _load_hooks()
PAGES = {p.relative_to(DOCS).as_posix(): p.read_text() for p in sorted(DOCS.rglob("*.md"))}
# what a reader of the site sees: every page, the CLI reference rendered as the build renders it
DOCS_TEXT = "\n".join(PAGES.values()).replace(HOOKS.MARKER, HOOKS.render_reference(main))


def _commands(command: click.Command, prefix: tuple[str, ...] = ()) -> list[str]:
    if isinstance(command, click.Group):
        return [
            c for name, sub in command.commands.items() for c in _commands(sub, (*prefix, name))
        ]
    return [" ".join(prefix)]


def _routes() -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as folder:  # collection time: no tmp_path fixture yet
        app = create_app(
            Path(folder) / "routes.duckdb",
            broker=BrokerSettings(url="redis://127.0.0.1:1/0"),  # nothing is sent
            settings=WebSettings(secret_key="k" * 40),
        )
    return [
        (method, route.path)
        for route in app.routes
        for method in sorted(set(getattr(route, "methods", None) or ()) - {"HEAD"})
    ]


def _source_files() -> list[Path]:
    return [
        p
        for package in SOURCE_PACKAGES
        for p in sorted((ROOT / package).rglob("*.py"))
        if "__pycache__" not in p.parts
    ]


def _settings_classes() -> list[type[BaseSettings]]:
    """Every pydantic-settings class defined in app/ and worker/, found in the source."""
    found = []
    for path in _source_files():
        tree = ast.parse(path.read_text(), str(path))
        names = [
            node.name
            for node in tree.body
            if isinstance(node, ast.ClassDef)
            and any(ast.unparse(base).split(".")[-1] == "BaseSettings" for base in node.bases)
        ]
        if names:
            folder, *rest = path.relative_to(ROOT).with_suffix("").parts
            # app/ is the package forgetmap, worker/ is forgetmap.worker (pyproject's package-dir)
            package = {"app": "forgetmap", "worker": "forgetmap.worker"}[folder]
            module = importlib.import_module(".".join([package, *rest]).removesuffix(".__init__"))
            found += [getattr(module, name) for name in names]
    return found


def _environment_names(cls: type[BaseSettings]) -> set[str]:
    """The variables ``cls`` reads: its alias, else prefix + field name; a field that is itself a
    settings class reads its own variables (listed with that class)."""
    prefix = cls.model_config.get("env_prefix", "")
    names = set()
    for field_name, field in cls.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseSettings):
            continue
        alias = field.validation_alias
        if alias is None:
            names.add(f"{prefix}{field_name}".upper())
        elif isinstance(alias, str):
            names.add(alias)
        else:  # AliasChoices
            names.update(choice for choice in alias.choices if isinstance(choice, str))
    return names


def _settings() -> list[str]:
    named_in_source = {m for p in _source_files() for m in SETTING.findall(p.read_text())}
    read_by_classes = {n for cls in _settings_classes() for n in _environment_names(cls)}
    return sorted(named_in_source | read_by_classes)


def _bench_scripts() -> list[str]:
    return sorted(
        f"bench/{p.name}" for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_")
    )


def _nav_files(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [f for item in node for f in _nav_files(item)]
    if isinstance(node, dict):
        return [f for value in node.values() for f in _nav_files(value)]
    raise TypeError(f"unexpected nav entry {node!r}")


NAV = _nav_files(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])


def _named(*words: str) -> bool:
    """The words occur in the docs in order, separated by blanks, as a whole (a path parameter may
    be named differently there: ``{id}`` for ``{pair_id}``)."""
    parts = [re.sub(r"\\\{[^}]*\\\}", r"\\{[^}]*\\}", re.escape(w)) for w in words]
    pattern = r"\s+".join(parts)
    return re.search(rf"(?<![\w/{{}}.-]){pattern}(?![\w/{{}}.-])", DOCS_TEXT) is not None


def test_the_cli_has_its_commands():
    assert {"map", "import table", "pair add", "serve", "token list"} <= set(_commands(main))


@pytest.mark.parametrize("command", _commands(main))
def test_docs_name_every_cli_command(command):
    assert _named("forgetmap", *command.split()), f"the docs do not name `forgetmap {command}`"


def test_the_generated_reference_is_on_a_page_of_the_nav():
    holders = [name for name, text in PAGES.items() if HOOKS.MARKER in text]
    assert len(holders) == 1, f"one page must hold {HOOKS.MARKER}, found {holders}"
    assert holders[0] in NAV


def test_the_generated_reference_has_each_commands_options():
    reference = HOOKS.render_reference(main)
    assert "## `forgetmap map`" in reference
    assert "--exclude-truncated" in reference  # an option's help, not only the command's name
    assert "Usage: forgetmap pair add [OPTIONS] BASE POST" in reference


def test_the_app_has_its_routes():
    assert {("GET", "/api/map"), ("POST", "/api/jobs"), ("GET", "/")} <= set(_routes())


@pytest.mark.parametrize(("method", "path"), _routes())
def test_docs_name_every_route(method, path):
    assert _named(method, path), (
        f"the docs do not name `{method} {path}` (add it to 'Every route' in docs/api.md)"
    )


def test_the_settings_classes_are_found():
    names = {cls.__name__ for cls in _settings_classes()}
    assert {"WebSettings", "BrokerSettings", "WorkerSettings"} <= names
    assert {"FORGETMAP_DB", "FORGETMAP_BROKER_URL", "FORGETMAP_STALE_SECONDS"} <= set(_settings())


@pytest.mark.parametrize("variable", _settings())
def test_docs_name_every_setting(variable):
    assert re.search(rf"(?<![A-Z0-9_]){variable}(?![A-Z0-9_])", DOCS_TEXT), (
        f"the docs do not name {variable} (add it to docs/settings.md)"
    )


def test_the_bench_has_its_scripts():
    assert {"bench/map.py", "bench/adaptive.py"} <= set(_bench_scripts())


@pytest.mark.parametrize("script", _bench_scripts())
def test_docs_name_every_bench_script(script):
    assert _named(script), f"the docs do not name {script} (add it to docs/performance.md)"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_is_in_the_nav(page):
    assert page in NAV, f"docs/{page} is not in the nav of mkdocs.yml"


@pytest.mark.parametrize("page", NAV)
def test_every_nav_entry_is_a_page(page):
    assert (DOCS / page).is_file(), f"mkdocs.yml's nav names docs/{page}, which does not exist"


def test_the_site_builds_without_a_warning(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        service_missing("mkdocs is not installed (pip install -e '.[dev]')")
    site = tmp_path / "site"
    # NO_MKDOCS_2_WARNING: mkdocs-material's banner about MkDocs 2.0, printed on every build
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert not re.search(r"^\s*WARNING\b", output, re.MULTILINE), output
    cli_page = html.unescape((site / "cli" / "index.html").read_text())
    missing = [c for c in _commands(main) if f"forgetmap {c}" not in cli_page]
    assert not missing, f"the built CLI reference lacks {missing}"
