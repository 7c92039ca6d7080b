"""`audit --fix` / `--diff` on a hostile tree: links, special files, odd bytes.

Three classes, each run as a user runs it (the installed command in a
subprocess):

* links: `--fix` never writes through a symbolic link (absolute or relative,
  to a file or a directory, inside or outside the root), and `--diff` writes
  nothing anywhere, not even a scratch copy;
* special and large files: the check of a fix copies nothing, so named pipes,
  sockets, devices, `.git` and huge files cost nothing and hang nothing;
* odd input: a line is what ends at `\\n` for the audit and the fix alike;
  `\\x0b`, `\\x0c`, `\\x1c`-`\\x1e`, NEL, U+2028/2029, a lone CR, a BOM, CRLF and
  bytes that are not UTF-8 around the knob neither move the line nor change a
  byte other than the number.
"""

import errno
import os
import shutil
import socket
import stat
import subprocess

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import DATA, PACKAGED, goldenal_cmd
from goldenal.core.files import read_regular, replace_beneath

AUDIT = DATA / "audit" / "repo"
# vLLM --config file whose literal 3.11 should be 3.02 (minimaxm3_eagle3_gqa thinking_on K=4)
SERVE = (AUDIT / "benchmarks/single_node/serve_configs/minimax-m3-agentic-serve.yaml").read_bytes()
# a K=2 variant inherits the K=3 decode block by anchor: its literal must not be fixed
SHARED = (AUDIT / "benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/agentic/"
          "glm5.2-agentx.yaml").read_bytes()
FIXED = SERVE.replace(b"3.11", b"3.02")
# a launcher with the knob on line 5, between comment lines the tests fill with odd bytes
LAUNCH = (b"#!/usr/bin/env bash\n"
          b"# MiniMax-M3 agentic launcher{before}\n"
          b"vllm serve MiniMaxAI/MiniMax-M3 \\\n"
          b"    --default-chat-template-kwargs '{\"thinking_mode\": \"enabled\"}' \\\n"
          b"    --speculative-config '{\"method\":\"eagle3\",\"model\":\"Inferact/MiniMax-M3-"
          b"EAGLE3-GQA\",\"num_speculative_tokens\":4,\"rejection_sample_method\":\"synthetic\","
          b"\"synthetic_acceptance_length\":3.11}'\n"
          b"# end{after}\n")


def _audit(root, *args, tmp=None, cache=None, timeout=120):
    """``goldenal audit ROOT ARGS`` as a user runs it: (exit code, stdout bytes, stderr).

    ``cache``: the per-file cache's directory (default: ``--no-cache``).
    """
    env = dict(os.environ, GOLDENAL_DEBUG="")
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    if cache is not None:
        env["GOLDENAL_CACHE_DIR"] = str(cache)
    proc = subprocess.run(goldenal_cmd() + ["audit", str(root), "--root", str(root),
                                            "--isolated", "--golden-dir", str(PACKAGED),
                                            *(["--no-cache"] if cache is None else []),
                                            *map(str, args)],
                          capture_output=True, env=env, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")


def _state(*tops):
    """Every entry under ``tops`` (links not followed): kind, bytes or target, mode, mtime."""
    out = {}
    for top in tops:
        for here, dirs, files in os.walk(top):
            for name in dirs + files:
                path = os.path.join(here, name)
                st_ = os.lstat(path)
                if stat.S_ISLNK(st_.st_mode):
                    body = ("link", os.readlink(path))
                elif stat.S_ISREG(st_.st_mode) and st_.st_size > 1 << 20:
                    body = ("large file", st_.st_size)      # sparse test files: not read
                elif stat.S_ISREG(st_.st_mode):
                    with open(path, "rb") as fh:
                        body = ("file", fh.read())
                else:
                    body = ("other", stat.S_IFMT(st_.st_mode))
                out[path] = (body, st_.st_mode, st_.st_mtime_ns)
            out[here] = (("dir",), os.lstat(here).st_mode, os.lstat(here).st_mtime_ns)
    return out


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _not_fixed(err):
    return sorted(line for line in err.splitlines() if line.startswith("Not fixed: "))


# ---------------------------------------------------------------------------
# Links: --fix never writes through one; --diff writes nothing anywhere

@pytest.fixture
def linked(tmp_path):
    """A root whose links reach files audited only through them, and one plain file."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    _write(root / "agentic" / "plain.yaml", SERVE)
    # node_modules/ is never audited under its own name: reached only through links
    hidden = _write(root / "node_modules" / "target.yaml", SERVE)
    _write(root / "node_modules" / "other.yaml", SERVE)
    (root / "agentic" / "absolute.yaml").symlink_to(hidden)
    (root / "agentic" / "relative.yaml").symlink_to(os.path.join("..", "node_modules",
                                                                 "other.yaml"))
    # a directory link visited before the directory it names (whose files it then stands for)
    _write(root / "zz_agentic" / "serve.yaml", SERVE)
    (root / "aa_agentic").symlink_to("zz_agentic", target_is_directory=True)
    # links out of the root are never followed, so never written
    _write(outside / "real.yaml", SERVE)
    (root / "agentic" / "out_absolute.yaml").symlink_to(outside / "real.yaml")
    (root / "agentic" / "out_relative.yaml").symlink_to(os.path.join("..", "..", "outside",
                                                                     "real.yaml"))
    # the shared-anchor recipe (a fix the check rejects), also named by an absolute link
    shared = _write(root / "agentic" / "glm5.2-agentx.yaml", SHARED)
    (root / "agentic" / "a-alias.yaml").symlink_to(shared)
    return root, outside


def test_links_are_never_written_through_and_diff_writes_nothing(linked, tmp_path):
    root, outside = linked
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    before = _state(root, outside)

    code, out, err = _audit(root, "--diff", tmp=scratch)
    assert code == 1, err
    assert _state(root, outside) == before           # bytes, modes, mtimes, directories
    assert os.listdir(scratch) == []                  # no scratch copy either
    assert out == (b"--- a/agentic/plain.yaml\n+++ b/agentic/plain.yaml\n@@ -6,4 +6,4 @@\n"
                   b"   model: Inferact/MiniMax-M3-EAGLE3-GQA\n"
                   b"   num_speculative_tokens: 4\n   rejection_sample_method: synthetic\n"
                   b"-  synthetic_acceptance_length: 3.11\n+  synthetic_acceptance_length: 3.02\n")
    linked_reason = "reached through a symbolic link; --fix never writes through one " \
                    "(fix the file it names)"
    expected = sorted([
        f"Not fixed: aa_agentic/serve.yaml:9:32: GAL201: {linked_reason}",
        f"Not fixed: agentic/a-alias.yaml:12:33: GAL201: {linked_reason}",
        "Not fixed: agentic/glm5.2-agentx.yaml:12:33: GAL201: the literal also serves another "
        "config that needs another value (role decode needs 2.99; a shared anchor, variable "
        "or base section; `goldenal inject` gives a variant inheriting it its own value)",
        f"Not fixed: agentic/absolute.yaml:9:32: GAL201: {linked_reason}",
        f"Not fixed: agentic/relative.yaml:9:32: GAL201: {linked_reason}"])
    assert _not_fixed(err) == expected
    assert err.splitlines()[-1] == "Would fix 1 finding(s) in 1 file(s); 5 not fixed."

    code, out, err = _audit(root, "--fix", tmp=scratch)
    assert _not_fixed(err) == expected
    assert err.splitlines()[-1] == "Fixed 1 finding(s) in 1 file(s); 5 not fixed."
    assert os.listdir(scratch) == []
    after = _state(root, outside)
    changed = {p for p in before if before[p][0] != after.get(p, (None,))[0]}
    assert changed == {str(root / "agentic" / "plain.yaml")}
    assert (root / "agentic" / "plain.yaml").read_bytes() == FIXED
    # the fixed file was replaced, not rewritten in place: same mode, still a plain file
    plain = str(root / "agentic" / "plain.yaml")
    assert after[plain][1] == before[plain][1]
    assert [p for p in after if p not in before] == []     # no temporary left behind


def test_diff_reads_the_audit_cache_and_never_writes_it(tmp_path):
    root, cache = tmp_path / "root", tmp_path / "cache"
    plain = LAUNCH.replace(b"{before}", b"").replace(b"{after}", b"")
    _write(root / "agentic" / "launch.sh", plain)
    assert _audit(root, "--diff", cache=cache)[0] == 1
    assert not cache.exists()                         # nothing cached by --diff
    assert _audit(root, cache=cache)[0] == 1          # a plain audit fills it
    before = _state(cache)
    assert len(before) == 2
    code, out, _ = _audit(root, "--diff", cache=cache)
    assert code == 1 and out.startswith(b"--- a/agentic/launch.sh\n")
    assert _state(cache) == before


def test_replace_beneath_refuses_links_special_and_changed_files(tmp_path):
    """The primitive under --fix: ELOOP through any link, EINVAL for a pipe, no half write."""
    root = tmp_path / "root"
    plain = _write(root / "d" / "f.yaml", SERVE)
    os.chmod(plain, 0o640)
    (root / "link.yaml").symlink_to(plain)
    (root / "dlink").symlink_to("d", target_is_directory=True)
    os.mkfifo(root / "pipe")
    for rel in ("link.yaml", "dlink/f.yaml"):
        for call in (lambda r: read_regular(r, beneath=root),
                     lambda r: replace_beneath(root, r, b"x", expected=SERVE)):
            with pytest.raises(OSError) as info:
                call(rel)
            assert (info.value.errno, info.value.filename) == (errno.ELOOP, rel)
    with pytest.raises(OSError) as info:
        read_regular("pipe", beneath=root)            # returns at once: never blocks
    assert (info.value.errno, info.value.strerror) == (
        errno.EINVAL, "is a device, pipe or socket, not a regular file")
    with pytest.raises(OSError) as info:
        replace_beneath(root, "d/f.yaml", FIXED, expected=b"something else")
    assert info.value.errno == errno.EAGAIN
    assert plain.read_bytes() == SERVE
    replace_beneath(root, "d/f.yaml", FIXED, expected=SERVE)
    assert plain.read_bytes() == FIXED and stat.S_IMODE(os.stat(plain).st_mode) == 0o640
    assert sorted(os.listdir(root / "d")) == ["f.yaml"]
    os.chmod(plain, 0o444)
    with pytest.raises(PermissionError):
        replace_beneath(root, "d/f.yaml", SERVE, expected=FIXED)
    assert plain.read_bytes() == FIXED


def test_a_file_swapped_for_a_link_mid_write_is_left_alone(tmp_path, monkeypatch):
    """The name is checked again just before the rename: a link put there stays a link."""
    from goldenal.core import files

    root, outside = tmp_path / "root", _write(tmp_path / "outside.yaml", SERVE)
    plain = _write(root / "f.yaml", SERVE)
    fsync = os.fsync

    def swap_then_fsync(fd):
        plain.unlink()
        plain.symlink_to(outside)
        return fsync(fd)

    monkeypatch.setattr(files.os, "fsync", swap_then_fsync)
    with pytest.raises(OSError) as info:
        replace_beneath(root, "f.yaml", FIXED, expected=SERVE)
    monkeypatch.undo()
    assert (info.value.errno, info.value.filename) == (errno.EAGAIN, "f.yaml")
    assert plain.is_symlink() and outside.read_bytes() == SERVE
    assert os.listdir(root) == ["f.yaml"]


def test_a_read_only_file_is_named_as_not_fixed(tmp_path):
    root = tmp_path / "root"
    path = _write(root / "agentic" / "serve.yaml", SERVE)
    os.chmod(path, 0o444)
    code, _, err = _audit(root, "--fix")
    assert code == 1
    assert _not_fixed(err) == ["Not fixed: agentic/serve.yaml:9:32: GAL201: not written: file is "
                               "read-only"]
    assert err.splitlines()[-1] == "Fixed 0 finding(s) in 0 file(s); 1 not fixed."
    assert path.read_bytes() == SERVE


# ---------------------------------------------------------------------------
# Special and huge files: the check of a fix copies nothing

def test_pipes_sockets_devices_git_and_huge_files_neither_hang_nor_get_copied(tmp_path,
                                                                             monkeypatch):
    root = tmp_path / "root"
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    _write(root / "agentic" / "serve.yaml", SERVE)
    os.mkfifo(root / "agentic" / "pipe.yaml")       # opening it for reading would block forever
    os.mkfifo(root / "pipe")
    os.mkfifo(root / ".gitignore")              # read by the walk: must not block either
    sock = socket.socket(socket.AF_UNIX)
    monkeypatch.chdir(root / "agentic")
    sock.bind("sock")                   # relative: a socket path is limited to ~100 bytes
    monkeypatch.undo()
    try:
        os.mknod(root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        pass                                        # not root: no device node to test
    (root / "zero").symlink_to("/dev/zero")
    # a repository's objects and a huge file (sparse: free on disk, slow to copy)
    _write(root / ".git" / "objects" / "pack" / "big.pack", b"PACK")
    with open(root / ".git" / "objects" / "pack" / "big.pack", "r+b") as fh:
        fh.truncate(2 << 30)
    with open(root / "agentic" / "weights.bin", "wb") as fh:
        fh.truncate(2 << 30)
    try:
        before = _state(root)
        code, _, err = _audit(root, "--diff", tmp=scratch, timeout=60)
        assert err.splitlines()[-1] == "Would fix 1 finding(s) in 1 file(s); 0 not fixed."
        assert _state(root) == before
        code, _, err = _audit(root, "--fix", tmp=scratch, timeout=60)
        assert err.splitlines()[-1] == "Fixed 1 finding(s) in 1 file(s); 0 not fixed."
        assert code == 0
    finally:
        sock.close()
    assert os.listdir(scratch) == []
    assert (root / "agentic" / "serve.yaml").read_bytes() == FIXED
    assert stat.S_ISFIFO(os.lstat(root / "agentic" / "pipe.yaml").st_mode)


# ---------------------------------------------------------------------------
# Odd input: one line numbering (`\n`, CRLF once) for the audit and the fix

ODD = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r"]
ODD_BYTES = [c.encode() for c in ODD] + [b"\r", b"\x85", b"\xe9", b"\xff", b"\xc3",
                                         b"\xef\xbb\xbf", b"\xed\xa0\x80"]


def test_odd_bytes_crlf_bom_and_latin1_around_the_knob_are_fixed_byte_exactly(tmp_path):
    root = tmp_path / "root"
    text = SERVE.replace(b"\n", b"\r\n")
    text = (b"\xef\xbb\xbf" + text.replace(b"(fixture).", b"(fixture) caf\xe9 " +
                                           b"".join(c.encode() for c in ODD) + b" end"))
    text = text.replace(b"  num_speculative_tokens", b"  # \xff\x85\r\xe2\x80\xa8 note\r\n"
                        b"  num_speculative_tokens")
    path = _write(root / "agentic" / "serve.yaml", text)
    code, out, _ = _audit(root)
    assert code == 1
    assert out.splitlines()[0].startswith(b"agentic/serve.yaml:10:32: GAL201 [*] ")
    code, out, err = _audit(root, "--diff")
    assert err.splitlines()[-1] == "Would fix 1 finding(s) in 1 file(s); 0 not fixed."
    assert b"-  synthetic_acceptance_length: 3.11\r\n+  synthetic_acceptance_length: 3.02\r\n" \
        in out
    assert b"   # \xff\x85\r\xe2\x80\xa8 note\r\n" in out  # the file's own bytes
    assert path.read_bytes() == text
    code, out, err = _audit(root, "--fix")
    assert (code, err.splitlines()[-1]) == (0, "Fixed 1 finding(s) in 1 file(s); 0 not fixed.")
    assert path.read_bytes() == text.replace(b"3.11", b"3.02")


def test_a_file_without_a_final_newline_diffs_as_patch_expects(tmp_path):
    root = tmp_path / "root"
    path = _write(root / "agentic" / "serve.yaml", SERVE.rstrip(b"\n"))
    _, out, _ = _audit(root, "--diff")
    assert out.endswith(b"-  synthetic_acceptance_length: 3.11\n\\ No newline at end of file\n"
                        b"+  synthetic_acceptance_length: 3.02\n\\ No newline at end of file\n")
    if shutil.which("patch"):
        subprocess.run(["patch", "-s", "-p1"], input=out, cwd=root, check=True)
        assert path.read_bytes() == FIXED.rstrip(b"\n")


_noise = st.lists(st.sampled_from(ODD_BYTES + [b" ", b"x", b"#", b"\t"]), max_size=6).map(b"".join)
# (file, text with {before}/{after} in comments, the line the knob follows, the line after it)
TEMPLATES = {
    "launcher": ("agentic/launch.sh", LAUNCH, b"vllm serve", b"# end"),
    "config": ("agentic/serve.yaml",
               SERVE.replace(b"(fixture).", b"(fixture).{before}") + b"# end{after}\n",
               b"  num_speculative_tokens", b"# end"),
}


@pytest.mark.parametrize("kind", sorted(TEMPLATES))
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=_noise, after=_noise, lines_before=st.lists(_noise, max_size=3),
       lines_after=st.lists(_noise, max_size=3), bom=st.booleans())
def test_audit_and_fix_agree_on_the_line_whatever_surrounds_the_knob(
        tmp_path_factory, kind, before, after, lines_before, lines_after, bom):
    """The audit's line is the line the fix edits, and no other byte changes.

    Odd bytes go into comments and whole comment lines before and after the
    knob's line.  A file the audit cannot read (YAML refuses some control
    characters) is reported as unparsed, never silently left.
    """
    from goldenal import audit
    from goldenal.auditing.fix import fix_findings
    from goldenal.golden.registry import load_registry

    name, template, start, end = TEMPLATES[kind]
    data = template.replace(b"{before}", before).replace(b"{after}", after)
    head, rest = data.split(start, 1)
    tail_at = rest.index(end)
    data = ((b"\xef\xbb\xbf" if bom else b"") + head
            + b"".join(b"#" + n + b"\n" for n in lines_before) + start + rest[:tail_at]
            + b"".join(b"#" + n + b"\n" for n in lines_after) + rest[tail_at:])
    root = tmp_path_factory.mktemp("odd")
    path = _write(root / name, data)
    registry = _registry(load_registry)

    def run(overlay=None):
        return audit([str(root)], root=str(root), registry=registry, settings=False,
                     overlay=overlay)

    findings = run()
    found = [f for f in findings if f.code == "GAL201"]
    event("unparsed" if not found else "fixed")
    if not found:
        assert kind == "config" and [f.code for f in findings] == ["GAL306"]
        assert "cannot parse" in findings[0].message
        return
    knob_line = data[:data.index(b"3.11")].count(b"\n") + 1
    assert [(f.path, f.line) for f in found] == [(name, knob_line)]
    result = fix_findings(found, str(root), run)
    assert [f.line for f in result.fixed] == [knob_line] and result.skipped == ()
    assert path.read_bytes() == data.replace(b"3.11", b"3.02")


_REGISTRY = []


def _registry(load_registry):
    if not _REGISTRY:
        _REGISTRY.append(load_registry(str(PACKAGED)))
    return _REGISTRY[0]
