"""``${NAME}`` in a workspace's tool settings: values read from the environment, so a secret never stands in
store.yaml.

Every tool kind takes them in its URL and headers (an HTTP tool's ``http: {url, headers}``, an MCP server's
``url``, ``headers`` and ``env``). A workspace declares the variables it reads by naming them there; the
product's own settings (the language model's, Zep's, the API token, the state store: ``OPENAI_*``, ``ZEP_*``,
``SOP_*``, Google's keys) are never given to a workspace, whatever it names. Every value read this way, and
every value of a header that carries credentials (``Authorization``, ``X-Api-Key``, ``Cookie``, any name with
token, secret, key or auth in it), is remembered by the one redaction (:mod:`core.shared.redaction`), so it is
masked in everything stored or shown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from core.shared.redaction import remember_secret

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
PRODUCT_PREFIXES = ("OPENAI_", "ZEP_", "SOP_")
PRODUCT_NAMES = ("GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS")
_CREDENTIAL_HEADER = re.compile(r"auth|token|secret|key|cookie|session|password", re.I)


def product_variable(name: str) -> bool:
    """Whether ``name`` is one of the product's own settings, which no workspace may read."""
    upper = name.upper()
    return upper.startswith(PRODUCT_PREFIXES) or upper in PRODUCT_NAMES


def refused_names(text: str) -> list[str]:
    """The product's own variables ``text`` names as ``${NAME}`` (never expanded)."""
    return [m.group(1) for m in ENV_REF.finditer(text) if product_variable(m.group(1))]


def expand(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """``text`` with every ``${NAME}`` replaced from the environment, and the names that could not be (not set,
    or one of the product's own, which is never read). Each value read is remembered as a secret."""
    env = os.environ if environ is None else environ
    missing: list[str] = []

    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if product_variable(name) or name not in env:
            missing.append(name)
            return ""
        remember_secret(env[name])
        return env[name]

    return ENV_REF.sub(value, text), missing


def credential_header(name: str) -> bool:
    """Whether a header's value is a credential (Authorization and the like), masked wherever it appears."""
    return bool(_CREDENTIAL_HEADER.search(name))


def expand_headers(headers: Mapping[str, object], environ: Mapping[str, str] | None = None,
                   ) -> tuple[dict[str, str], list[str]]:
    """Headers with ``${NAME}`` expanded (see :func:`expand`), and the names that could not be; the value of
    every credential header is remembered as a secret (the whole value, and the token after its scheme)."""
    out: dict[str, str] = {}
    missing: list[str] = []
    for key, raw in headers.items():
        text, absent = expand(str(raw), environ)
        missing += absent
        out[str(key)] = text
        if credential_header(str(key)):
            remember_secret(text)
            scheme, _, token = text.partition(" ")
            if token and scheme.isalpha():
                remember_secret(token.strip())
    return out, missing


def why_missing(names: list[str]) -> str:
    """A sentence naming variables that could not be read, and why."""
    product = sorted({n for n in names if product_variable(n)})
    unset = sorted({n for n in names if not product_variable(n)})
    parts = []
    if unset:
        parts.append(f"{', '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set in the environment")
    if product:
        parts.append(f"{', '.join(product)} {'is' if len(product) == 1 else 'are'} the product's own setting"
                     f"{'' if len(product) == 1 else 's'}, never given to a workspace")
    return "; ".join(parts)
