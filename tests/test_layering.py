"""The architecture's two rules: store/ never loads Textual or Rich, and the CLI starts without Textual (both checked
in a fresh interpreter); tui/ runs no SQL and writes no files (it calls the store)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def sources(package: str) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in (ROOT / package).rglob("*.py")}


def loaded_after(statement: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after ``statement`` (each package and the packages above it): what
    running it really pulls in. What the statement prints goes before a line of its own, and is left out."""
    code = f"import sys; {statement}; print('\\n{_MODULES}'); print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    return set(done.stdout.split(_MODULES)[-1].split())


_MODULES = "--- modules ---"


def test_the_store_loads_neither_textual_nor_rich():
    every_module = "; ".join(f"import {m}" for m in store_modules())
    assert {"textual", "rich"} & loaded_after(every_module) == set()


def test_the_cli_starts_without_textual():
    assert "textual" not in loaded_after("import engram.tui.cli")


def test_the_command_line_compiles_the_poisoning_screen_only_for_a_command_that_screens():
    """Its rules take a tenth of a second to compile: ``engram ls`` or ``engram search`` must not wait for them."""
    loaded = loaded_after("import engram.tui.cli as c; c._parser()")
    assert {"engram.store.screen.screen", "engram.store.screen.rules"} & loaded == set()


def test_a_command_line_imports_the_module_of_its_command_alone():
    """Each command module brings much of the store with it: ``engram audit verify`` waits for none of the
    others. The table the parser reads it from is checked against what each module registers."""
    from engram.tui.cli import COMMANDS, _command, _parser

    modules = {f"engram.tui.cli.{name}" for name in COMMANDS.values()}
    loaded = loaded_after("import engram.tui.cli as c; c._parser(c._command(['--root', 'R', 'audit', 'verify']))")
    assert modules & loaded == {"engram.tui.cli.audit"}
    assert _command(["--root=R", "search", "x"]) == "search" and _command(["--help"]) is None
    assert {words.split()[0] for words in _parser()[1]} == set(COMMANDS)
    version = "from engram.tui.cli import main; exec('try: main([\"--version\"])\\nexcept SystemExit: pass')"
    assert modules & loaded_after(version) == set()  # it prints the version and exits: no command is parsed


def test_the_parsers_of_every_command_load_none_of_their_work():
    """``engram --help``, ``engram check --help`` and a tab press build parsers and run nothing: what the commands
    run (every file's parse, the search index, the history's repository, the demo's processes) waits for a
    command that runs it."""
    heavy = {"numpy", "pydantic", "yaml", "pygit2", "multiprocessing", "engram.store.frontmatter"}
    assert heavy & loaded_after("import engram.tui.cli as c; c._parser()") == set()


def test_a_tab_press_after_a_command_builds_that_commands_parser_alone():
    """The shell's line says which command is being completed: the other modules are not imported (each brings
    much of the store with it)."""
    from engram.tui.cli import COMMANDS

    modules = {f"engram.tui.cli.{name}" for name in COMMANDS.values()}
    complete = "import engram.tui.cli as c, engram.tui.completion as k; c._parser(c._command(k.completed_words()))"
    for line, module in (("engram audit ve", "audit"), ("engram --root R scope mark 35", "scopes")):
        shell = {"_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line))}
        assert modules & loaded_after(complete, shell) == {f"engram.tui.cli.{module}"}, line
    first_word = {"_ARGCOMPLETE": "1", "COMP_LINE": "engram au", "COMP_POINT": "9"}  # which command: every module
    assert modules <= loaded_after(complete, first_word)


def test_a_listing_loads_neither_the_checks_nor_the_demo_nor_the_search(fixture_root):
    """``engram ls`` and ``engram stats`` read rows: what the other commands on a whole root need (the check, the
    demo's writer, the search index and numpy) is not loaded for them."""
    heavy = {"engram.tui.cli.root", "engram.store.drift.check", "engram.store.demo", "engram.store.search", "numpy"}
    for command in ("ls", "stats"):
        listing = f"from engram.tui.cli import main; main([{command!r}, '--json', '--root', {str(fixture_root)!r}])"
        assert heavy & loaded_after(listing) == set(), command


def test_a_search_of_an_index_up_to_date_parses_no_memory_file(fixture_root, tmp_path):
    """``engram search`` answers from the persistent index: with nothing changed since its last sync, neither
    PyYAML nor ``show``'s explanation are loaded; a sync that reads files (the first one builds the index) reads
    their YAML, and validates none of their fields (the frontmatter's models, pydantic)."""
    search = f"from engram.tui.cli import main; main(['search', 'webhook', '--root', {str(fixture_root)!r}])"
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = loaded_after(search, cache)
    assert "engram.store.header" in first and {"pydantic", "engram.store.frontmatter"} & first == set()
    late = {"pydantic", "yaml", "engram.store.frontmatter", "engram.store.explain", "engram.tui.cli.root"}
    assert late & loaded_after(search, cache) == set()
    assert "rapidfuzz" in loaded_after(search, cache)  # its hits are ranked by their titles
    unranked = search.replace("'webhook'", "'!zzzz'")  # every memory, newest first: nothing to rank
    assert "rapidfuzz" not in loaded_after(unranked, cache)


def test_the_console_starts_without_what_its_first_frame_does_not_need(fixture_root):
    """What the console's first frame runs (the command line, the app, the queue pane, the root opened and the
    queue's first page read) imports none of what later work needs: numpy and rapidfuzz (search, the audit
    log's view), pydantic and PyYAML (parsing a memory file), the cipher, multiprocessing (the demo's drawing), the
    other panes and the edit screen."""
    first_frame = (
        "import engram.tui.cli, engram.tui.app, engram.tui.panes.queue; "
        "from engram.store.service import Store; from engram.store.queue import first_page; "
        f"first_page(Store.open({str(fixture_root)!r}), 'dura_avg', 200)"
    )
    late = {
        "numpy",
        "rapidfuzz",
        "pydantic",
        "yaml",
        "cryptography",
        "multiprocessing",
        "engram.store.frontmatter",
        "engram.store.promotions",
    }
    late |= {"engram.store.search", "engram.store.audit.view", "engram.tui.panes.search", "engram.tui.screens.edit"}
    # the poisoning screen's rules: compiled once the queue is read
    late |= {"engram.store.screen.screen", "engram.store.screen.rules"}
    assert late & loaded_after(first_frame) == set()


def store_modules() -> list[str]:
    return sorted(
        "engram.store." + ".".join(p.relative_to(ROOT / "store").with_suffix("").parts)
        for p in (ROOT / "store").rglob("*.py")
        if p.name != "__init__.py"
    )


FORBIDDEN_IN_TUI = [
    r"^\s*(import|from)\s+(sqlite3|peewee)\b",  # SQL drivers
    r"^\s*from\s+engram\.store\.index\s+import",  # ORM models: queries belong in store/
    r"\.execute(_sql)?\(",
    r"\.select\(",
    r"\.(write_text|write_bytes)\(",  # SQL, file writes
    r"\bopen\([^)]*['\"][wa]",
    r"os\.(replace|rename|remove|unlink)\(",
    r"shutil\.",  # file writes, moves
]


def test_tui_has_no_sql_and_no_file_writes():
    offenders = [
        (path, pattern)
        for path, text in sources("tui").items()
        for pattern in FORBIDDEN_IN_TUI
        if re.search(pattern, text, re.M)
    ]
    assert offenders == []


SHOWN_AS = {"question_mark": "?", "colon": ":", "slash": "/", "plus": "+", "minus": "-"}


def test_docs_keymap_lists_every_action_with_its_keys_and_nothing_else():
    """docs/keymap.md and the registry cannot drift: every action's row, with its default keys, and no row for an
    action the registry does not have."""
    from engram.tui.panes.table import ALL_ACTIONS

    rows = re.findall(r"^\| `([^`]+)` \| .+ \| `([a-z_.]+)` \|$", (ROOT / "docs" / "keymap.md").read_text(), re.M)
    documented = {action_id: keys for keys, action_id in rows}
    registry = {a.id: ",".join(SHOWN_AS.get(k, k) for k in a.keys.split(",")) for a in ALL_ACTIONS}
    assert documented == registry


def test_no_store_module_imports_another_that_imports_it_back(tmp_path):
    """The store's modules form no circle, function-level imports counted (grimp reads them all): a module is
    understood, and tested, from the modules below it. Built on a tree of links of the installed shape, as
    .ci/lint-imports builds its graph."""
    import grimp

    package = tmp_path / "engram"
    package.mkdir()
    for item in (ROOT / "engram").iterdir():
        (package / item.name).symlink_to(item)
    for folder in ("store", "tui", "migrations", "themes"):
        (package / folder).symlink_to(ROOT / folder)
    sys.path.insert(0, str(tmp_path))
    try:
        graph = grimp.build_graph("engram", exclude_type_checking_imports=True, cache_dir=None)
    finally:
        sys.path.remove(str(tmp_path))
    store = sorted(m for m in graph.modules if m.startswith("engram.store"))
    circles = [
        (a, b)
        for a in store
        for b in graph.find_modules_directly_imported_by(a)
        if b.startswith("engram.store") and b != a and graph.chain_exists(importer=b, imported=a)
    ]
    assert circles == []


def test_every_pane_acts_through_the_one_way():
    """A pane or screen tells the console the store changed only through tui/actions.py (attempt,
    attempt_in_worker, succeeded, changed_elsewhere), which also says what was done or why nothing was."""
    told_directly = [
        path
        for folder in ("tui/panes", "tui/screens")
        for path, text in sources(folder).items()
        if "StoreChanged(" in text
    ]
    assert told_directly == []
