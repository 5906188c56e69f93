"""What a text hides from a reader: invisible characters, Unicode tag characters, look-alike letters, comments and
styled-away markup, and payloads written in an encoding. The screen reads every text through these views, so a
poisoned instruction that is hidden or encoded is read as plainly as one written out; the reveal view shows
them to a person.

Each view is a plain function of the text. ``views`` returns the texts to screen (the text itself, normalised,
and whatever was uncovered in it) and ``hidden`` the findings about the hiding itself.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
import urllib.parse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060-\u2064\ufeff\u00ad\u180e\u034f\u115f\u1160\u3164]")
BIDI_OVERRIDE = re.compile("[\u202a-\u202e\u2066-\u2069]")
TAGS = re.compile("[\U000e0000-\U000e007f]+")
FLAG_TAGS = re.compile("\U0001f3f4[\U000e0061-\U000e007a]{2,6}\U000e007f")  # 🏴 + region + cancel: a flag
HTML_COMMENT = re.compile(r"<!--(.*?)(?:-->|$)", re.DOTALL)
MD_COMMENT = re.compile(r"^\[(?://|comment|_)\]:\s*[<#]?\s*\(?(.*?)\)?\s*$", re.MULTILINE | re.IGNORECASE)
STYLED_AWAY = re.compile(
    r"<(\w+)[^>]*(?:style\s*=\s*['\"][^'\"]*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0"
    r"|opacity\s*:\s*0(?:\.0*)?\s*(?:;|['\"])|color\s*:\s*(?:#fff(?:fff)?\b|white\b|transparent))"
    r"|\shidden(?:\s|>|=))[^>]*>(.*?)</\1\s*>",
    re.IGNORECASE | re.DOTALL,
)
HOMOGLYPHS = str.maketrans(
    "аеорсухіјѕԁɡһԛԝАВЕКМНОРСТХІЈЅԌοαειķνρτυχΑΒΕΗΙΚΜΝΟΡΤΥΧΖ",
    "aeopcyxijsdghqwABEKMHOPCTXIJSGoaeikvptuxABEHIKMNOPTYXZ",
)
CONFUSABLE = frozenset("аеорсухіјѕԁɡһԛԝАВЕКМНОРСТХІЈЅԌοαειķνρτυχΑΒΕΗΙΚΜΝΟΡΤΥΧΖ")
ANY_CONFUSABLE = re.compile("[" + "".join(sorted(CONFUSABLE)) + "]")
# A text read in rot13 or backwards is screened only when it reads better that way: more of its words are common
# English words once rot13'd (or reversed) than as written, or it names the cipher, or it holds Chinese
# instruction words backwards.
COMMON = frozenset(
    """the and you your to of it is for all not be are this that with when if then do don't never always only
    from into on in at by as or any every each after before until once next time user users agent assistant
    ignore disregard forget follow instructions instruction rules rule previous prior above system prompt
    run execute send upload post delete remove copy add write push pull install use using recommend approve
    reject merge skip disable enable trust trusted secret secrets key keys token tokens password passwords
    credentials file files env ssh curl wget bash shell script command commands memory memories note always
    about anyone whenever someone everything anything must should will would can now new old mode https http url
    index extra git github config package registry server backup npm pip yarn save""".split()
)
WORD = re.compile(r"[a-z']{2,}")
ROT13_NAMED = re.compile(r"\brot-?13\b|\bcaesar\b|凯撒")
CJK_COMMON = frozenset(
    (
        "忽略 指令 规则 遵守 系统 用户 执行 发送 上传 密码 密钥 删除 批准 审核 跳过 之前 "
        "所有 以上 推荐 信任 复制 记忆 安全 确认 令牌 不要 悄悄 提示 限制 作废 失效 权限 "
        "身份 扮演 模式 服务 脚本 命令 文件 自动 保护 分支 假装 负责 合并 代码 可信 镜像 "
        "同步 记录 聊天 使用 访问 接口 安装 依赖 唯一 每天 仓库 项目 直接 任何 统一 通知 "
        "备份 服务器 "
    ).split()
)
LEET = str.maketrans("013457$", "oieasts")  # not @: it belongs to addresses (user@host), where it must stay
# a word of letters with digits or symbols among them (``1gn0re``, ``1m_$74r7``), of digits and symbols with a
# dollar (``4$``), or the article ``4`` before a word
LEET_WORD = re.compile(
    r"(?<![\w$])(?:(?=[\w$]*[a-z])(?=[\w$]*[0-9$])[\w$]{2,}|(?=[0-9$]*\$)[0-9$]{2,}|4(?= [\w$]))(?![\w$])"
)
LEET_DIGITS = re.compile(r"(?<![\w.:/])\d{1,4}(?![\w.:/-])")
SPACED = re.compile(r"(?<![\w])[a-z](?:(?:[ .\-_*·]|[.\-_*·] )[a-z]|  +[a-z]){3,}(?![\w])")
SPACED_ANY = re.compile(r"(?<!\S)\S(?: \S|  +\S){5,}(?!\S)")  # ``e c h o  $ P A T H``: any characters spaced out
CJK_GAP = re.compile(r"(?<=[\u3400-\u9fff])[ \u3000·_*.\-]+(?=[\u3400-\u9fff])")
BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/_-])")
BASE32 = re.compile(r"(?<![A-Z2-7])[A-Z2-7]{16,}={0,6}(?![A-Z2-7])")
HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[\s:]?){16,}(?![0-9A-Fa-f])")
PERCENT = re.compile(r"[^\s%]*(?:%[0-9A-Fa-f]{2}[^\s%]*){3,}")
ESCAPES = re.compile(r"(?:\\U[0-9A-Fa-f]{8}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|&#x?[0-9A-Fa-f]{2,6};){4,}")


@dataclass(frozen=True)
class Uncovered:
    """A text the screen reads besides the one written: ``how`` it was uncovered (``base64``, ``tag characters``,
    ``html comment``...), and whether the uncovering is itself a sign (hiding text has no innocent reason)."""

    how: str
    text: str
    suspicious: bool


def normalised(text: str) -> str:
    """The text as a reader sees it: compatibility forms folded (fullwidth and mathematical letters to plain
    ones), invisible characters removed, look-alike letters inside Latin words made Latin, lowercased."""
    text = INVISIBLE.sub("", BIDI_OVERRIDE.sub("", unicodedata.normalize("NFKC", text)))
    if ANY_CONFUSABLE.search(text):
        text = re.sub(r"\w+", _latin_if_mixed, text)
    return text.lower()


def _latin_if_mixed(match: re.Match[str]) -> str:
    word = match.group()
    if any("a" <= ch.lower() <= "z" for ch in word) and any(ch in CONFUSABLE for ch in word):
        return word.translate(HOMOGLYPHS)
    return word


def unhidden(text: str) -> str:
    """``text`` with compatibility forms folded, invisible characters removed and spaced-out characters joined,
    case kept: the view the secret detector reads (token formats are case-sensitive)."""
    text = INVISIBLE.sub("", BIDI_OVERRIDE.sub("", unicodedata.normalize("NFKC", text)))
    return SPACED_ANY.sub(_joined, text)


def _joined(match: re.Match[str]) -> str:
    return " ".join(word.replace(" ", "") for word in re.split(r"  +", match.group()))


def deobfuscated(text: str) -> str:
    """``text`` (normalised) with the tricks a reader sees through undone: leetspeak in words (``1gn0re``), letters
    spaced out (``i g n o r e``), characters put between CJK characters."""
    leet = LEET_WORD.findall(text)
    text = LEET_WORD.sub(lambda m: m.group().translate(LEET), text)
    if len(leet) >= 3:  # a text written in leetspeak: its short numbers are words too ("70" for "to")
        text = LEET_DIGITS.sub(lambda m: m.group().translate(LEET), text)
    text = SPACED.sub(_unspaced, SPACED_ANY.sub(_joined, text))
    return CJK_GAP.sub("", text)


def _unspaced(match: re.Match[str]) -> str:
    """``i g n o r e  a l l`` -> ``ignore all``: two spaces or more part words, one joins letters."""
    return " ".join(re.sub(r"[ .\-_*·]", "", word) for word in re.split(r"  +", match.group()))


def mixed_words(text: str) -> list[str]:
    """Words of Latin letters with look-alike letters of another script among them."""
    if not ANY_CONFUSABLE.search(text):
        return []
    return [
        w
        for w in re.findall(r"\w{3,}", text)
        if any(ch in CONFUSABLE for ch in w) and any("a" <= ch.lower() <= "z" for ch in w)
    ]


def invisible_in_words(text: str) -> list[str]:
    """Invisible characters inside words (not the joiners inside emoji sequences), named as ``U+200B``."""
    found = []
    for m in INVISIBLE.finditer(text):
        before = text[m.start() - 1] if m.start() else ""
        after = text[m.end()] if m.end() < len(text) else ""
        if before.isalnum() or after.isalnum() or m.group() != "\u200d":
            if m.group() == "\u200d" and not (before.isalnum() and after.isalnum()):
                continue  # a zero-width joiner between emoji or marks
            found.append(f"U+{ord(m.group()):04X}")
    return found


TURNS = frozenset({"rot13", "reversed"})


def uncovered(text: str, *, turns: frozenset[str] = TURNS) -> Iterator[Uncovered]:
    """Every hidden or encoded text inside ``text``, decoded once (the caller screens each again, and may
    uncover what they hide in turn). ``turns``: the ways lines may also be read (rot13, backwards), without the
    ones that made ``text`` (turned back, it would be what was already read)."""
    without_flags = FLAG_TAGS.sub("", text)
    for m in TAGS.finditer(without_flags):
        hidden = "".join(chr(ord(ch) - 0xE0000) for ch in m.group() if 0xE0020 <= ord(ch) <= 0xE007E)
        yield Uncovered("tag characters", hidden, True)
    for m in HTML_COMMENT.finditer(text):
        if m.group(1).strip():
            yield Uncovered("html comment", m.group(1), False)
    for m in MD_COMMENT.finditer(text):
        if m.group(1).strip():
            yield Uncovered("markdown comment", m.group(1), False)
    for m in STYLED_AWAY.finditer(text):
        if m.group(2).strip():
            yield Uncovered("text styled invisible", m.group(2), True)
    yield from _decoded(text)
    if turns:
        yield from _turned(text, turns)
    if "reversed" in turns and BACKWARD_ESCAPES.search(text):
        for inner in _decoded(text[::-1]):  # escapes written backwards (base64 and hex tokens are tried both ways)
            yield Uncovered(f"reversed, then {inner.how}", inner.text, inner.suspicious)


def _decoded(text: str) -> Iterator[Uncovered]:
    for m in BASE64.finditer(text):
        token = m.group()
        if token.isalpha() or token.isdigit() or re.fullmatch(r"[0-9a-fA-F]+", token):
            continue  # a word, a number or a hash: nothing encoded
        readable = _base64(token) or _base64(token[::-1])
        if readable:
            yield Uncovered("base64", readable, False)
    for m in BASE32.finditer(text):
        readable = _base32(m.group()) or _base32(m.group()[::-1])
        if readable:
            yield Uncovered("base32", readable, False)
    for m in HEX.finditer(text):
        digits = re.sub(r"[\s:]", "", m.group())
        readable = _hex(digits) or _hex(digits[::-1])
        if readable:
            yield Uncovered("hex", readable, False)
    for m in PERCENT.finditer(text):
        yield Uncovered("url-encoded", urllib.parse.unquote(m.group()), False)
    for m in ESCAPES.finditer(text):
        yield Uncovered("escaped", _unescaped(m.group()), False)


def _turned(text: str, turns: frozenset[str]) -> Iterator[Uncovered]:
    """Lines that read better in rot13 or backwards, read that way. A line, not the whole text: a payload is
    usually one line among ordinary ones."""
    named = bool(ROT13_NAMED.search(text.lower()))
    for line in text.splitlines():
        words = WORD.findall(line.lower().translate(LEET))  # read through leetspeak too
        plain = _common(words)
        rot13 = named or _common(w.translate(ROT13) for w in words) > max(1, plain)
        if "rot13" in turns and rot13:
            yield Uncovered("rot13", line.translate(ROT13), False)
        forward, backward = _cjk_common(line)
        if "reversed" in turns and (_common(w[::-1] for w in words) > plain or backward > forward):
            yield Uncovered("reversed", line[::-1], False)
        elif turns == TURNS and _common(w[::-1].translate(ROT13) for w in words) > max(1, plain):
            yield Uncovered("reversed, then rot13", line[::-1].translate(ROT13), False)


def _common(words: Iterable[str]) -> int:
    """How many of ``words`` are common words of instructions."""
    return sum(map(COMMON.__contains__, words))


def _cjk_common(line: str) -> tuple[int, int]:
    """How often the common CJK words of instructions occur in ``line`` written forwards, and backwards. Only
    the words whose every character is in the line are counted: most lines hold none of them."""
    if line.isascii():
        return 0, 0
    chars = set(line)
    present = [word for word in CJK_COMMON if chars.issuperset(word)]
    return sum(map(line.count, present)), sum(line.count(word[::-1]) for word in present)


def _base64(token: str) -> str | None:
    try:
        return _readable(base64.b64decode(token.replace("-", "+").replace("_", "/") + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError):
        return None


def _base32(token: str) -> str | None:
    try:
        return _readable(base64.b32decode(token.rstrip("=") + "=" * (-len(token.rstrip("=")) % 8)))
    except (binascii.Error, ValueError):
        return None


def _hex(digits: str) -> str | None:
    try:
        return _readable(bytes.fromhex(digits))
    except ValueError:
        return None


BACKWARD_ESCAPES = re.compile(  # escapes written backwards: ``1400u\\``, ``14x\\``, ``02%``, ``;14x#&``
    r"(?:[0-9A-Fa-f]{4}u\\){4,}|(?:[0-9A-Fa-f]{2}x\\){4,}|(?:[0-9A-Fa-f]{2}%[^\s%]*){3,}|(?:;[0-9A-Fa-f]{2,6}x?#&){4,}"
)
ROT13 = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM"
)
ESCAPE = re.compile(r"\\U([0-9A-Fa-f]{8})|\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})|&#x([0-9A-Fa-f]+);|&#([0-9]+);")


def _unescaped(text: str) -> str:
    """``\\u0041``, ``\\U000e0041``, ``\\x41``, ``&#x41;`` and ``&#65;`` as the characters they stand for (surrogate
    pairs joined)."""

    def one(m: re.Match[str]) -> str:
        hex_value = m.group(1) or m.group(2) or m.group(3) or m.group(4)
        code = int(hex_value, 16) if hex_value else int(m.group(5))
        return chr(code) if code <= 0x10FFFF else ""

    joined = ESCAPE.sub(one, text)
    return joined.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _readable(data: bytes) -> str | None:
    """``data`` as text when it reads as text (printable, with words in it), else None: keys, hashes and
    test vectors decode to bytes no one reads."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    shown = TAGS.sub("", INVISIBLE.sub("", BIDI_OVERRIDE.sub("", text)))  # hidden characters: kept, judged later
    if len(shown) < 8 or sum(ch.isprintable() or ch in "\n\t" for ch in shown) < 0.95 * len(shown):
        return None
    words = r"[^\W\d_]{3,}|[\u3400-\u9fff]{2,}|(?:[^\W\d_] ){4,}|(?:[\w$@'!|]{2,} +){3,}"  # leetspeak has words too
    if not (re.search(words, shown) or ESCAPES.search(shown)):
        return None
    return text


def annotated(text: str) -> str:
    """``text`` as it is, with what a reader cannot see made visible: invisible and direction characters as
    ``⟨U+200B⟩``, tag characters as the text they spell, look-alike letters named, and each encoded payload
    followed by what it decodes to. The reveal view shows this beside the rendered Markdown."""
    flags = {m.start() for m in FLAG_TAGS.finditer(text)}  # an emoji flag's tag characters are the flag
    out = TAGS.sub(
        lambda m: m.group() if m.start() - 1 in flags else f"⟨hidden tag text: {_tag_text(m.group())}⟩", text
    )
    out = INVISIBLE.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", out)
    out = BIDI_OVERRIDE.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", out)
    for word in set(mixed_words(out)):
        out = out.replace(word, f"{word}⟨look-alike letters: {word.translate(HOMOGLYPHS)}⟩")
    for found in list(_decoded(out)):
        if found.how in ("rot13", "reversed"):
            continue
        out += f"\n⟨{found.how}: {found.text}⟩"
    for line in _turned(text, TURNS):
        out += f"\n⟨read {line.how}: {line.text}⟩"
    return out


def _tag_text(run: str) -> str:
    return "".join(chr(ord(ch) - 0xE0000) for ch in run if 0xE0020 <= ord(ch) <= 0xE007E)
