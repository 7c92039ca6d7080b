"""Streaming access to measurement files: plain or gzip (by magic bytes), any bytes.

Only the lines a reader keeps are decoded, so a 1 GB log costs one pass of
``bytes.find`` and memory independent of its size.
"""

import gzip
import re
import zlib

from goldenal.core.errors import ParseError

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 22  # 4 MiB: large enough that per-chunk overhead is negligible
# The longest line a reader buffers; engine lines are under a few KiB, so a
# longer one is not a log line and is refused instead of growing a buffer.
MAX_LINE = 1 << 24
# What a corrupt or truncated gzip stream raises: zlib.error for a damaged
# deflate block, EOFError for a cut stream, OSError (BadGzipFile) for a bad header
CORRUPT = (OSError, EOFError, zlib.error)


def _too_long(path, line):
    return ParseError(f"line longer than {MAX_LINE >> 20} MiB: not a log line (binary data, or "
                      "a compressed stream without newlines?)", path=path, line=line)

# ECMA-48 CSI sequences (colour codes such as "\x1b[1;36m") and lone OSC/ESC pairs
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def open_binary(path):
    """Open ``path`` for binary reading, transparently gunzipping it (ParseError if not)."""
    from goldenal.core.files import open_regular

    try:
        raw = open_regular(path)
    except OSError as exc:
        raise ParseError(f"cannot read: {exc.strerror or exc}", path=path) from None
    head = raw.read(2)
    raw.seek(0)
    if head == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw, mode="rb")
    return raw


def read_head(path, size=1 << 18):
    """The first ``size`` decompressed bytes of ``path`` (for sniffing)."""
    with open_binary(path) as fh:
        try:
            return fh.read(size)
        except CORRUPT as exc:  # corrupt or truncated gzip
            raise ParseError(f"unreadable compressed data: {exc}", path=path) from None


def read_text(path, limit=1 << 28):
    """The whole decoded text of a (small) document such as a JSON result; ``limit``
    refuses a log given where a document was expected."""
    data = read_head(path, limit + 1)
    if len(data) > limit:
        raise ParseError(f"document larger than {limit >> 20} MiB; expected a result file",
                         path=path)
    return decode(data)


def decode(data: bytes) -> str:
    """Lenient text: UTF-8 with replacement characters, no CR, no ANSI colour codes."""
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r", "")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text


def iter_lines(path):
    """Yield ``(line_number, text, terminated)`` for every line of ``path`` (``terminated``
    False for a cut last line); :func:`scan` for large logs."""
    with open_binary(path) as fh:
        number = 0
        try:
            while True:
                raw = fh.readline(MAX_LINE + 1)
                if not raw:
                    break
                number += 1
                if len(raw) > MAX_LINE:
                    raise _too_long(path, number)
                terminated = raw.endswith(b"\n")
                yield number, decode(raw.rstrip(b"\r\n")), terminated
        except CORRUPT as exc:
            raise ParseError(f"unreadable compressed data after line {number}: {exc}",
                             path=path, line=number or None) from None


def blocks(path, where=None):
    """Yield ``(buf, cut, before)`` over ``path`` in whole-line blocks: ``buf[:cut]``
    complete lines, ``before`` the previous block's last line; ``where()`` names the
    caller's line in errors.  ``buf`` is one reused ``bytearray`` (a fresh 4 MiB
    object per read costs more in page faults than searching it): consume a block
    before asking for the next."""
    with open_binary(path) as fh:
        buf = bytearray(CHUNK)
        have = 0          # bytes of buf filled (the carry comes first)
        before = b""
        eof = False
        while not eof:
            if have == len(buf):  # one line longer than the buffer: grow (a new object,
                if have >= MAX_LINE:  # so views a caller still holds stay valid), up to a limit
                    raise _too_long(path, where() if where is not None else None)
                grown = bytearray(2 * len(buf))
                grown[:have] = buf
                buf = grown
            try:
                n = fh.readinto(memoryview(buf)[have:])
            except CORRUPT as exc:
                line = where() if where is not None else None
                raise ParseError(f"unreadable compressed data after line {line}: {exc}"
                                 if line else f"unreadable compressed data: {exc}",
                                 path=path, line=line) from None
            if n:
                have += n
                if have < len(buf):
                    continue  # short read (gzip): fill the buffer first
                cut = buf.rfind(b"\n", 0, have) + 1
                if cut == 0:
                    continue
            else:
                eof = True
                cut = have
                if not cut:
                    return
            yield buf, cut, before
            last = buf.rfind(b"\n", 0, cut - 1) + 1
            before = bytes(buf[last:cut])
            rest = have - cut
            buf[:rest] = buf[cut:have]
            have = rest


def marked_line_starts(buf, cut, markers):
    """Sorted start offsets of the lines of ``buf[:cut]`` holding any of ``markers``."""
    starts = set()
    for marker in markers:
        pos = buf.find(marker, 0, cut)
        while pos >= 0:
            starts.add(buf.rfind(b"\n", 0, pos) + 1)
            pos = buf.find(b"\n", pos, cut)  # one hit per line is enough
            if pos < 0:
                break
            pos = buf.find(marker, pos, cut)
    return sorted(starts)


def scan(path, markers, previous=False):
    """Yield ``(line_number, text, terminated)`` (with ``previous``, also the raw line before)
    for the lines holding any of the byte ``markers``; the other lines are never decoded."""
    line = 1
    for buf, cut, before in blocks(path, lambda: line):
        prev = 0
        for start in marked_line_starts(buf, cut, markers):
            line += buf.count(b"\n", prev, start)
            prev = start
            end = buf.find(b"\n", start, cut)
            terminated = end >= 0
            text = decode(bytes(buf[start:end if terminated else cut]).rstrip(b"\r"))
            if previous:
                yield (line, text, terminated,
                       bytes(buf[buf.rfind(b"\n", 0, start - 1) + 1:start]) if start
                       else before)
            else:
                yield line, text, terminated
        line += buf.count(b"\n", prev, cut)
