"""Raw RFC 822 bytes split into header fields and a decoded text body.

This is a small reader of its own instead of `email.message_from_bytes`, for two measured reasons:
the feedparser costs about 70 us on a 4 KB patch mail, which is the whole budget ingest has for
parsing, and it walks every line of every MIME part, so a message with a 50 MB attachment takes
seconds. Here the header block is scanned once, by one regex that picks out only the fields a
caller reads (a dozen of some 40 lines in list mail) and checks that every line is a header; the
usual block (ASCII, LF line ends) is read straight from the bytes, in the same pass that finds
the blank line ending it, and only a block of any other kind is first decoded to text;
multipart bodies are cut at their boundaries with `bytes.find`, and only text parts are ever
decoded (capped at `TEXT_CAP` bytes); at most `MAX_PARTS` parts are walked, each once, so the
work per mail is bounded whatever its shape.

It reads what list mail really contains and is lenient about everything else: folded and
duplicated headers, CRLF or LF, an mbox `From ` line, stray non-header lines in the header block,
a missing blank line after the headers, multipart bodies without a closing boundary, nested
multiparts, quoted-printable and base64 (also broken base64), any charset Python knows,
invalid bytes (replaced), and text labelled as bytes: a relay's placeholder for a mail that had
no Content-Type (Mimecast's `application/octet-stream; x-default=true`, on a `git send-email`
patch in ASCII) and a patch file attached as `application/octet-stream` (`*.patch`, `*.diff`)
are read as text. Each oddity is appended to `problems`, never raised.
"""

from __future__ import annotations

import binascii
import functools
import re
from urllib.parse import unquote

from bot.mail.headers import decode_bytes, lookup_charset

TEXT_CAP = 1 << 20  # decoded text kept per message: a patch mail is rarely above 100 KB
# Bytes `_plain_fields` reads at most: a list mail's header block is about 4 KB; a longer one is
# read as any other block (the window also bounds the copy of what follows the block)
PLAIN_HEAD_BYTES = 32 * 1024
_MAX_DEPTH = 8  # nested multiparts followed; deeper ones are a mail bomb, not a message
# MIME parts walked per mail (the message counts as one): list mail has a handful, a patch
# series in attachments a few dozen; a bomb of 100k parts cost 176 s of CPU before this bound.
MAX_PARTS = 1000
_TEXT_TYPES = frozenset({"text/plain", "text/x-patch", "text/x-diff", "text/diff", "text/patch"})
# Codecs in which ASCII bytes are not simply ASCII text (stateful or wide encodings)
_NOT_ASCII_BASED = ("utf-16", "utf-32", "utf-7", "iso2022", "hz")
_DIFF_IN_TEXT = re.compile(r"^(?:diff --git |--- .*\n\+\+\+ |Index: )", re.M)

Headers = dict[str, list[str]]  # lower-cased field name -> unfolded values, in message order
# The fields of a MIME part (the message itself included) that `extract_text` reads
PART_FIELDS = frozenset({"content-type", "content-transfer-encoding", "content-disposition"})


def first(headers: Headers, name: str) -> str | None:
    """The first value of a header field, or None."""
    values = headers.get(name)
    return values[0] if values else None


def read_head(
    data: bytes,
    start: int,
    end: int,
    problems: list[str],
    fields: frozenset[str],
    where: str = "headers",
) -> tuple[Headers, int]:
    """Parse the header block at data[start:end]; return those of `fields` (lower-case names) it
    has, and where the body begins. Only the fields a caller reads are collected: list mail has
    some 40 header lines (Received, DKIM and ARC chains), of which parsing reads a dozen."""
    plain = _plain_fields(data, start, end, fields)
    if plain is not None:
        return plain
    block_end, body_start = _find_blank_line(data, start, end)
    raw_block = data[start:block_end]
    codec = "utf-8"
    try:
        block = raw_block.decode("utf-8")
    except UnicodeDecodeError:
        codec = "latin-1"
        block = raw_block.decode("latin-1")
        problems.append(f"{where}: bytes that are not UTF-8; read as Latin-1")
    if block.startswith("From "):  # an mbox separator line
        separator, newline, block = block.partition("\n")
        start += len((separator + newline).encode(codec))
    headers = _clean_fields(block, fields)
    if headers is not None:
        return headers, body_start
    headers, body_start = _careful_fields(data, start, block, codec, body_start, problems, where)
    return {name: values for name, values in headers.items() if name in fields}, body_start


def _plain_fields(
    data: bytes, start: int, end: int, fields: frozenset[str]
) -> tuple[Headers, int] | None:
    """What read_head returns for the usual header block, read from the bytes themselves: ASCII,
    LF line ends, no From_ line, every line a field, ended within `PLAIN_HEAD_BYTES`. None for
    any other block, which read_head then decodes and reads line by line as before. One regex
    pass over the bytes finds both the fields and the blank line that ends the block, which was
    otherwise one scan to find the end, a decoded copy of the block, and a second scan over the
    copy (read_head a fifth cheaper on list mail)."""
    if end <= start:  # read_head looks past `end` for a blank line at `start`
        return None
    stop = min(end, start + PLAIN_HEAD_BYTES)  # never the whole of a 50 MB body
    if start == 0:
        buf, pos, shift = b"\n" + data[:stop], 0, 1  # every line starts after a "\n"
    elif data[start - 1] == 0x0A:
        buf, pos, shift = data, start - 1, 0
    else:
        return None
    if data.startswith((b"From ", b" ", b"\t"), start):
        return None
    headers: Headers = {}
    block_end = body_start = end
    for name, value, blank, rest in _raw_field_pattern(fields).findall(buf, pos, stop + shift):
        if blank:  # the blank line, and what follows it up to `stop`
            body_start = stop - len(rest)
            block_end = body_start - 1
            break
        if not name:
            return None
        _add_field(headers, name.decode("latin-1").lower(), value.decode("latin-1"))
    else:
        if stop < end:  # no blank line yet, and the block may go on
            return None
    if data.find(b"\r", start, block_end) >= 0 or not data[start:block_end].isascii():
        return None
    return headers, body_start


@functools.cache
def _raw_field_pattern(fields: frozenset[str]) -> re.Pattern[bytes]:
    """`_field_pattern` for `_plain_fields`: over bytes, and with an alternative that ends the
    block at its blank line (groups: the second newline and the rest of the input). An empty
    line can only end a block with no CR in it, so a continuation after one need not be told."""
    names = _any_case(fields, kelvin=False)
    return re.compile(
        rf"\n(?:({names}):([^\n]*+(?:\n[ \t][^\n]*+)*+)|[^:\n \t]++(?!:)|:|(\n)((?s:.*)))"
        .encode("ascii")
    )


@functools.cache
def _field_pattern(fields: frozenset[str]) -> re.Pattern[str]:
    """Matches a line of a header block holding one of `fields` (groups: name and folded value),
    or a line that makes the block not well-formed (empty groups): one that is not a field
    (`name:`, no blank in the name), a continuation (leading blank) or empty; or a
    continuation after an empty line, which would unfold into a line starting with a blank."""
    names = _any_case(fields)
    return re.compile(rf"\n(?:({names}):([^\n]*+(?:\n[ \t][^\n]*+)*+)|[^:\n \t]++(?!:)|:|\n[ \t])")


def _any_case(names: frozenset[str], *, kelvin: bool = True) -> str:
    """An alternation of `names` matching every field name that str.lower() turns into one: ASCII
    letters in either case, and the Kelvin sign for "k". Not with re.IGNORECASE: most lines of a
    block hold none of `names`, so the alternation is built for failing fast. A lookahead on
    one class of all initials drops most lines with one bitmap test; then each branch starts
    with a literal initial, one case each (`c(?:[oO]...)|C(?:[oO]...)`), which sre skips on
    its first character without entering it. Together a third faster than one `[cC]` branch
    per initial. `kelvin=False` leaves the Kelvin sign out (a pattern over ASCII bytes)."""

    def variants(char: str) -> str:
        """The characters that str.lower() turns into `char`."""
        if char == "k" and kelvin:
            return "kK\u212a"
        return char + char.upper() if char.isalpha() else char

    def letter(char: str) -> str:
        return f"[{variants(char)}]" if char.isalpha() else re.escape(char)

    by_initial: dict[str, list[str]] = {}
    for name in sorted(names):
        by_initial.setdefault(name[0], []).append("".join(map(letter, name[1:])))
    branches = []
    for head, rest in by_initial.items():
        tail = f"(?:{'|'.join(rest)})"
        if head.isascii() and head.isalpha() and head != "k":
            branches += [head + tail, head.upper() + tail]
        else:
            branches.append(letter(head) + tail)
    initials = "".join(re.escape(char) for head in by_initial for char in variants(head))
    return f"(?=[{initials}])(?:{'|'.join(branches)})"


def _clean_fields(block: str, fields: frozenset[str]) -> Headers | None:
    """`fields` of a well-formed header block; None if any line is not a header, which the
    careful walk then handles. One regex scan of the folded block finds both: a Python loop
    over its lines cost a quarter of `parse_message`."""
    if "\r" in block:
        block = block.replace("\r\n", "\n")
    if block[:1] in (" ", "\t"):
        return None
    headers: Headers = {}
    # "\n" first: every line now starts after one
    for name, value in _field_pattern(fields).findall("\n" + block):
        if not name:
            return None
        _add_field(headers, name.lower(), value)
    return headers


def _add_field(headers: Headers, name: str, value: str) -> None:
    """Add one field's value, unfolded and stripped, to those of its (lower-case) name."""
    if "\n" in value:  # folded
        value = value.replace("\n ", " ").replace("\n\t", "\t")
    values = headers.get(name)
    if values is None:
        headers[name] = [value.strip()]
    else:
        values.append(value.strip())


def _careful_fields(
    data: bytes,
    start: int,
    block: str,
    codec: str,
    body_start: int,
    problems: list[str],
    where: str,
) -> tuple[Headers, int]:
    """The header block walked line by line, skipping garbage and finding a missing separator."""
    lines = block.split("\n")
    headers: Headers = {}
    name: str | None = None
    pieces: list[str] = []
    for index, line in enumerate(lines):
        if line.endswith("\r"):
            line = line[:-1]
        if line[:1] in (" ", "\t"):
            if name is not None:
                pieces.append(line)
            elif line.strip():
                problems.append(f"{where}: continuation line without a field skipped")
            continue
        field, colon, value = line.partition(":")
        field = field.rstrip()
        if colon and field and " " not in field and "\t" not in field and field.isprintable():
            if name is not None:
                headers.setdefault(name, []).append("".join(pieces).strip())
            name = field.lower()
            pieces = [value]
            continue
        if not line.strip():
            continue
        # Not a header line. If a header follows, it is garbage inside the block; otherwise
        # the sender forgot the blank line and the body starts here.
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if _looks_like_header(following):
            problems.append(f"{where}: non-header line skipped: {line[:60]!r}")
            continue
        problems.append(f"{where}: no blank line between headers and body")
        prefix = "\n".join(lines[:index]) + "\n"
        body_start = start + len(prefix.encode(codec))
        break
    if name is not None:
        headers.setdefault(name, []).append("".join(pieces).strip())
    return headers, body_start


def _looks_like_header(line: str) -> bool:
    if line[:1] in (" ", "\t"):
        return True
    field, colon, _ = line.partition(":")
    return bool(colon and field and " " not in field.rstrip())


def _find_blank_line(data: bytes, start: int, end: int) -> tuple[int, int]:
    """(end of the header block, start of the body) for data[start:end]."""
    if data.startswith(b"\n", start):
        return start, start + 1
    if data.startswith(b"\r\n", start):
        return start, start + 2
    lf = data.find(b"\n\n", start, end)
    stop = lf if lf >= 0 else end
    # only CRLF mail has a "\n\r\n"; a "\r" is found with memchr, a three-byte string is not
    crlf = data.find(b"\n\r\n", start, stop) if data.find(b"\r", start, stop) >= 0 else -1
    if crlf >= 0:
        return crlf + 1, crlf + 3
    if lf >= 0:
        return lf + 1, lf + 2
    return end, end


_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"?|[^;]*)')


def parse_content_type(value: str | None) -> tuple[str, dict[str, str]]:
    """(media type in lower case, parameters) of a Content-Type value; ("", {}) when absent."""
    if not value:
        return "", {}
    main, _, rest = value.partition(";")
    media = "".join(main.split()).lower()
    params: dict[str, str] = {}
    for match in _PARAM.finditer(";" + rest):
        key, val = match[1].lower(), match[2].strip()
        if val.startswith('"'):
            val = val[1:-1] if len(val) > 1 and val.endswith('"') else val[1:]
            if "\\" in val:
                val = re.sub(r"\\(.)", r"\1", val)
        if key.endswith("*"):  # RFC 2231: charset*=utf-8''... or boundary*0=...
            key = key.rstrip("*0123456789")
            val = unquote(val.split("'", 2)[-1], errors="replace")
        params.setdefault(key, val)
    return media, params


def extract_text(headers: Headers, data: bytes, body_start: int, problems: list[str]) -> str:
    """The message's text: its first inline text/plain part, plus any text part carrying a diff.

    Attachments of other types are skipped without being decoded. At most `MAX_PARTS` MIME
    parts are walked; a mail with more is kept with a note that the rest were not read.
    """
    content_type = first(headers, "content-type")
    if content_type is None or content_type[:10].lower() == "text/plain":  # nearly all list mail
        charset = _charset(content_type)
        encoding = first(headers, "content-transfer-encoding")
        return _decode_text(data, body_start, len(data), encoding, charset, problems)
    walk = _Walk(data, problems)
    walk.collect(headers, body_start, len(data), 0)
    if walk.more_parts:
        problems.append(f"MIME parts truncated: only the first {MAX_PARTS} were read")
    texts = walk.texts
    if not texts:
        if walk.skipped:
            problems.append(f"no text/plain part (found {', '.join(sorted(walk.skipped))})")
        return ""
    main_index = next((i for i, (inline, _) in enumerate(texts) if inline), 0)
    pieces = [texts[main_index][1]]
    for index, (_, text) in enumerate(texts):
        if index != main_index and _DIFF_IN_TEXT.search(text):
            pieces.append(text)  # an attached patch joins the text
    # joined once: adding each to the body in turn copied it again per part
    body = "\n\n".join([p.rstrip(chr(10)) for p in pieces[:-1]] + pieces[-1:])
    if len(body) > TEXT_CAP:
        body = body[:TEXT_CAP]
    return body


# `text/plain; charset=X`, the Content-Type of nearly all list mail: its charset without a full
# parse (the same as parse_content_type's for this shape, which it takes no other)
_PLAIN_CHARSET = re.compile(r'text/plain;[ \t]*charset=("?)([\w.:-]+)\1[ \t]*', re.I | re.A)


def _charset(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type value, if any."""
    if not content_type:
        return None
    simple = _PLAIN_CHARSET.fullmatch(content_type)
    if simple:
        return simple[2]
    return parse_content_type(content_type)[1].get("charset")


class _Walk:
    """One walk over a message's MIME tree: the text parts found, the media types skipped, and
    the work done so far, which `MAX_PARTS` and `TEXT_CAP` bound (each part is visited once,
    and nothing is summed again per part: 100k parts once cost 176 s)."""

    def __init__(self, data: bytes, problems: list[str]) -> None:
        self.data = data
        self.problems = problems
        self.texts: list[tuple[bool, str]] = []  # (inline, decoded text)
        self.skipped: set[str] = set()
        self.parts = 0  # parts visited, the message itself included
        self.text_size = 0
        self.more_parts = False  # parts beyond MAX_PARTS were left unread
        self.text_full = False

    def collect(self, headers: Headers, start: int, end: int, depth: int) -> None:
        self.parts += 1
        media, params = parse_content_type(first(headers, "content-type"))
        if media.startswith("multipart/"):
            boundary = params.get("boundary")
            if not boundary:
                self.problems.append(f"{media} without a boundary; read as text")
            elif depth >= _MAX_DEPTH:
                self.problems.append(f"MIME parts nested deeper than {_MAX_DEPTH}; skipped")
                return
            else:
                parts, more = _split_multipart(
                    self.data, start, end, boundary, self.problems, MAX_PARTS - self.parts
                )
                self.more_parts |= more
                for part_start, part_end in parts:
                    if self.parts >= MAX_PARTS:
                        self.more_parts = True
                        return
                    part_headers, part_body = read_head(
                        self.data, part_start, part_end, self.problems, PART_FIELDS,
                        where="MIME part headers",
                    )
                    self.collect(part_headers, part_body, part_end, depth + 1)
                return
        elif media and media not in _TEXT_TYPES and "/" in media:
            why = _text_after_all(media, params, headers)
            if why is None:
                self.skipped.add(media)
                return
            self.problems.append(f"{media} part read as text: {why}")
        if self.text_size >= TEXT_CAP:
            if not self.text_full:
                self.problems.append("further text parts skipped: text limit reached")
                self.text_full = True
            return
        disposition = (first(headers, "content-disposition") or "").lower()
        inline = (media in ("", "text/plain") or _PLACEHOLDER in params.items()
                  ) and not disposition.startswith("attachment")
        text = _decode_text(
            self.data, start, end, first(headers, "content-transfer-encoding"),
            params.get("charset"), self.problems,
        )
        self.texts.append((inline, text))
        self.text_size += len(text)


# What a relay writes where a mail had no Content-Type (Mimecast's `application/octet-stream;
# x-default=true`): RFC 2045's default for such a mail is text/plain, which `git send-email`
# relies on for a patch in ASCII.
_PLACEHOLDER = ("x-default", "true")
_PATCH_FILE = re.compile(r"\.(?:patch|diff)$", re.I)


def _text_after_all(media: str, params: dict[str, str], headers: Headers) -> str | None:
    """Why a part of a binary type is text (a relay's placeholder for a missing type, or a
    patch file a mail client attached as bytes), or None."""
    if media != "application/octet-stream":
        return None
    if _PLACEHOLDER in params.items():
        return "a relay's placeholder for a missing Content-Type (x-default=true)"
    disposition = parse_content_type(first(headers, "content-disposition"))[1]
    name = disposition.get("filename") or params.get("name") or ""
    if _PATCH_FILE.search(name.strip()):
        return f"a patch file ({name.strip()[:100]})"
    return None


def _split_multipart(
    data: bytes, start: int, end: int, boundary: str, problems: list[str], limit: int
) -> tuple[list[tuple[int, int]], bool]:
    """(start, end) of each part between `--boundary` lines in data[start:end], at most `limit`
    of them; and whether the body has more parts than that (not looked for further)."""
    delimiter = b"--" + boundary.encode("latin-1", errors="replace")
    parts: list[tuple[int, int]] = []
    part_start: int | None = None
    pos = start
    closed = False
    while True:
        at = data.find(delimiter, pos, end)
        if at < 0:
            break
        after = at + len(delimiter)
        if at > start and data[at - 1] != 0x0A:  # not at the start of a line
            pos = after
            continue
        eol = data.find(b"\n", after, end)
        line_end = end if eol < 0 else eol
        is_close = data.startswith(b"--", after)
        if not is_close and data[after:line_end].strip():
            pos = after  # a longer token that merely begins with our boundary
            continue
        if part_start is not None:
            part_end = at - 1 if at > part_start else part_start
            if part_end > part_start and data[part_end - 1] == 0x0D:
                part_end -= 1
            parts.append((part_start, part_end))
        if is_close:
            closed = True
            break
        if len(parts) >= limit:
            return parts, True
        part_start = min(line_end + 1, end)
        pos = part_start
    if not closed:
        if part_start is not None:
            parts.append((part_start, end))
            problems.append("multipart body truncated: closing boundary missing")
        else:
            problems.append("multipart body without any boundary line")
    return parts, False


def _decode_text(
    data: bytes,
    start: int,
    end: int,
    encoding: str | None,
    charset: str | None,
    problems: list[str],
) -> str:
    cte = (encoding or "").strip().lower()
    encoded = cte in ("quoted-printable", "base64")
    limit = TEXT_CAP * 3 if encoded else TEXT_CAP  # QP may triple the size, base64 adds 1/3
    truncated = end - start > limit
    if truncated:  # cut at a line end, so that no encoded line is cut in two
        cut = data.rfind(b"\n", start, start + limit)
        payload = data[start : cut + 1 if cut > start else start + limit]
    else:
        payload = data[start:end]
    if cte == "quoted-printable":
        payload = binascii.a2b_qp(payload)
    elif cte == "base64":
        payload = _decode_base64(payload, problems)
    elif cte not in ("", "7bit", "8bit", "binary"):
        problems.append(f"unknown Content-Transfer-Encoding {cte!r}; body kept as is")
    if truncated or len(payload) > TEXT_CAP:
        cut = payload.rfind(b"\n", 0, TEXT_CAP)
        payload = payload[: cut + 1 if cut > 0 else TEXT_CAP]
        problems.append(
            f"text body truncated to {len(payload)} bytes (of more than {TEXT_CAP} bytes)"
        )
    text = _decode_charset(payload, charset, problems)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text


_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/]")


def _decode_base64(payload: bytes, problems: list[str]) -> bytes:
    try:
        return binascii.a2b_base64(payload)
    except binascii.Error:
        pass
    cleaned = _NOT_BASE64.sub(b"", payload.split(b"=", 1)[0])
    cleaned = cleaned[: len(cleaned) - len(cleaned) % 4]
    problems.append("broken base64 body; decoded what could be read")
    try:
        return binascii.a2b_base64(cleaned)
    except binascii.Error:
        return b""


def _decode_charset(payload: bytes, charset: str | None, problems: list[str]) -> str:
    codec = lookup_charset(charset)
    if charset and codec is None:
        problems.append(f"unknown charset {charset!r}; read as UTF-8")
    if codec in (None, "ascii", "utf-8"):
        try:  # one pass for ASCII and UTF-8 alike, where testing for ASCII first made two
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            pass
    elif payload.isascii() and not codec.startswith(_NOT_ASCII_BASED):
        return payload.decode("ascii")
    if codec is None or codec == "ascii":
        codec = "utf-8"  # undeclared or mislabelled 8-bit text is nearly always UTF-8
    text, replaced = decode_bytes(payload, codec)
    if replaced:
        problems.append(f"invalid {codec} bytes in the body replaced")
    return text
