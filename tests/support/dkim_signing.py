"""DKIM keys of the tests' own: RSA keys made with openssl, mail signed with dkimpy, and the key
table lorelab reads instead of DNS (`[commands] dkim_keys`), so that no test asks the network.

    table = key_table(tmp_path, ["example.org"])     # the public keys, as DNS would serve them
    signed = sign(raw, "example.org")                 # raw with a DKIM-Signature on top
"""

from __future__ import annotations

import base64
import functools
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

import dkim

SELECTOR = "test"
# What a mail client's provider signs (Gmail's list, less the ARC and X- fields).
SIGNED_HEADERS = (b"from", b"to", b"cc", b"subject", b"date", b"message-id", b"in-reply-to",
                  b"references", b"content-type", b"content-transfer-encoding", b"mime-version")


@functools.cache
def _key_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="lorelab-dkim-"))


@functools.cache
def private_key(domain: str) -> bytes:
    """A 1024-bit RSA key for `domain` (PKCS#1 PEM), made once per test process."""
    path = _key_dir() / f"{domain}.pem"
    subprocess.run(["openssl", "genrsa", "-traditional", "-out", str(path), "1024"],
                   check=True, capture_output=True)
    return path.read_bytes()


def public_record(domain: str) -> str:
    """The TXT record of `domain`'s key at test._domainkey.DOMAIN."""
    key = _key_dir() / f"{domain}.pem"
    private_key(domain)
    der = subprocess.run(["openssl", "rsa", "-in", str(key), "-pubout", "-outform", "DER"],
                         check=True, capture_output=True).stdout
    return f"v=DKIM1; k=rsa; p={base64.b64encode(der).decode()}"


def key_table(directory: Path, domains: Iterable[str]) -> Path:
    """A key table (one `NAME TXT` line per key) for `domains`, written in `directory`."""
    path = directory / "dkim-keys.txt"
    lines = [f"{SELECTOR}._domainkey.{domain} {public_record(domain)}" for domain in domains]
    path.write_text("# DKIM public keys, as DNS serves them\n" + "\n".join(lines) + "\n")
    return path


def sign(raw: bytes, domain: str, *, headers: Iterable[bytes] = SIGNED_HEADERS,
         length: bool = False) -> bytes:
    """`raw` with a DKIM-Signature of `domain` (d=) on top; `length`: with an l= tag."""
    signature = dkim.sign(raw, SELECTOR.encode(), domain.encode(), private_key(domain),
                          include_headers=list(headers), linesep=b"\n", length=length)
    return signature + raw
