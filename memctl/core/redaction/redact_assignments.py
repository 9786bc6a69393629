"""Detectors for secrets given by name: `password=...`, `"token": "..."`, `--api-key X`,
`my password is X`, credentials in URLs and Authorization headers.

Only the value is replaced, the name stays. Values that are code (`os.environ["KEY"]`,
`token: str`), templates (`${DB_PASSWORD}`, `{{ secret }}`), placeholders (`<your-key>`,
`changeme`, `sk-...`), paths and small numbers are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memctl.core.redaction.redact_rules import Detector, Span, rule, token_ok

_SECRET_NAME = (
    r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey"
    r"|(?:access|secret|private|auth|signing|encryption|master|account)[_-]?key|credentials?)"
)
# Any `name=` / `name:` is a candidate; the name is then checked to end in a secret word
# (cheaper than asking the regex to find the word inside every identifier).
_KEY = (
    r"(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z0-9_.-]+)"
    r"[\"']?[ \t]*(?P<sep>:(?![:=])|=(?![=>~])|=>)[ \t]*"
)
_SECRET_KEY_END = re.compile(_SECRET_NAME + r"$", re.IGNORECASE)
_ASSIGN_QUOTED = _KEY + r"(?P<q>[\"'`])(?P<value>[^\r\n]{1,256}?)(?P=q)"
# A bare value runs to the next space: `&`, `#`, `/` and quotes inside belong to it (only in a
# URL query does `&` or `#` end it, see _find_bare_assignments).
_ASSIGN_BARE = _KEY + r"(?P<value>[^\s\"'`,;][^\s,;]{0,255})"
_FLAG_SPACED = (
    r"(?<![\w-])(?P<key>--(?:password|passwd|token|api-key|apikey|secret|client-secret"
    r"|access-token|auth-token))[ \t]+(?P<q>[\"']?)(?P<value>[^\s\"'-][^\s\"']{2,255})(?P=q)(?!\S)"
)
_PROSE_ASSIGN = (
    r"(?i)(?P<key>(?<![A-Za-z0-9_])(?:password|passwd|passphrase|pwd|secret|token|api[ _-]?key)"
    r"|密码|口令|密钥|令牌)"  # Why no boundary before these: `root密码为...` glues the name on
    r"(?:[ \t]+(?:is|was)[ \t]+|[ \t]*(?:是|为|：|:)[ \t]*)"
    r"(?P<value>[^\s\"'`,;\u0080-\U0010ffff]{3,256})"  # ASCII only: stops before Chinese text
)
# `redis://:pw@host` has no user name, hence {0,64}.
_URL_CREDENTIALS = r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{0,64}:(?P<value>[^\s@/]{1,128})@"
# Passwords on command lines: `sshpass -p PW`, `mysql -pPW` (or `-p PW`), `docker login -p PW`,
# `curl -u user:PW`, and a storage SAS signature (`?sig=...`).
_VALUE = r"(?P<q>[\"']?)(?P<value>[^\s\"'][^\s\"']{2,255})(?P=q)(?!\S)"
_COMMAND_PASSWORDS = (
    r"\bsshpass(?:[ \t]+-[a-oq-zA-Z]\S*)*[ \t]+-p[ \t]*" + _VALUE,
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb(?:-dump)?)\b"
    r"[^\n|;&]*?[ \t]-p(?:[ \t]+)?" + _VALUE,
    r"\b(?:docker|podman|helm|nerdctl)[ \t]+(?:registry[ \t]+)?login\b[^\n|;&]*?[ \t]-p[ \t]+"
    + _VALUE,
    r"\bcurl\b[^\n|;&]*?[ \t](?:-u|--user)[ \t]+[\"']?[^\s:\"']+:" + _VALUE,
)
_SAS_SIGNATURE = r"[?&;]sig=(?P<value>[A-Za-z0-9%+/=]{16,})"
_AUTH_HEADER = (
    r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|basic|token|digest)"
    r"[ \t]+(?P<value>[A-Za-z0-9._~+/=-]{8,})"
)
_BEARER = r"(?i)\bbearer[ \t]+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)"

_PLACEHOLDER_WORDS = {
    "none",
    "null",
    "nil",
    "true",
    "false",
    "undefined",
    "required",
    "optional",
    "redacted",
    "hidden",
    "secret",
    "password",
    "token",
    "changeme",
    "example",
    "string",
    "str",
    "dummy",
    "test",
    "fake",
    "sample",
    "anything",
    "placeholder",
    "todo",
    "tbd",
}
_REFERENCE_START = ("$", "%", "{", "<", "#{", "[REDACTED_")
_YAML_TAG = re.compile(r"![A-Za-z]+")  # `password: !vault |`
# `settings.SECRET_KEY`, `os.environ/KEY`; a digit means a value such as vault's `s.FAKE0tok3n`.
_DOTTED_REFERENCE = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+(?:[/\[:].*)?")
_TEMPLATE_INSIDE = ("$(", "${", "{{", "%(", "%s", "<%")
_WORDLIKE = re.compile(r"[A-Za-z]+(?:[-_][A-Za-z]+)*")
_PATHLIKE = ("/", "~/", "./", "../")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_HEX_COLOR = re.compile(r"#(?:[0-9A-Fa-f]{3,4}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})")
_PASSWORD_KEY = re.compile(r"(?i)pass(?:word|wd|phrase)|pwd|secret$")


def _placeholder_value(value: str) -> bool:
    """True for values that stand in for a secret instead of being one (`<your-key>`, `${X}`)."""
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or value.startswith(_REFERENCE_START):
        return True
    if _YAML_TAG.fullmatch(value):
        return True
    if any(marker in value for marker in _TEMPLATE_INSIDE):
        return True
    if len(set(value)) == 1 or set(value) <= set("*x.-_X") or value.endswith(("...", "…")):
        return True
    return low.startswith(("your", "my-", "my_")) and not any(c.isdigit() for c in value)


def _bare_value_ok(value: str, shell_style: bool = False) -> bool:
    """An unquoted value: skip code references, type names, paths, numbers and plain words.

    Plain words are kept only in shell style (`DB_PASSWORD=letmein`, `--password=letmein`);
    elsewhere `token: str` or `password=password` is code, not a secret.
    """
    if _placeholder_value(value) or value.startswith(_PATHLIKE):
        return False
    if any(c in value for c in "()[]{}") or _DOTTED_REFERENCE.fullmatch(value):
        return False
    if _NUMBER.fullmatch(value) and ("." in value or len(value) <= 5):
        return False
    return shell_style or not _WORDLIKE.fullmatch(value)


def _shell_style(key: str, sep: str) -> bool:
    """`DB_PASSWORD=...` or `--password=...`: a shell or .env line, where any value is literal."""
    upper_name = key.upper() == key and any(c.isalpha() for c in key)
    return sep == "=" and (key.startswith("-") or upper_name)


def _secret_assignments(pattern: re.Pattern, text: str) -> Iterator[re.Match]:
    """Assignments whose name ends in a secret word; after any other name, scan on from its end
    so that `https://host/?api_key=...` is still seen."""
    pos = 0
    while (match := pattern.search(text, pos)) is not None:
        if _SECRET_KEY_END.search(match.group("key")):
            yield match
            pos = match.end()
        else:
            pos = match.end("key")


def _quoted_value_ok(key: str, value: str) -> bool:
    """A quoted literal is a hard-coded secret, except names: `"nextToken": "next_token"`.

    Passwords may be plain words; tokens and keys carry digits, so a word after one is a name.
    """
    if not value or _placeholder_value(value) or _HEX_COLOR.fullmatch(value):
        return False
    return bool(_PASSWORD_KEY.search(key)) or not _WORDLIKE.fullmatch(value)


def _find_quoted_assignments(text: str) -> Iterator[Span]:
    for match in _secret_assignments(_QUOTED, text):
        if _quoted_value_ok(match.group("key"), match.group("value").strip()):
            yield match.span("value")


_QUERY_END = re.compile(r"[&#]")
_DIGIT_GROUPS = re.compile(r"(?:[ -][0-9]{2,})+(?![\w-])")


def _with_digit_groups(text: str, start: int, value: str) -> str:
    """`pin=4921 7730 1183`: digits written in groups are one value, not three."""
    if not value.isdigit():
        return value
    more = _DIGIT_GROUPS.match(text, start + len(value))
    return value + more.group(0) if more else value


def _find_bare_assignments(text: str) -> Iterator[Span]:
    for match in _secret_assignments(_BARE, text):
        raw = match.group("value")
        key_start = match.start("key")
        if key_start and text[key_start - 1] in "?&":  # a URL query: `?api_key=X&page=2`
            raw = _QUERY_END.split(raw, maxsplit=1)[0]
        raw = _with_digit_groups(text, match.start("value"), raw)
        value = "" if _placeholder_value(raw) else raw.rstrip(".,:)\"'`")
        if value and _bare_value_ok(value, _shell_style(match.group("key"), match.group("sep"))):
            start = match.start("value")
            yield start, start + len(value)


def _find_prose_assignments(text: str) -> Iterator[Span]:
    """`my password is hunter2`, `密码是abc123`: the same value checks as an unquoted assignment."""
    for match in _PROSE.finditer(text):
        raw = _with_digit_groups(text, match.start("value"), match.group("value"))
        value = "" if _placeholder_value(raw) else raw.rstrip(".,:;!?)")
        if value and _bare_value_ok(value):
            start = match.start("value")
            yield start, start + len(value)


def _find_spaced_flags(text: str) -> Iterator[Span]:
    """`--password S3cret!` yes; `--password options.` (prose about the flag) no."""
    for match in _FLAG.finditer(text):
        value = match.group("value")
        if _placeholder_value(value):
            continue
        if not match.group("q"):
            value = value.rstrip(".,:;)")
        if value and _bare_value_ok(value):
            start = match.start("value")
            yield start, start + len(value)


def _find_command_passwords(text: str) -> Iterator[Span]:
    """`sshpass -p Vh3kZp9q`, `mysql -uroot -pS3cret`; `-p 8080` or `mysql -p shop` (a port, a
    database name) are not passwords: the value must pass the unquoted-value checks."""
    for pattern in _COMMANDS:
        for match in pattern.finditer(text):
            value = match.group("value")
            if not match.group("q"):
                value = value.rstrip(".,:;)")
            if value and _bare_value_ok(value):
                start = match.start("value")
                yield start, start + len(value)


def _reference_free(match: re.Match) -> bool:
    return not _placeholder_value(match.group("value"))


def _header_value_ok(match: re.Match) -> bool:
    """`Bearer sk-litellm-key` in docs is a name; real credentials carry digits or length."""
    value = match.group("value")
    return not _placeholder_value(value) and (any(c.isdigit() for c in value) or len(value) >= 24)


_QUOTED = re.compile(_ASSIGN_QUOTED, re.ASCII | re.IGNORECASE)
_BARE = re.compile(_ASSIGN_BARE, re.ASCII | re.IGNORECASE)
_PROSE = re.compile(_PROSE_ASSIGN, re.ASCII)
_FLAG = re.compile(_FLAG_SPACED, re.ASCII)
_COMMANDS = tuple(re.compile(p, re.ASCII) for p in _COMMAND_PASSWORDS)


ASSIGNMENT_DETECTORS: tuple[Detector, ...] = (
    Detector("secret_assignment", rule(_URL_CREDENTIALS, _reference_free, group="value")),
    Detector("secret_assignment", rule(_AUTH_HEADER, _header_value_ok, group="value")),
    Detector("secret_assignment", rule(_BEARER, token_ok, group="value")),
    Detector("secret_assignment", _find_spaced_flags),
    Detector("secret_assignment", _find_command_passwords),
    Detector("secret_assignment", rule(_SAS_SIGNATURE, token_ok, group="value")),
    Detector("secret_assignment", _find_quoted_assignments),
    Detector("secret_assignment", _find_bare_assignments),
    Detector("secret_assignment", _find_prose_assignments),
)
