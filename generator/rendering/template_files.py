"""Template files read safely: a teacher's ``--templates`` folder, then the plugins', then
the built-in one.

Every template, the page's script (html/practice.js, html/ops/<op>.js) and a question type's
prose files (kinds/<type>/...) are found along one search path (``template_folders``): the
teacher's folder first, then each folder a plugin added (``add_template_folder``, in the order
added), then the built-in folder.  So a teacher overrides any file by its relative path, a
plugin ships the files of its own ops and types, and neither edits the built-in folder.

A teacher's folder is looked over before anything is solved (``teacher_templates``):
a link that loops or leads out of the folder, a FIFO or a device in it, or a file far
larger than any template, is refused in one line naming it (``inputs.InputError``).  Each
template is then read by ``CheckedLoader``, Jinja's ``FileSystemLoader`` reading through
``inputs``: a template that is not UTF-8 text is refused in one line naming it, not a traceback.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

import jinja2
from jinja2.loaders import split_template_path

from generator.running.inputs import (
    MAX_TEMPLATE_BYTES,
    InputError,
    check_folder,
    checked_files,
    read_text,
)

WHAT = "a template"
# In the repository (and an editable install) the templates are at its top; an installed
# wheel carries them inside the package.
BUILTIN_TEMPLATES = next(folder for folder in (Path(__file__).resolve().parents[2] / "templates",
                                               Path(__file__).resolve().parents[1] / "templates")
                         if folder.is_dir())


# Folders plugins add (``add_template_folder``), searched after the teacher's and before the
# built-in one, in the order added.
PLUGIN_TEMPLATES: list[Path] = []


def add_template_folder(folder: Path | str) -> None:
    """Search ``folder`` for templates (a plugin's own: its ops' working templates and page
    functions, its types' prose) after the teacher's folder and before the built-in one."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise ValueError(f"template folder {folder} is not a folder")
    if folder not in PLUGIN_TEMPLATES:
        PLUGIN_TEMPLATES.append(folder)


def template_folders(teacher: Path | None = None) -> list[Path]:
    """Where templates are looked for, in order: the teacher's, the plugins', the built-in."""
    return [*([teacher] if teacher else []), *PLUGIN_TEMPLATES, BUILTIN_TEMPLATES]


def template_source(name: str, teacher: Path | None = None) -> tuple[str, str]:
    """A file of the search path that is not rendered as a template (the page's script): its
    text and where it was found, read as a template is."""
    loader = CheckedLoader(template_folders(teacher))
    source, filename, _ = loader.get_source(jinja2.Environment(), name)
    return source, filename


def teacher_templates(folder: Path) -> list[Path]:
    """The files of a teacher's template folder, each checked (see the module's docstring)."""
    check_folder(folder, "--templates")
    files = checked_files(folder, WHAT, MAX_TEMPLATE_BYTES)
    for path in files:
        refuse_outside(path, folder)
    return files


def refuse_outside(path: Path, folder: Path) -> None:
    """A template that is a link to a file outside its folder would print that file (your
    exam key, /etc/passwd) into the papers: refused."""
    if not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder)):
        raise InputError(f"{path}: a link to {os.path.realpath(path)}, outside the template "
                         f"folder {folder}: copy the file in instead")


class CheckedLoader(jinja2.FileSystemLoader):
    """``FileSystemLoader``, finding a template as it does (the first folder that holds it)
    and reading it through ``inputs.read_text``."""

    def get_source(self, environment: jinja2.Environment, template: str):
        """Jinja's loader call: the template from the first folder that holds it, refused in one
        line when it is a link out of that folder or not UTF-8 text."""
        pieces = split_template_path(template)
        for folder in self.searchpath:
            filename = posixpath.join(folder, *pieces)
            if os.path.isfile(filename):
                break
        else:
            return super().get_source(environment, template)  # says it is not found
        refuse_outside(Path(filename), Path(folder))
        contents = read_text(Path(filename), WHAT, MAX_TEMPLATE_BYTES, encoding=self.encoding)
        mtime = os.path.getmtime(filename)

        def uptodate() -> bool:
            try:
                return os.path.getmtime(filename) == mtime
            except OSError:
                return False

        return contents, os.path.normpath(filename), uptodate
