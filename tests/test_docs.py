"""The documentation builds and every command it shows exists.

* ``mkdocs build --strict`` renders ``docs/`` (``mkdocs.yml``): a broken link or anchor, or a
  page missing from the nav, fails it.
* Every command line in a fenced ``sh`` block of ``README.md`` and ``docs/**/*.md`` is checked
  against the program it names: ``nncts SUBCOMMAND`` exists and each ``--option`` it uses is in
  ``nncts SUBCOMMAND --help`` (the suites ``cts``, ``vts`` and ``random-graph`` hand unknown
  options to pytest, so pytest's ``--help`` counts for them); ``pytest`` / ``python -m pytest``
  options are in pytest's ``--help`` with the project's plugins loaded (the root
  ``conftest.py``); ``python -m MODULE`` imports, and for nncts's own modules each ``--option``
  is in ``python -m MODULE --help``; ``python FILE`` names a file of the repository; ``pip
  install`` names extras of ``pyproject.toml`` and paths that exist. Single-dash options (pytest's
  ``-n 2``, libFuzzer's ``-runs=N``) are not checked. Other programs (``cd``, ``mktemp``,
  ``sha256sum``) are left alone.
* Lines that are not commands (output samples, file contents) go in ``text`` or ``toml``
  blocks, never ``sh``; a line of an ``sh`` block that must not be checked is listed in
  :data:`NOT_CHECKED`, with the reason.
* The 60-line driver of ``docs/writing-a-driver.md`` runs the AOSP corpus's RELU models to
  their golden outputs and declines the quantized ones.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

#: Lines of ``sh`` blocks that are not checked, each with why (none today: output samples and
#: file contents live in ``text`` / ``toml`` blocks).
NOT_CHECKED: dict[str, str] = {}

#: The README's first block: the main job, and the command CI runs (``.ci/run``), byte for byte.
MAIN_JOB = "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/nncts cts"

#: ``nncts`` subcommands that pass the options they do not know to pytest.
PYTEST_SUITES = ("cts", "vts", "random-graph")

#: Top-level packages of this repository: ``python -m`` of their modules has its ``--help`` read.
OWN_PACKAGES = ("runtime", "harness", "cts", "vts", "random_graph", "mlts", "fuzz", "reports", "nncts")

#: Characters of the shell's control operators (``&&``, ``||``, ``;``, ``|``, ``&``, parentheses):
#: a token made of them ends one command and starts the next.
_OPERATOR_CHARS = set("&|;()")
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HELP_TIMEOUT = 120


# --- reading the pages ------------------------------------------------------------------------

def doc_files() -> list[Path]:
    """README.md and every page under docs/, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def fenced_blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """``(info, first line number, lines)`` of every fenced code block of Markdown ``text``
    (info: the language word after the fence, "" when none); an unclosed block runs to the end."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        fence, info, start, body = m.group(1), m.group(2), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        blocks.append((info, start, body))
        i += 1
    return blocks


def shell_lines(body: list[str], first: int) -> list[tuple[int, str]]:
    """``(line number, logical line)`` of a shell block: backslash continuations joined, blank
    lines dropped."""
    out, pending, start = [], "", first
    for k, raw in enumerate(body):
        if not pending:
            start = first + k
        piece = raw.strip() if pending else raw.rstrip()
        if piece.endswith("\\"):
            pending += piece[:-1].rstrip() + " "
            continue
        line = (pending + piece).strip()
        pending = ""
        if line:
            out.append((start, line))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def split_commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line, as word lists: comments dropped, split at
    ``&&``, ``||``, ``;``, ``|``, ``&`` and parentheses, leading ``NAME=value`` assignments
    dropped. Quotes are removed as the shell would."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands, words = [], []
    for token in lexer:
        if token and set(token) <= _OPERATOR_CHARS:
            commands.append(words)
            words = []
        else:
            words.append(token)
    commands.append(words)
    out = []
    for words in commands:
        while words and _ENV_ASSIGNMENT.match(words[0]):
            words = words[1:]
        if words:
            out.append(words)
    return out


def program(word: str) -> str:
    """The program a command word runs: ``.venv/bin/nncts`` -> ``nncts``, ``python3`` ->
    ``python``."""
    name = word.rsplit("/", 1)[-1]
    return "python" if re.fullmatch(r"python3(\.\d+)?", name) else name


def long_options(words: list[str]) -> list[str]:
    """The ``--options`` among ``words``, without ``=value``."""
    return [w.split("=", 1)[0] for w in words if w.startswith("--") and len(w) > 2]


def doc_commands() -> list[tuple[str, str, list[str]]]:
    """``(where, line, words)`` of every simple command in the ``sh`` blocks of the pages,
    ``where`` as ``path:line``."""
    out = []
    for path in doc_files():
        for info, first, body in fenced_blocks(path.read_text(encoding="utf-8")):
            if info != "sh":
                continue
            for number, line in shell_lines(body, first):
                if line in NOT_CHECKED:
                    continue
                for words in split_commands(line):
                    out.append((f"{path.relative_to(ROOT)}:{number}", line, words))
    return out


# --- the programs' own --help, once each -------------------------------------------------------

#: Run in one subprocess: prints, as JSON, ``{key: [exit code, output]}`` for each key of argv[1]
#: (``nncts:SUB`` runs ``nncts SUB --help``, ``nncts:`` ``nncts --help``, ``module:M`` runs
#: ``python -m M --help``): one interpreter start and one import of nncts for every help text.
_HELP_SCRIPT = r"""
import contextlib, io, json, runpy, sys
out = {}
for key in json.loads(sys.argv[1]):
    kind, name = key.split(":", 1)
    buf, code = io.StringIO(), 0
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            if kind == "nncts":
                from nncts.cli import main
                code = main(([name] if name else []) + ["--help"])
            else:
                sys.argv = [name, "--help"]
                runpy.run_module(name, run_name="__main__", alter_sys=True)
        except SystemExit as e:
            code = e.code
        except Exception as e:
            code = f"{type(e).__name__}: {e}"
    out[key] = [code or 0, buf.getvalue()]
sys.stdout.write(json.dumps(out))
"""


def _help_keys() -> list[str]:
    """Every help text the pages' commands need, plus those the self-tests read."""
    keys = {"nncts:", "nncts:cts", "nncts:certify"}
    for _, _, words in doc_commands():
        prog, args = program(words[0]), words[1:]
        if prog == "nncts" and args and not args[0].startswith("-"):
            keys.add(f"nncts:{args[0]}")
        elif prog == "python" and args[:1] == ["-m"] and len(args) > 1 \
                and args[1].split(".")[0] in OWN_PACKAGES:
            keys.add(f"module:{args[1]}")
    return sorted(keys)


@functools.lru_cache(maxsize=None)
def _help_batch() -> dict[str, tuple[object, str]]:
    """``{key: (exit code, output)}`` for :func:`_help_keys`, from one subprocess."""
    keys = _help_keys()
    done = subprocess.run([sys.executable, "-c", _HELP_SCRIPT, json.dumps(keys)], cwd=ROOT,
                          capture_output=True, text=True, timeout=_HELP_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    return {k: (code, text) for k, (code, text) in json.loads(done.stdout).items()}


def _help(key: str) -> str:
    """The help text of ``key``; AssertionError naming the command when it failed."""
    code, text = _help_batch()[key]
    kind, name = key.split(":", 1)
    command = f"nncts {name} --help" if kind == "nncts" else f"python -m {name} --help"
    assert code == 0, f"{command} failed ({code}):\n{text[-2000:]}"
    return text


def nncts_help(subcommand: str | None = None) -> str:
    """``nncts --help`` or ``nncts SUBCOMMAND --help``."""
    return _help(f"nncts:{subcommand or ''}")


@functools.lru_cache(maxsize=None)
def nncts_subcommands() -> tuple[str, ...]:
    """The subcommands ``nncts --help`` lists (its ``{cts,vts,...}`` choice list)."""
    m = re.search(r"\{([a-z,-]+)\}", nncts_help())
    assert m, "nncts --help lists no subcommands"
    return tuple(m.group(1).split(","))


@functools.lru_cache(maxsize=None)
def pytest_help() -> str:
    """``pytest --help`` with the root conftest's plugins (every suite's options)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=_HELP_TIMEOUT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def module_help(module: str) -> str:
    """``python -m MODULE --help``."""
    return _help(f"module:{module}")


def has_option(help_text: str, option: str) -> bool:
    """Whether ``option`` (``--name``) appears as a whole word in ``help_text``."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text) is not None


@functools.lru_cache(maxsize=None)
def extras() -> frozenset[str]:
    """The optional-dependency groups of pyproject.toml."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return frozenset(data["project"]["optional-dependencies"])


# --- checking one command ----------------------------------------------------------------------

def _missing(options: list[str], help_text: str, what: str) -> list[str]:
    return [f"{option} is not an option of {what}" for option in options if not has_option(help_text, option)]


def check_nncts(args: list[str]) -> list[str]:
    """Problems of ``nncts ARGS``: the subcommand exists, its options are documented."""
    if not args or args[0].startswith("-"):
        return _missing(long_options(args), nncts_help(), "nncts")
    sub = args[0]
    if sub not in nncts_subcommands():
        return [f"nncts has no subcommand {sub!r} (it has {', '.join(nncts_subcommands())})"]
    text = nncts_help(sub)
    if sub in PYTEST_SUITES:
        text += pytest_help()
    if sub == "stress":  # its --report-dir is read by nncts itself; `nncts --help` states it
        text += nncts_help()
    return _missing(long_options(args[1:]), text, f"nncts {sub}")


def check_pytest(args: list[str]) -> list[str]:
    """Problems of ``pytest ARGS``: options pytest (with the project's plugins) does not
    know, test paths that do not exist."""
    problems = _missing(long_options(args), pytest_help(), "pytest")
    for word in args:
        if not word.startswith("-") and (word.endswith("/") or word.endswith(".py")) and "::" not in word:
            if not (ROOT / word).exists():
                problems.append(f"pytest path {word} does not exist")
    return problems


def check_python(args: list[str]) -> list[str]:
    """Problems of ``python ARGS``: ``-m MODULE`` must import (and, for nncts's own modules,
    know the options given); ``FILE.py`` must exist."""
    if args[:1] == ["-m"] and len(args) >= 2:
        module, rest = args[1], args[2:]
        if module == "pytest":
            return check_pytest(rest)
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            return [f"python -m {module}: no such module"]
        if module.split(".")[0] in OWN_PACKAGES:
            return _missing(long_options(rest), module_help(module), f"python -m {module}")
        return []
    if args and args[0].endswith(".py") and not (ROOT / args[0]).is_file():
        return [f"python {args[0]}: no such file"]
    return []


def check_pip(args: list[str]) -> list[str]:
    """Problems of ``pip install ARGS``: extras of this project that do not exist, paths
    (``-e DIR``) that do not exist."""
    if args[:1] != ["install"]:
        return []
    problems = []
    for word in args[1:]:
        m = re.fullmatch(r"(?:nncts|\.)\[([\w,-]+)\]", word)
        if m:
            problems += [f"pip install {word}: no extra {e!r} in pyproject.toml"
                         for e in m.group(1).split(",") if e not in extras()]
        elif not word.startswith("-") and "/" in word and not (ROOT / word).exists():
            problems.append(f"pip install {word}: no such path")
    return problems


CHECKS = {"nncts": check_nncts, "pytest": check_pytest, "python": check_python, "pip": check_pip}


def check_command(words: list[str]) -> list[str]:
    """Problems of one simple command (empty when it is fine or not one nncts checks)."""
    check = CHECKS.get(program(words[0]))
    return check(words[1:]) if check else []


# --- tests ----------------------------------------------------------------------------------

def test_mkdocs_builds_the_pages_strictly(tmp_path):
    """A broken link or anchor, or a page left out of the nav, fails ``--strict``."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    pages = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*.html")}
    assert {"index.html", "architecture.html", "writing-a-driver.html", "adding-an-operation.html",
            "suites/cts.html", "trust-model.html"} <= pages


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second():
    text = README.read_text(encoding="utf-8")
    info, first, body = fenced_blocks(text)[0]
    assert (info, len(body)) == ("sh", 2)
    assert text.splitlines()[first - 2].startswith("```"), "the two commands must come first"
    assert not any(line.strip() and not line.startswith("#") for line in text.splitlines()[:first - 2])
    assert body[0] == MAIN_JOB
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert body[1] in ci, "the README's second command is not the line .ci/run runs"


def test_the_readme_stays_a_front_page():
    """Reference material lives in docs/; the README is what a newcomer reads first."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_readme_links_stay_in_the_repository():
    """The README is read on its own (a clone, a package index): every link is a file or
    directory of this repository, none outside it or on the network."""
    bad = []
    for target in _LINK.findall(README.read_text(encoding="utf-8")):
        path = (ROOT / target.split("#", 1)[0]).resolve()
        if "://" in target or not path.is_relative_to(ROOT) or not path.exists():
            bad.append(target)
    assert not bad, bad


def test_the_pages_link_nothing_outside_the_repository():
    bad = [f"{p.relative_to(ROOT)}: {t}" for p in doc_files()
           for t in _LINK.findall(p.read_text(encoding="utf-8")) if "://" in t or t.startswith("../..")]
    assert not bad, bad


def test_command_lines_are_split_as_the_shell_would():
    body = ["python -m runtime.remote.host --driver X \\", "    --listen unix:$D/x.sock &   # note",
            "D=$(mktemp -d) && A=1 .venv/bin/nncts cts -k 'a or b' --mode sync | tee log"]
    lines = shell_lines(body, 10)
    assert lines == [(10, "python -m runtime.remote.host --driver X --listen unix:$D/x.sock &   # note"),
                     (12, body[2])]
    assert split_commands(lines[0][1]) == [["python", "-m", "runtime.remote.host", "--driver", "X",
                                            "--listen", "unix:$D/x.sock"]]
    assert split_commands(lines[1][1]) == [["mktemp", "-d"], [".venv/bin/nncts", "cts", "-k", "a or b",
                                                               "--mode", "sync"], ["tee", "log"]]
    assert program(".venv/bin/nncts") == "nncts" and program("python3") == "python"
    assert long_options(["-n", "2", "--mode=sync", "--", "-runs=5"]) == ["--mode"]


def test_the_checks_catch_a_wrong_command():
    assert check_command(["nncts", "cts", "--mode", "sync", "-n", "2"]) == []
    assert check_command(["nncts", "cts", "--no-such-option"]) == ["--no-such-option is not an option of nncts cts"]
    assert check_command(["nncts", "certify", "--mode", "sync"]) == ["--mode is not an option of nncts certify"]
    assert check_command(["nncts", "frobnicate"])[0].startswith("nncts has no subcommand 'frobnicate'")
    assert check_command(["python", "-m", "no_such_module_xyz"]) == ["python -m no_such_module_xyz: no such module"]
    assert check_command(["pip", "install", "nncts[nope]"]) == ["pip install nncts[nope]: no extra 'nope' in pyproject.toml"]


def test_every_command_line_in_the_docs_exists():
    commands = doc_commands()
    programs = {program(words[0]) for _, _, words in commands}
    assert len(commands) > 100 and {"nncts", "python", "pytest", "pip"} <= programs
    problems = [f"{where}: {line}\n    {p}" for where, line, words in commands for p in check_command(words)]
    assert not problems, "\n".join(problems)


def test_every_nncts_subcommand_is_shown_in_the_readme():
    shown = {words[1] for where, _, words in doc_commands()
             if where.startswith("README.md") and program(words[0]) == "nncts" and len(words) > 1}
    table = set(re.findall(r"^\| `nncts ([a-z-]+)`", README.read_text(encoding="utf-8"), re.M))
    assert set(nncts_subcommands()) <= shown | table


# --- the driver of docs/writing-a-driver.md ------------------------------------------------

def _page_driver(tmp_path):
    """The page's driver module, written out from its ``python`` block and imported."""
    page = (DOCS / "writing-a-driver.md").read_text(encoding="utf-8")
    sources = ["\n".join(body) for info, _, body in fenced_blocks(page)
               if info == "python" and body and body[0].startswith('"""tiny_driver.py')]
    assert len(sources) == 1, "docs/writing-a-driver.md must hold one tiny_driver.py block"
    path = tmp_path / "tiny_driver.py"
    path.write_text(sources[0] + "\n", encoding="utf-8")
    assert len(sources[0].splitlines()) <= 70
    spec = importlib.util.spec_from_file_location("tiny_driver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tiny_driver_of_the_driver_page_passes_the_corpus_relu_models(tmp_path):
    """Golden values: the AOSP corpus's expected outputs, judged with the CTS criteria."""
    from runtime.hal.interfaces import IDevice
    from runtime.testing.criteria import judge
    from runtime.testing.hal_convert import read_outputs, to_hal_model, to_hal_request
    from runtime.testing.test_model import load_spec
    from runtime.types import MeasureTiming

    device = _page_driver(tmp_path).make_device()
    assert isinstance(device, IDevice)
    corpus = ROOT / "cts" / "corpus"
    ran = 0
    for name in ("V1_0/relu_float_1", "V1_0/relu_float_2", "V1_1/relu_float_1_relaxed"):
        for tm in load_spec(corpus / f"{name}.json.gz"):
            model = to_hal_model(tm)
            if "all_inputs_as_internal" in tm.name:  # an ADD feeds the RELU: declined
                assert device.get_supported_operations(model) == [False, True]
                continue
            assert device.get_supported_operations(model) == [True]
            request = to_hal_request(tm)
            shapes, timing = device.prepare_model(model).execute_synchronously(request, MeasureTiming.YES)
            assert judge(tm, read_outputs(tm, request, shapes), [s.dimensions for s in shapes]) == []
            assert 0 < timing.time_on_device <= timing.time_in_driver
            ran += 1
    assert ran == 3
    (quant,) = [tm for tm in load_spec(corpus / "V1_0/relu_quant8_2.json.gz") if tm.name == "relu_quant8_2"]
    assert device.get_supported_operations(to_hal_model(quant)) == [False]


def test_the_tiny_driver_reports_a_short_output_buffer(tmp_path):
    """An output buffer of 4 bytes for the corpus model's 4 float32 outputs:
    OUTPUT_INSUFFICIENT_SIZE, with the output's real dimensions (the corpus's)."""
    from runtime.errors import HalError
    from runtime.testing.hal_convert import to_hal_model, to_hal_request
    from runtime.testing.test_model import load_spec
    from runtime.types import ErrorStatus

    device = _page_driver(tmp_path).make_device()
    (tm,) = [tm for tm in load_spec(ROOT / "cts/corpus/V1_0/relu_float_1.json.gz") if tm.name == "relu_float_1"]
    request = to_hal_request(tm)
    out = request.outputs[0]
    out.location.length = 4
    with pytest.raises(HalError) as e:
        device.prepare_model(to_hal_model(tm)).execute_synchronously(request)
    assert e.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    expected_dims = tm.main.operands[tm.main.output_indexes[0]].dimensions
    assert expected_dims == [1, 2, 2, 1]
    assert [s.dimensions for s in e.value.output_shapes] == [expected_dims]
    assert [s.is_sufficient for s in e.value.output_shapes] == [False]
