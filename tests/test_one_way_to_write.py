"""One way to write a file: every rename into place goes through :mod:`repscope.fileio`.

A file that takes its name before it is whole is the bug atomic writes prevent (DESIGN, Conventions);
``fileio`` holds the one temporary-name-then-rename (``atomic_write``, ``atomic_path``), the one
directory swap (``replace_directory``) and the one move (``rename``). A rename written anywhere else
is a second way that can forget the fsync, the file mode, the clean-up on failure or the one-line error.
"""

from __future__ import annotations

import ast
import stat
from pathlib import Path

import pytest

import repscope
from repscope import fileio

PACKAGE = Path(repscope.__file__).parent

# call names that move a file into place: os.replace(a, b), os.rename(a, b), shutil.move(a, b), path.rename(b)
RENAMES = {("os", "replace"), ("os", "rename"), ("os", "renames"), ("shutil", "move")}


def renames_in(path: Path) -> list[str]:
    """``file:line call`` of every rename call in ``path`` (``x.rename(...)`` with one argument is a path's)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
        name = node.func.attr
        # DataFrame.rename takes columns=/index= keywords or a mapping; Path.rename takes one positional target
        path_rename = name == "rename" and len(node.args) == 1 and not node.keywords and owner not in {"os"}
        if (owner, name) in RENAMES or path_rename or name == "replace" and owner == "os":
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {owner or '<path>'}.{name}")
    return found


def test_no_rename_outside_fileio():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path.name != "fileio.py" for hit in renames_in(path)]
    # a table's rename (pandas) with a mapping argument is not a file: keep only calls on paths
    found = [hit for hit in found if not _is_table_rename(hit)]
    assert found == [], "write through repscope.fileio (atomic_write, atomic_path, replace_directory, rename)"


def _is_table_rename(hit: str) -> bool:
    location, _ = hit.split(" ", 1)
    file, line = location.rsplit(":", 1)
    text = (PACKAGE / file).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    # a path's rename takes a path (path.rename(str(target)) too); a table's a mapping or columns=/index=
    return ".rename(columns" in text or ".rename(index" in text or ".rename({" in text


def test_temp_prefix_is_defined_once():
    defined = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TEMP_PREFIX" for t in node.targets)
    ]
    assert defined == ["fileio.py"]


def test_atomic_path_renames_a_whole_file_into_place_with_the_usual_mode(tmp_path):
    target = tmp_path / "sub" / "arrays.h5"
    with fileio.atomic_path(target) as temporary:
        assert temporary.parent == target.parent and temporary.suffix == ".h5"
        assert temporary.name.startswith(fileio.TEMP_PREFIX)
        temporary.write_bytes(b"whole")
        assert not target.exists()  # the name is taken only once the writer is done
    assert target.read_bytes() == b"whole"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~fileio.current_umask()
    assert [p.name for p in target.parent.iterdir()] == ["arrays.h5"]


def test_atomic_path_keeps_the_old_file_and_leaves_nothing_when_the_writer_fails(tmp_path):
    target = tmp_path / "model.ckpt"
    target.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt), fileio.atomic_path(target) as temporary:
        temporary.write_bytes(b"half")
        raise KeyboardInterrupt
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ckpt"]


def test_atomic_path_of_a_directory_replaces_the_old_folder_whole(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "old.txt").write_text("old")
    with fileio.atomic_path(folder, directory=True) as temporary:
        (temporary / "new.txt").write_text("new")
        assert (folder / "old.txt").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~fileio.current_umask()


def test_atomic_path_names_the_destination_when_its_folder_cannot_be_made(tmp_path):
    (tmp_path / "runs").write_text("a file where the folder should be")
    with pytest.raises(fileio.OutputWriteError, match="runs"), fileio.atomic_path(tmp_path / "runs" / "out.npy"):
        pass
    assert (tmp_path / "runs").read_text() == "a file where the folder should be"


def test_replace_directory_puts_a_file_or_folder_in_place_and_rename_moves(tmp_path):
    built = tmp_path / "built"
    built.mkdir()
    (built / "a").write_text("1")
    fileio.replace_directory(built, tmp_path / "final")
    assert (tmp_path / "final" / "a").read_text() == "1" and not built.exists()
    moved = fileio.rename(tmp_path / "final", tmp_path / "final.interrupted-1")
    assert moved == tmp_path / "final.interrupted-1" and (moved / "a").read_text() == "1"
