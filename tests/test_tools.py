"""The action parser and the edit tools never raise on arbitrary input (property-based), and say why."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frog_gym.env.tools import ActionError, Call, FileTools, SafeFS, parse_action
from frog_gym.env.toolspec import TOOLS

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                           max_leaves=12)


@given(st.text(max_size=2000))
@settings(max_examples=200, deadline=None)
def test_parser_never_raises_on_text(text):
    assert isinstance(parse_action(text), (Call, ActionError))


@given(st.dictionaries(st.sampled_from(["tool", "name", "arguments", "path", "command", "old_str", "new_str",
                                        "insert_line", "view_range", "file_text", "x"]), json_values, max_size=6))
@settings(max_examples=200, deadline=None)
def test_parser_never_raises_on_dicts(d):
    r = parse_action(d)
    assert isinstance(r, (Call, ActionError))
    if isinstance(r, Call):
        assert r.tool in TOOLS and set(TOOLS[r.tool].required) <= set(r.args)


tool_calls = st.one_of(
    st.builds(lambda p, r: {"tool": "view", "path": p, **({"view_range": r} if r else {})},
              st.text(max_size=40), st.none() | st.lists(st.integers(-3, 50), min_size=2, max_size=2)),
    st.builds(lambda p, t: {"tool": "create", "path": p, "file_text": t}, st.text(max_size=40), st.text(max_size=200)),
    st.builds(lambda p, o, n: {"tool": "str_replace", "path": p, "old_str": o, "new_str": n},
              st.sampled_from(["a.py", "sub/b.txt", "link", "../a.py", "/testbed/a.py", "bin.dat"]),
              st.text(max_size=20), st.text(max_size=20)),
    st.builds(lambda p, i, t: {"tool": "insert", "path": p, "insert_line": i, "insert_text": t},
              st.sampled_from(["a.py", "sub/b.txt", "nope.py", "bin.dat"]), st.integers(-5, 30), st.text(max_size=50)),
    st.builds(lambda p: {"tool": "undo_edit", "path": p}, st.sampled_from(["a.py", "sub/b.txt", "x", "link"])),
)


@given(st.lists(tool_calls, min_size=1, max_size=8))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_edit_tools_never_raise_and_stay_inside(tmp_path_factory, calls):
    root = tmp_path_factory.mktemp("ws")
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret").write_text("s")
    (root / "a.py").write_text("x = 1\nx = 1\ny = 2\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("hello\n")
    (root / "bin.dat").write_bytes(b"\xff\xfe\x00abc")
    (root / "link").symlink_to(outside / "secret")
    tools = FileTools(root)
    for c in calls:
        parsed = parse_action(c)
        if isinstance(parsed, Call):
            obs, ok = tools.run(parsed)
            assert isinstance(obs, str) and obs
    assert (outside / "secret").read_text() == "s"
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]


def test_symlink_inside_the_workspace_is_followed(tmp_path):
    (tmp_path / "real.py").write_text("a\n")
    (tmp_path / "alias.py").symlink_to("real.py")
    fs = SafeFS(tmp_path)
    assert fs.resolve("alias.py") == "real.py"
    assert fs.resolve("/testbed/./sub/../alias.py") == "real.py"


def test_messages_name_the_problem():
    assert "needs the argument 'command'" in parse_action({"tool": "bash"}).message
    assert "has no argument 'cmd'" in parse_action({"tool": "bash", "cmd": "ls"}).message
    assert "must be a string" in parse_action({"tool": "bash", "command": 3}).message
    assert parse_action({"tool": "insert", "path": "a", "insert_line": "3", "insert_text": ""}).args["insert_line"] == 3
