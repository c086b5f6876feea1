"""What a credential with a recognisable shape looks like: the token formats (a fixed prefix, as
gitleaks and detect-secrets document them), and the scanners worth running over one text — only
the formats whose fixed text occurs in it, plus the environment's values it contains.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

REDACTED = "[REDACTED]"


def _word(prefix: str, at: int | None = None) -> str:
    """``prefix`` as fixed text with a look behind it, after its first ``at`` characters (default:
    all): no letter, digit or ``_`` just before it. Written this way each pattern starts with fixed
    text, and the regex engine skips straight to where that text occurs."""
    at = len(prefix) if at is None else at
    return re.escape(prefix[:at]) + f"(?<![A-Za-z0-9_]{'.' * at})" + re.escape(prefix[at:])


def _keep_user(match: re.Match[str]) -> str:
    """``://user:`` of a URL kept, its password redacted."""
    text = match.group()
    return text[: text.index(":", 3) + 1] + REDACTED


def _keep_name(match: re.Match[str]) -> str:
    """``aws_secret_access_key = `` kept, the 40-character value redacted."""
    return match.group()[:-40] + REDACTED


#: after the name: its closing quote, ``=``, ``:`` or ``=>`` on the same line, the value's quote, the
#: 40 characters of an AWS secret key
_AWS_SECRET_VALUE = r"[\"']?[ \t]*(?:=>|[:=])[ \t]*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"
#: ``secret_access_key`` after its first word (``secret``, ``Secret`` or ``SECRET``, each rule's fixed
#: text): the rest in any case, with ``_``, ``-``, ``.`` or nothing between the words
_AWS_SECRET_REST = r"(?i:[_.-]?access[_.-]?key)"

#: token formats: (short fixed texts one of which every match contains, the pattern, what to keep).
#: A text with none of the fixed texts is not scanned for the format. Each pattern starts with
#: fixed text and has no alternation in front: Python's regex engine then skips through the text
#: to that text; an alternation of many patterns would try each at every position (ten times slower).
_TOKEN_RULES: tuple[tuple[tuple[str, ...], str, Callable[[re.Match[str]], str] | None], ...] = (
    (("AKIA", "ASIA", "ABIA", "ACCA"), _word("A", 1) + r"(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", None),
    (("secret",), "secret" + _AWS_SECRET_REST + _AWS_SECRET_VALUE, _keep_name),
    (("Secret",), "Secret" + _AWS_SECRET_REST + _AWS_SECRET_VALUE, _keep_name),
    (("SECRET",), "SECRET" + _AWS_SECRET_REST + _AWS_SECRET_VALUE, _keep_name),
    (("sk-",), _word("sk-") + r"[A-Za-z0-9_-]{20,}", None),
    (("gh",), _word("gh") + r"[pousr]_[A-Za-z0-9]{30,255}", None),
    (("_pat_",), _word("github_pat_") + r"[A-Za-z0-9_]{22,255}", None),
    (("gl",), _word("gl") + r"(?:pat|ptt|dt|rt|cbt|imt|ft|soat|agent|oas)-[A-Za-z0-9_.-]{20,}", None),
    (("GR1348941",), _word("GR1348941") + r"[A-Za-z0-9_-]{20,}", None),
    (("xox",), _word("xox") + r"(?:[abeprs]-|e\.xoxp-)[A-Za-z0-9-]{10,}", None),
    (("xapp-",), _word("xapp-") + r"[A-Za-z0-9-]{10,}", None),
    (("hooks.slack.com/",), r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}", None),
    (("AIza",), _word("AIza") + r"[A-Za-z0-9_-]{35}", None),
    (("GOCSPX-",), _word("GOCSPX-") + r"[A-Za-z0-9_-]{28}", None),
    (("sk_",), _word("sk_") + r"(?:live|test)_[A-Za-z0-9]{10,}", None),
    (("rk_",), _word("rk_") + r"(?:live|test)_[A-Za-z0-9]{10,}", None),
    (("whsec_",), _word("whsec_") + r"[A-Za-z0-9]{10,}", None),
    (("npm_",), _word("npm_") + r"[A-Za-z0-9]{36}", None),
    (("pypi-",), _word("pypi-Ag") + r"[A-Za-z0-9_-]{50,}", None),
    (("hf_",), _word("hf_") + r"[A-Za-z]{34}", None),
    (("SG.",), _word("SG.") + r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", None),
    (("_v1_",), _word("do", 2) + r"[opr]_v1_[a-f0-9]{64}", None),
    (("shp",), _word("shp") + r"(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", None),
    (("cio",), _word("cio") + r"(?:_tp_)?[A-Za-z0-9]{32}(?![A-Za-z0-9_])", None),
    (("eyJ",), _word("eyJ") + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", None),
    # a URL's password: ``scheme://user:`` is kept, the password up to the ``@`` goes
    (("://",), r"://[^\s:/@\"'<>]{1,256}:(?!\[REDACTED\]@)[^\s@/\"'<>]{1,512}(?=@)", _keep_user),
)
#: every token format's fixed texts, and the formats (indexes into the rules) each one may start
_RULES_OF: dict[str, tuple[int, ...]] = {}
for _index, (_triggers, _, _) in enumerate(_TOKEN_RULES):
    for _t in _triggers:
        _RULES_OF[_t] = (*_RULES_OF.get(_t, ()), _index)
_TRIGGER_TEXTS = tuple(_RULES_OF)


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def scanners(text: str, forms: tuple[str, ...]) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], str] | None]]:
    """The patterns worth running over ``text``: the environment forms it contains (one
    alternation of those few literals, :func:`cogcli.secrets.environment.env_forms`) and the token
    formats whose fixed text it contains."""
    found = [f for f in forms if f in text]
    out: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str] | None]] = []
    if found:
        out.append((_compiled("|".join(re.escape(f) for f in found)), None))
    hits = [t for t in _TRIGGER_TEXTS if t in text]  # one flat pass: most texts hold none
    if hits:
        for index in sorted({i for t in hits for i in _RULES_OF[t]}):  # in the rules' order
            _, pattern, keep = _TOKEN_RULES[index]
            out.append((_compiled(pattern), keep))
    return out
