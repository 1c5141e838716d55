"""The README and docs/map.md name only what exists: every `python -m MODULE` is importable and every `--flag` after it appears
in that module's source, every environment variable the README's table documents is read by this repository or by tinygrad,
and every path into this repository's tree is a file or folder of it. The checkers take text, so they are tested on text that
names things that do not exist as well as on the real files."""
import importlib.util
import pathlib
import re
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOP = ("mockgpu", "emu", "fuzz", "tests", "docs", "data", ".ci", "bench.sh", "pyproject.toml", "setup.py")
CODE = re.compile(r"`([^`\n]+)`|```[a-z]*\n(.*?)```", re.S)


def _code_spans(text: str) -> list[str]:
  """Inline code and the lines of fenced blocks, one string per command."""
  out = []
  for inline, block in CODE.findall(text):
    out.extend(block.splitlines() if block else [inline])
  return out


def _module_source(module: str) -> str | None:
  """The text a `python -m module` invocation parses its flags from: the module, or a package's own files."""
  spec = importlib.util.find_spec(module)
  if spec is None or spec.origin is None: return None
  origin = pathlib.Path(spec.origin)
  files = sorted(origin.parent.glob("*.py")) if origin.name in ("__init__.py", "__main__.py") else [origin]
  return "\n".join(f.read_text() for f in files)


def unknown_commands(text: str) -> list[str]:
  """`python -m X` that does not import, and `--flags` on the same command that X's source never mentions."""
  bad = []
  for span in _code_spans(text):
    for command in re.split(r"[|;]|&&", span):
      m = re.search(r"python -m ([\w.]+)(.*)", command)
      if m is None: continue
      module, rest = m.groups()
      if module == "pytest": continue
      source = _module_source(module)
      if source is None:
        bad.append(f"python -m {module}: no such module")
        continue
      bad += [f"python -m {module} {flag}: not in its source" for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest)
              if f'"{flag}"' not in source and f"'{flag}'" not in source]
  return bad


def documented_env_vars(text: str) -> list[str]:
  """The first column of the README's environment-variable table."""
  section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
  names = []
  for cell in re.findall(r"^\|([^|]+)\|", section, re.M):
    names += re.findall(r"`([A-Z][A-Z0-9_]+)(?:=[^`]*)?`", cell)
  return names


def _sources_reading_env() -> str:
  import tinygrad
  files = [f for d in ("mockgpu", "emu", "fuzz", "tests", ".ci") for f in (ROOT / d).rglob("*") if f.suffix in (".py", "")]
  files += [ROOT / "bench.sh", *pathlib.Path(tinygrad.__file__).parent.rglob("*.py")]
  return "\n".join(f.read_text(errors="replace") for f in files if f.is_file())


def unread_env_vars(names: list[str], source: str) -> list[str]:
  return [n for n in names if not re.search(rf"(?<![A-Z0-9_]){n}(?![A-Z0-9_])", source)]


def missing_paths(text: str, root: pathlib.Path = ROOT) -> list[str]:
  """Paths into this repository's tree (first part one of TOP) in code spans or links that do not exist; bare file names
  (`regions.py`) must exist somewhere in the tree; a script run by `python` is the user's."""
  candidates = re.findall(r"\]\(([^)#\s]+)", text)
  for span in _code_spans(text):
    span = re.sub(r"(python|mockgpu run) [\w.-]+\.py", "", span)  # the user's own script
    candidates += re.findall(r"(?<![\w./~-])([\w.-]+(?:/[\w.*-]+)*/?)", span)
  bad = []
  for c in dict.fromkeys(candidates):
    if c.split("/")[0] in TOP and "/" in c.rstrip("/") or c in ("bench.sh", "pyproject.toml"):
      if "*" in c:
        if not list(root.glob(c)): bad.append(c)
      elif not (root / c).exists(): bad.append(c)
    elif "/" not in c and re.fullmatch(r"\w+\.(py|c|md|sh)", c) and not list(root.glob(f"**/{c}")):
      bad.append(c)
  return bad


def test_checkers_see_what_does_not_exist():
  text = ("`python -m emu.bench --no-such-flag` `python -m emu.nosuch` `docs/nosuch.md` `nosuch_file.py`\n"
          "## Environment variables\n| variable | effect |\n|---|---|\n| `EMU_NO_SUCH_VARIABLE` | x |\n")
  assert unknown_commands(text) == ["python -m emu.bench --no-such-flag: not in its source", "python -m emu.nosuch: no such module"]
  assert missing_paths(text) == ["docs/nosuch.md", "nosuch_file.py"]
  assert unread_env_vars(documented_env_vars(text), "os.environ.get('EMU_NO_SUCH_VARIABLE_TOO')") == ["EMU_NO_SUCH_VARIABLE"]


def test_checkers_accept_what_exists():
  text = "`python -m fuzz kernel.nv --time 60 --seed 1` [x](docs/fuzzing.md) `fuzz/known.py` `regions.py` `tests/unit/`"
  assert unknown_commands(text) == [] and missing_paths(text) == []


@pytest.mark.parametrize("doc", ["README.md", "docs/map.md"])
def test_commands_and_paths_exist(doc):
  text = (ROOT / doc).read_text()
  assert unknown_commands(text) == [] and missing_paths(text) == []


def test_readme_env_vars_are_read():
  names = documented_env_vars((ROOT / "README.md").read_text())
  assert len(names) > 10
  assert unread_env_vars(names, _sources_reading_env()) == []


def test_every_bench_env_var_is_documented():
  """The reverse: each `EMU_*` / `MOCKGPU_*` name the code reads is in the README's table."""
  read = set()
  for d in ("mockgpu", "emu", "fuzz", "tests"):
    for f in (ROOT / d).rglob("*.py"):
      if f.name != pathlib.Path(__file__).name: read |= set(re.findall(r"[\"']((?:EMU|MOCKGPU)_[A-Z0-9_]+)[\"']", f.read_text()))
  assert read - set(documented_env_vars((ROOT / "README.md").read_text())) == set()
