"""List the parameters and dataclass fields that the API reference renders without an entry.

Reads the modules that `docs/api/*.md` render (their `::: module` directives) with griffe, as mkdocstrings does,
and, for every public function, method and class defined there, compares the signature with the docstring's
`Args:` entries (a dataclass's fields with its `Attributes:` or `Args:` entries). A package's re-exports (the
names in its `__all__`) are checked where they are defined, and a `::: package.Object` directive checks that
object. Prints one line per missing or unknown entry and a count per file; exits 1 when anything is missing.

An entry that names no parameter of a function is reported as well (the strict docs build fails on it:
`warn_unknown_params`). `tests/test_api_docs.py` runs :func:`undocumented` over every rendered module.

```
python scripts/undocumented.py              # every rendered module
python scripts/undocumented.py mf_sched.policy mf_sched.integrations.ray
```
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parents[1]


def rendered_modules() -> list[str]:
    mods = []
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        mods += re.findall(r"^:::\s+([\w.]+)", page.read_text(encoding="utf-8"), flags=re.M)
    return mods


def entries(obj: griffe.Object, kinds: tuple[str, ...]) -> list[str]:
    if obj.docstring is None:
        return []
    sections = obj.docstring.parse("google", warn_unknown_params=False)
    return [e.name.lstrip("*") for s in sections if s.kind.value in kinds for e in s.value]


def check(obj: griffe.Object, out: list[str]) -> None:
    if obj.is_alias or obj.name.startswith("_") and obj.name != "__init__":
        return
    if obj.is_function:
        bound = ("self", "cls") if obj.parent is not None and obj.parent.is_class else ()
        params = [p.name for p in obj.parameters if p.name not in bound]
        if obj.docstring is None:
            return  # nothing rendered for it at all (counted as undocumented elsewhere)
        doc = entries(obj, ("parameters", "other parameters"))
        unknown = [d for d in doc if d not in params]
        if unknown:
            out.append(f"{obj.relative_filepath}:{obj.lineno}: {obj.path}: entry for no parameter {unknown}")
        if not params:
            return
        missing = [p for p in params if p not in doc]
        if missing and doc:  # a docstring with an Args section that leaves some out
            out.append(f"{obj.relative_filepath}:{obj.lineno}: {obj.path}: no entry for {missing}")
        elif missing and len(params) > 0:
            out.append(f"{obj.relative_filepath}:{obj.lineno}: {obj.path}: no Args section ({params})")
    elif obj.is_class:
        init = obj.members.get("__init__")
        is_dc = any("dataclass" in str(d.value) for d in obj.decorators)
        params = [p.name for p in (obj.parameters if (init is not None or is_dc) else []) if p.name != "self"]
        if params and obj.docstring is not None:
            doc = entries(obj, ("parameters", "attributes", "other parameters"))
            if init is not None and init.docstring is not None:
                doc += entries(init, ("parameters", "other parameters"))
            missing = [p for p in params if p not in doc]
            if missing:
                out.append(f"{obj.relative_filepath}:{obj.lineno}: {obj.path}: no entry for {missing}")
        for m in obj.members.values():
            if m.is_function and not m.name.startswith("_") and not m.is_alias:
                check(m, out)


def load_package() -> griffe.Module:
    """`mf_sched` as mkdocstrings reads it (with the docs' griffe extensions; nothing is imported)."""
    ext = ROOT / "docs" / "_ext" / "integrations_package.py"
    extensions = griffe.load_extensions(f"{ext}:IntegrationsPackage", f"{ext}:InheritedArgs")
    return griffe.load("mf_sched", search_paths=[str(ROOT)], extensions=extensions, resolve_aliases=False)


def undocumented(modules: Iterable[str] | None = None, package: griffe.Module | None = None) -> list[str]:
    """One line per rendered object of `modules` (default: every rendered module) that leaves a parameter or
    field without an entry, or has an entry naming no parameter; empty when everything is documented."""
    pkg = load_package() if package is None else package
    out: list[str] = []
    for mod in rendered_modules() if modules is None else modules:
        module = pkg[mod.removeprefix("mf_sched.")] if mod != "mf_sched" else pkg
        if module.is_alias or not module.is_module:  # a `::: package.Object` directive renders that one object
            check(module.final_target if module.is_alias else module, out)
            continue
        exported = set(module.exports or ())
        for m in module.members.values():
            if m.is_alias and m.name in exported:  # a package's re-exports (its `__all__`) render as its own
                try:
                    m = m.final_target
                except (griffe.AliasResolutionError, griffe.CyclicAliasError, KeyError):
                    continue  # defined outside mf-sched
            if not m.is_alias and not m.is_module:
                check(m, out)
    return list(dict.fromkeys(out))  # an object rendered twice (its module and its own directive) counts once


def main(argv: list[str]) -> int:
    out = undocumented(argv or None)
    for line in out:
        print(line)
    per_file = Counter(line.split(":", 1)[0] for line in out)
    for f, n in per_file.most_common():
        print(f"{n:4d}  {f}")
    print(f"{len(out)} objects with undocumented parameters or fields")
    return 1 if out else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
