"""Detectors for bank account numbers (IBAN) and AWS secret access keys.

An IBAN is recognised by its country's length and the ISO 13616 mod-97 check, written in one
piece or in groups of four. An AWS secret access key is 40 characters of base64 with nothing
to tell it from a hash, so it is taken only near an access key id (`AKIA...`) or after a name
such as `aws_secret`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memctl.core.redaction.redact_rules import Detector, Span, has_letter_and_digit, rule

# ISO 13616 registry: country code -> IBAN length.
_IBAN_LENGTHS = dict(
    (entry[:2], int(entry[2:]))
    for entry in (
        "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 "
        "DJ27 DK18 DO28 EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HN28 "
        "HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 "
        "MC27 MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 NL18 NO15 OM23 PK24 PL28 PS29 PT25 QA29 "
        "RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 "
        "VA22 VG24 XK20 YE30"
    ).split()
)
_IBAN = (
    r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}"
    r"(?:[A-Z0-9]{11,30}|(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,3})?)"
    r"(?![A-Za-z0-9])"
)


def iban_ok(match: re.Match) -> bool:
    """Known country, its length, and the mod-97 remainder 1 (letters count A=10 ... Z=35)."""
    value = match.group(0).replace(" ", "")
    if _IBAN_LENGTHS.get(value[:2]) != len(value):
        return False
    moved = value[4:] + value[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


_AWS_KEY_ID = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_AWS_SECRET_NAME = re.compile(r"(?i)aws[_ .-]?secret")
_FORTY_BASE64 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
NEAR_CHARS = 160  # how far from its key id (or name) a secret key may stand


def _find_aws_secrets(text: str) -> Iterator[Span]:
    """40-character base64 values within NEAR_CHARS of an access key id or an `aws_secret` name;
    they mix letters and digits (or carry a `/` or `+`), as generated keys do."""
    anchors = [m.span() for m in _AWS_KEY_ID.finditer(text)]
    anchors += [m.span() for m in _AWS_SECRET_NAME.finditer(text)]
    if not anchors:
        return
    for candidate in _FORTY_BASE64.finditer(text):
        start, end = candidate.span()
        value = candidate.group(0)
        near = any(
            a_start - NEAR_CHARS <= start and end <= a_end + NEAR_CHARS
            for a_start, a_end in anchors
        )
        if near and (has_letter_and_digit(value) or "/" in value or "+" in value):
            yield start, end


ACCOUNT_SECRET_DETECTORS: tuple[Detector, ...] = (Detector("aws_key", _find_aws_secrets),)
ACCOUNT_PERSONAL_DETECTORS: tuple[Detector, ...] = (Detector("iban", rule(_IBAN, iban_ok)),)
