"""Griffe extension: document the top-level ``integrations/`` folder as ``mf_sched.integrations``.

pyproject.toml installs ``integrations/`` as the subpackage ``mf_sched.integrations`` (setuptools
``package-dir``). Griffe finds packages by walking folders, so it sees ``mf_sched/`` without that
subpackage; this extension visits the folder's files statically (nothing is imported, so the docs
need neither Optuna nor Ray) and attaches them under ``mf_sched``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "integrations"


class IntegrationsPackage(griffe.Extension):
    """Attach ``integrations/*.py`` to the ``mf_sched`` package as ``mf_sched.integrations``."""

    def on_module_members(self, *, mod: griffe.Module, agent: Any, **kwargs: Any) -> None:
        if mod.path != "mf_sched" or "integrations" in mod.members:
            return

        def visit(name: str, path: Path, parent: griffe.Module) -> griffe.Module:
            code = path.read_text(encoding="utf-8")
            agent.lines_collection[path] = code.splitlines(keepends=False)
            return griffe.visit(
                name,
                path,
                code,
                extensions=agent.extensions,
                parent=parent,
                docstring_parser=agent.docstring_parser,
                docstring_options=agent.docstring_options,
                lines_collection=agent.lines_collection,
                modules_collection=agent.modules_collection,
            )

        package = visit("integrations", FOLDER / "__init__.py", mod)
        mod.set_member("integrations", package)
        for path in sorted(FOLDER.glob("*.py")):
            if path.stem != "__init__":
                package.set_member(path.stem, visit(path.stem, path, package))


_ROLE = re.compile(r":(?:func|class|meth|attr|mod|data|exc|obj):`(~?)([\w.]+)(?:\(\))?`")


def _role_to_markdown(match: re.Match[str]) -> str:
    short, target = match.group(1) == "~", match.group(2)
    title = target.rsplit(".", 1)[-1] if short else target
    if target.startswith("mf_sched."):  # a link where the target is documented, plain code elsewhere
        return f'<autoref identifier="{target}" optional><code>{title}</code></autoref>'
    return f"`{title}`"


class SphinxRolesAndDoctests(griffe.Extension):
    """Turn Sphinx roles into cross-references; show doctest blocks outside ``Examples:`` as ``pycon`` code.

    ``:class:`~mf_sched.x.Y``` becomes a link to ``Y``'s API entry (optional: plain code when the target is
    not rendered, e.g. a private helper); roles naming anything else become inline code.

    Google-style parsing reads ``>>>`` lines as code only under an ``Examples:`` heading; elsewhere (free
    text, an ``Example:`` admonition) they would be Markdown paragraphs, where ``[0.2, 0.5][pull.arm]`` reads
    as a reference link. A run of lines from a ``>>>`` line to the next blank line is fenced at the
    indentation of the text before it (an RST-style run indented under ``Example (...):`` would otherwise be
    a Markdown indented code block showing the fence); the docstrings themselves are untouched.
    """

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        obj.docstring.value = _ROLE.sub(_role_to_markdown, obj.docstring.value)
        if ">>>" not in obj.docstring.value:
            return
        out: list[str] = []
        in_fence = in_examples = False
        doctest_indent: str | None = None
        text_indent = ""  # indentation of the last line of text (outside fences and doctest runs)
        extra = 0  # how much deeper than that text the current doctest run is indented
        for line in obj.docstring.value.splitlines():
            stripped = line.lstrip()
            indent = line[: len(line) - len(stripped)]
            if doctest_indent is not None and not stripped:
                out.append(doctest_indent + "```")
                doctest_indent = None
            if stripped and not indent and doctest_indent is None:
                in_examples = stripped == "Examples:"
            if stripped.startswith("```"):
                in_fence = not in_fence
            elif not in_fence and not in_examples and doctest_indent is None and stripped.startswith(">>>"):
                extra = max(0, len(indent) - len(text_indent))
                doctest_indent = indent[extra:]
                out.append(doctest_indent + "```pycon")
            elif stripped and not in_fence and doctest_indent is None:
                text_indent = indent
            if doctest_indent is not None and line[:extra].isspace():
                line = line[extra:]
            out.append(line)
        if doctest_indent is not None:
            out.append(doctest_indent + "```")
        obj.docstring.value = "\n".join(out)


_SECTION = re.compile(r"^(Args|Arguments|Parameters):[ \t]*$", re.M)


def _args_block(text: str) -> str | None:
    """The `Args:` section of a Google-style docstring (its heading and indented entries), or None."""
    match = _SECTION.search(text)
    if match is None:
        return None
    lines = text[match.start() :].splitlines()
    block = [lines[0]]
    for line in lines[1:]:
        if line.strip() and not line[:1].isspace():
            break
        block.append(line)
    return "\n".join(block).rstrip()


class InheritedArgs(griffe.Extension):
    """Give a class that only names its base (no `__init__`, no `Args:` of its own) the base's `Args:` section.

    `IISEScheduler` is `RungScheduler` with other defaults in the docstring only; its reference entry shows
    `RungScheduler`'s constructor, so it lists the same arguments, one entry each, without a second copy of
    the text to keep in step. Only bases defined in the same module are followed.
    """

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        if "__init__" in cls.members or cls.docstring is None or _args_block(cls.docstring.value):
            return
        for base in cls.bases:
            parent = cls.parent.members.get(str(base)) if cls.parent is not None else None
            if isinstance(parent, griffe.Class) and parent.docstring is not None:
                block = _args_block(parent.docstring.value)
                if block:
                    cls.docstring.value = cls.docstring.value.rstrip() + "\n\n" + block
                    return
