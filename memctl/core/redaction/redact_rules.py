"""The built-in detectors used by `memctl.core.redaction.redact`: a regex for candidates plus a check.

Every pattern is ASCII-mode so that a value glued to Chinese text ("手机13800138000") is
still found. Checks (Luhn, GB 11643, `ipaddress`, context words) keep precision high:
version numbers, dates, hashes, UUIDs, ports, prices and code are not touched.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date

Span = tuple[int, int]


@dataclass(frozen=True)
class Detector:
    kind: str
    find: Callable[[str], Iterator[Span]]


def placeholder(kind: str) -> str:
    return f"[REDACTED_{kind.upper()}]"


def rule(
    pattern: str,
    accept: Callable[[re.Match], bool] | None = None,
    group: int | str = 0,
    flags: int = 0,
) -> Callable[[str], Iterator[Span]]:
    compiled = re.compile(pattern, flags | re.ASCII)

    def find(text: str) -> Iterator[Span]:
        for match in compiled.finditer(text):
            if accept is None or accept(match):
                start, end = match.span(group)
                if 0 <= start < end:
                    yield start, end

    return find


def has_letter_and_digit(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


# --- secrets with a recognisable shape -------------------------------------------------------


def token_ok(match: re.Match) -> bool:
    """The `value` group mixes letters and digits, as generated credentials do."""
    return has_letter_and_digit(match.group("value"))


_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# A block pasted without its END line: the base64 and header lines that follow BEGIN.
_PEM_BODY = re.compile(r"(?:\r?\n[ \t]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^\r\n]*)[ \t]*)*")


def _find_private_keys(text: str) -> Iterator[Span]:
    """The whole block from BEGIN to the next END (linear even with many BEGIN lines)."""
    ends = [m.end() for m in _PEM_END.finditer(text)]
    for begin in _PEM_BEGIN.finditer(text):
        i = bisect.bisect_left(ends, begin.end())
        if i < len(ends):
            yield begin.start(), ends[i]
        else:
            body = _PEM_BODY.match(text, begin.end())
            yield begin.start(), body.end() if body else begin.end()


_JWT = r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}(?![\w-])"
_AWS_KEY = r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
_AWS_SECRET = (
    r"(?i)aws[\w .-]{0,24}secret[\w .-]{0,24}(?:[\"']?[ \t]*[:=][ \t]*|[ \t]+is[ \t]+)[\"']?"
    r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
)
# A secret key pasted alone: 40 characters of base64 in a run of their own. Why so strict: a
# git hash is hex (no capital), a path or an identifier changes between capitals, small letters
# and digits a few times; 40 random base64 characters change class on most characters.
_AWS_BARE_SECRET = r"(?<![A-Za-z0-9/+=_.-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_.-])"
_MIN_CLASS_CHANGES = 16


def _bare_secret_ok(match: re.Match) -> bool:
    value = match.group(0)
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    if not any(c.isdigit() for c in value) or "//" in value or value[0] == "/":
        return False
    classes = [
        "u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "s" for c in value
    ]
    return sum(a != b for a, b in zip(classes, classes[1:], strict=False)) >= _MIN_CLASS_CHANGES


_GITHUB = r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{30,255})(?![\w-])"
_SLACK = r"(?<![\w-])(?:xox[abprs]-[A-Za-z0-9]+(?:-[A-Za-z0-9]+){1,5}|xapp-[0-9]-[A-Za-z0-9-]{20,})"
_SLACK_WEBHOOK = (
    r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9/_-]{20,})"
)
_API_KEYS = (
    r"(?<![\w-])(?:"
    r"sk-(?:proj-|ant-(?:api[0-9]{2}-)?|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|whsec_[A-Za-z0-9+/=]{24,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|npm_[A-Za-z0-9]{36}"
    r"|pypi-[A-Za-z0-9_-]{50,}"
    r"|(?:xai|gsk)[-_][A-Za-z0-9]{32,}"
    r")(?![\w-])"
)


_API_KEY_PREFIX = re.compile(
    r"sk-(?:proj-|ant-(?:api[0-9]{2}-)?|svcacct-|admin-)?|(?:sk|rk)_(?:live|test)_|whsec_|AIza|hf_"
    r"|glpat-|npm_|pypi-|(?:xai|gsk)[-_]"
)


def _api_key_ok(match: re.Match) -> bool:
    """The random part mixes letters and digits; `sk-loading-spinner-animation` does not."""
    value = match.group(0)
    prefix = _API_KEY_PREFIX.match(value)
    return has_letter_and_digit(value[prefix.end() if prefix else 0 :])


# --- personal data ---------------------------------------------------------------------------

_EMAIL = (
    r"(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}"
    # `git@github.com:org/repo.git` is an scp-style remote, not a mailbox.
    r"(?![\w-]|\.[A-Za-z0-9]|:[\w~/.])"
)
# `logo@2x.png`: file names, not domains (none of these is a top-level domain).
_FILE_SUFFIXES = {
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "webp",
    "ico",
    "bmp",
    "json",
    "yaml",
    "yml",
    "toml",
    "txt",
    "html",
    "htm",
    "css",
    "lock",
    "tsx",
    "jsx",
    "pdf",
    "csv",
    "tgz",
}


def _email_ok(match: re.Match) -> bool:
    return match.group(0).rsplit(".", 1)[-1].lower() not in _FILE_SUFFIXES


_CN_ID = (
    r"(?<![A-Za-z0-9])[1-9][0-9]{5}(?:18|19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])"
    r"[0-9]{3}[0-9Xx](?![A-Za-z0-9])"
)
_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK = "10X98765432"


def _cn_id_ok(match: re.Match) -> bool:
    """GB 11643: a real birth date and the mod-11 check character."""
    value = match.group(0)
    try:
        date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    total = sum(int(c) * w for c, w in zip(value[:17], _CN_WEIGHTS, strict=False))
    return _CN_CHECK[total % 11] == value[17].upper()


_CARD = r"(?<![\w+.-])[0-9](?:[ -]?[0-9]){11,18}(?![\w-]|\.[0-9])"


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _card_network_ok(d: str) -> bool:
    """Issuer prefixes and lengths of the card networks; random digit runs rarely fit both."""
    n, p2, p3, p4 = len(d), int(d[:2]), int(d[:3]), int(d[:4])
    if d[0] == "4":
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16
    if p2 in (34, 37):
        return n == 15
    if p4 == 6011 or p2 in (62, 65) or 644 <= p3 <= 649 or 3528 <= p4 <= 3589:
        return 16 <= n <= 19
    if p2 in (36, 38, 39) or 300 <= p3 <= 305:
        return 14 <= n <= 19
    if p2 == 50 or 56 <= p2 <= 69:
        return 12 <= n <= 19
    return False


def _card_ok(match: re.Match) -> bool:
    raw = match.group(0)
    digits = _digits(raw)
    if not 13 <= len(digits) <= 19:
        return False
    separators = {c for c in raw if not c.isdigit()}
    if len(separators) > 1:
        return False
    if separators and min(len(g) for g in re.split(r"[ -]", raw)) < 3:
        return False
    return _card_network_ok(digits) and _luhn_ok(digits)


_SSN = r"(?<![\w-])(?!000|666|9[0-9]{2})[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}(?![\w-]|\.[0-9])"
_SSN_CONTEXT = (
    r"(?i)\b(?:ssn|social security(?: number| no\.?)?)[ \t]*(?:is|:|#|=)?[ \t]*"
    r"(?P<value>(?!000|666|9[0-9]{2})[0-9]{3}[ -]?[0-9]{2}[ -]?[0-9]{4})(?![0-9])"
)

# --- phone numbers ---------------------------------------------------------------------------

_PHONE_CN = (
    r"(?<![A-Za-z0-9_+.#/$-])(?:(?:\+|00)86[ -]?)?1[3-9][0-9](?:[0-9]{8}|[ -][0-9]{4}[ -][0-9]{4})"
    r"(?![A-Za-z0-9_]|[-/][0-9]|\.\S| ?(?:bytes?|B|KB|ms|ns)\b)"
)
_ORDER_BEFORE = re.compile(
    r"(?i)(?:订单号?|单号|编号|流水号|order|invoice|tracking)"
    r"[ \t:#：]*(?:no\.?|number|id)?[ \t:#：]*$"
)


def _cn_mobile_ok(match: re.Match) -> bool:
    """`订单号15012345678`: an order number, not a phone, when the label says so."""
    return not _ORDER_BEFORE.search(match.string[max(0, match.start() - 20) : match.start()])


_PHONE_INTL = (
    r"(?<![\w+])(?:\+[0-9]{1,4}(?:[ .-]?\(?[0-9]{1,5}\)?){1,6}"
    r"|00[1-9][0-9]{0,2}(?:[ .-]\(?[0-9]{1,5}\)?){2,6})(?![\w-]|\.[0-9])"
)
_PHONE_US = (
    r"(?<![\w.+/-])(?:1[.-])?(?:\([2-9][0-9]{2}\)[ .-]?|[2-9][0-9]{2}[.-])[2-9][0-9]{2}[.-][0-9]{4}"
    r"(?![\w-]|\.[0-9])"
)
_PHONE_CONTEXT = (
    r"(?i)(?:\b(?:phone|tel|telephone|mobile|cell|cellphone|fax|whatsapp)\b|电话|手机号?码?|联系方式)"
    r"(?:[ \t]*(?:number|no\.?|#))?[ \t]*(?:is|:|=|是|为|：)?[ \t]*"
    r"(?P<value>\+?\(?[0-9][0-9 ().-]{5,20}[0-9])(?![0-9])"
)
_DATE_LIKE = re.compile(
    r"[0-9]{4}[-./][0-9]{1,2}[-./][0-9]{1,2}|[0-9]{1,2}[-./][0-9]{1,2}[-./][0-9]{4}"
)


def _intl_phone_ok(match: re.Match) -> bool:
    raw = match.group(0)
    count = len(_digits(raw)) - (2 if raw.startswith("00") else 0)
    return 8 <= count <= 15 if any(not c.isdigit() for c in raw[1:]) else 10 <= count <= 15


def _context_phone_ok(match: re.Match) -> bool:
    value = match.group("value")
    return 7 <= len(_digits(value)) <= 15 and not _DATE_LIKE.search(value)


# --- IP addresses ----------------------------------------------------------------------------

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = r"(?<![\w.])" + r"(?:" + _OCTET + r"\.){3}" + _OCTET + r"(?![\w]|\.[0-9]|-[A-Za-z])"
_VERSION_WORD = re.compile(
    r"(?i)(?:version|release|build|revision|firmware|section|chapter|clause)s?|§"
    r"|\b(?:ver|rev|fw|sdk|v|rfc)\b"
)
_VERSION_OPERATOR = re.compile(r"(?:[=<>~!]=|\^|~>?)[ \t\"']*$")
_VERSION_FILLER = {
    "to",
    "from",
    "was",
    "is",
    "bumped",
    "updated",
    "upgraded",
    "changed",
    "and",
    "or",
    "then",
    "now",
    "set",
    "of",
    "the",
    "v",
}


def _version_context(before: str) -> bool:
    """`version 1.0.0.0 was bumped to 1.0.1.0`: only versions and filler since the keyword."""
    if _VERSION_OPERATOR.search(before):
        return True
    words = list(_VERSION_WORD.finditer(before))
    if not words:
        return False
    rest = re.sub(r"\bv?[0-9]+(?:\.[0-9]+)*", " ", before[words[-1].end() :])
    return all(word.lower() in _VERSION_FILLER for word in re.findall(r"[A-Za-z]+", rest))


_PUBLIC_RESOLVERS = {
    "8.8.8.8",
    "8.8.4.4",
    "1.1.1.1",
    "1.0.0.1",
    "9.9.9.9",
    "149.112.112.112",
    "208.67.222.222",
    "208.67.220.220",
}


_CIDR_AFTER = re.compile(r"/[0-9]{1,3}(?![0-9])")


def _is_range(match: re.Match) -> bool:
    """A network range (`10.244.0.0/16`, `2001:db8::/32`) names a network, not anyone's host."""
    return bool(_CIDR_AFTER.match(match.string, match.end()))


def _ipv4_ok(match: re.Match) -> bool:
    """Skip versions and addresses that identify no one: loopback, 0.0.0.0, netmasks, public DNS,
    and network ranges."""
    value = match.group(0)
    address = ipaddress.IPv4Address(value)
    if address.is_loopback or address.is_unspecified or value in _PUBLIC_RESOLVERS:
        return False
    if _is_range(match):
        return False
    bits = int(address)
    if value.startswith("255.") and (bits | (bits - 1)) == 0xFFFFFFFF:
        return False  # a netmask such as 255.255.255.0
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    before = match.string[max(line_start, match.start() - 60) : match.start()]
    return not _version_context(before)


_IPV6 = r"(?<![\w:.])[0-9A-Fa-f:]{2,39}(?:(?:\.[0-9]{1,3}){3})?(?![\w:])"


def _ipv6_ok(match: re.Match) -> bool:
    value = match.group(0)
    if value.count(":") < 2 or not any(c.isdigit() for c in value):
        return False
    try:
        address = ipaddress.IPv6Address(value)
    except ValueError:
        return False
    if address.is_unspecified or address.is_loopback or _is_range(match):
        return False
    groups = [g for g in value.split(":") if g]
    if "::" in value and (len(groups) < 2 or max(len(g) for g in groups) < 3):
        return False  # `1::2` is a slice step, not an address
    start, text = match.start(), match.string
    # `items[1::2]` is a slice, not an address in brackets like `http://[2001:db8::1]/`.
    if start >= 2 and text[start - 1] == "[":
        return not (text[start - 2].isalnum() or text[start - 2] in "_)]")
    return True


# Most specific first: a span claimed by an earlier detector is not looked at again.
SHAPE_DETECTORS: tuple[Detector, ...] = (
    Detector("private_key", _find_private_keys),
    Detector("jwt", rule(_JWT)),
    Detector("aws_key", rule(_AWS_KEY)),
    Detector("aws_key", rule(_AWS_SECRET, token_ok, group="value")),
    Detector("aws_key", rule(_AWS_BARE_SECRET, _bare_secret_ok)),
    Detector("github_token", rule(_GITHUB)),
    Detector("slack_token", rule(_SLACK)),
    Detector("slack_token", rule(_SLACK_WEBHOOK, group="value")),
    Detector("api_key", rule(_API_KEYS, _api_key_ok)),
)
PERSONAL_DETECTORS: tuple[Detector, ...] = (
    Detector("email", rule(_EMAIL, _email_ok)),
    Detector("cn_id", rule(_CN_ID, _cn_id_ok)),
    Detector("credit_card", rule(_CARD, _card_ok)),
    Detector("ssn", rule(_SSN)),
    Detector("ssn", rule(_SSN_CONTEXT, group="value")),
    Detector("ipv6", rule(_IPV6, _ipv6_ok)),
    Detector("ipv4", rule(_IPV4, _ipv4_ok)),
    Detector("phone", rule(_PHONE_CN, _cn_mobile_ok)),
    Detector("phone", rule(_PHONE_INTL, _intl_phone_ok)),
    Detector("phone", rule(_PHONE_US)),
    Detector("phone", rule(_PHONE_CONTEXT, _context_phone_ok, group="value")),
)
