"""docs/real-cluster.md's security configurations are ones the shipped client accepts: a share
consumer is built from each (building checks the mechanism, the files and the settings;
nothing connects), and the mechanism the page says it cannot do is refused."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import ShareConsumer
from helpers.doc_blocks import ROOT, blocks

PAGE = ROOT / "docs" / "real-cluster.md"
# Nothing listens there: building a client does not connect, and its first attempt fails fast.
NOWHERE = "127.0.0.1:1"


def _table() -> dict[str, list[str]]:
    """The security table: each row's name and its ``kafka.*`` settings as written."""
    text = PAGE.read_text()
    section = text[text.index("| security | options |"):]
    rows = {}
    for line in section.splitlines()[2:]:
        if not line.startswith("|"):
            break
        name, options = (cell.strip() for cell in line.strip("|").split("|"))
        rows[name] = re.findall(r"`(kafka\.[^`]+)`", options)
    return rows


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA certificate, and a client certificate and encrypted key, for the TLS settings."""
    where = tmp_path_factory.mktemp("tls")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "1", "-subj", "/CN=docs",
         "-keyout", str(where / "key.pem"), "-out", str(where / "cert.pem"),
         "-passout", "pass:secret"],
        check=True, capture_output=True,
    )
    return {"ssl.ca.location": str(where / "cert.pem"),
            "ssl.certificate.location": str(where / "cert.pem"),
            "ssl.key.location": str(where / "key.pem"), "ssl.key.password": "secret"}


def _config(options: list[str], tls_files: dict[str, str]) -> dict[str, str]:
    config = {"bootstrap.servers": NOWHERE, "group.id": "docs-security"}
    for option in options:
        key, _, value = option.removeprefix("kafka.").partition("=")
        # A setting the page leaves to the reader gets a value of the right kind.
        config[key] = tls_files.get(key, value if value and "<" not in value else "reader-value")
    if config.get("sasl.oauthbearer.token.endpoint.url") == "reader-value":
        config["sasl.oauthbearer.token.endpoint.url"] = f"http://{NOWHERE}/token"
    return config


def _build(config: dict[str, str]) -> None:
    consumer = ShareConsumer(config)
    consumer.close()


def _variants(options: list[str]) -> list[list[str]]:
    """A row's settings, once per mechanism it offers ("SCRAM-SHA-512 (or SCRAM-SHA-256)")."""
    line = PAGE.read_text()
    alternatives = re.findall(r"`kafka\.sasl\.mechanism=([\w-]+)` \(or `([\w-]+)`\)", line)
    variants = [options]
    for first, other in alternatives:
        if f"kafka.sasl.mechanism={first}" in options:
            variants.append([o.replace(first, other) for o in options])
    return variants


TABLE = _table()


def test_the_page_documents_tls_and_each_sasl_mechanism_in_its_table() -> None:
    mechanisms = {o.partition("=")[2] for options in TABLE.values() for o in options
                  if o.startswith("kafka.sasl.mechanism=")}

    assert {"TLS", "OAuth (OIDC)"} <= set(TABLE)
    assert mechanisms == {"SCRAM-SHA-512", "PLAIN", "OAUTHBEARER"}


@pytest.mark.parametrize("row", sorted(TABLE))
def test_each_documented_security_configuration_builds_a_share_consumer(
    row: str, tls_files: dict[str, str]
) -> None:
    for options in _variants(TABLE[row]):
        _build(_config(options, tls_files))


def test_the_mechanisms_the_page_says_the_client_supports_build_and_gssapi_is_refused(
    tls_files: dict[str, str],
) -> None:
    text = " ".join(PAGE.read_text().split())
    sentence = re.search(r"supports the SASL mechanisms (.*?), the four in the table", text)
    assert sentence, "real-cluster.md no longer says which SASL mechanisms the client supports"
    supported = re.findall(r"`([\w-]+)`", sentence.group(1))
    assert supported == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
    for mechanism in supported:
        extra = ["kafka.sasl.oauthbearer.method=oidc", "kafka.sasl.oauthbearer.client.id",
                 "kafka.sasl.oauthbearer.client.secret",
                 "kafka.sasl.oauthbearer.token.endpoint.url"] if mechanism == "OAUTHBEARER" else [
                 "kafka.sasl.username", "kafka.sasl.password"]
        _build(_config(["kafka.security.protocol=SASL_SSL",
                        f"kafka.sasl.mechanism={mechanism}", *extra], tls_files))

    assert '"No provider for SASL mechanism GSSAPI"' in text
    with pytest.raises(ValueError, match="No provider for SASL mechanism GSSAPI"):
        _build(_config(["kafka.security.protocol=SASL_SSL", "kafka.sasl.mechanism=GSSAPI"],
                       tls_files))


def test_the_pages_pipeline_options_build_a_share_consumer(tls_files: dict[str, str]) -> None:
    (pipeline,) = (b for b in blocks(PAGE) if b.lang == "python")
    options = [
        (node.args[0].value, node.args[1])
        for node in ast.walk(ast.parse(pipeline.code))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "option"
        and isinstance(node.args[0], ast.Constant)
        and str(node.args[0].value).startswith("kafka.")
        and str(node.args[0].value) not in ("kafka.bootstrap.servers", "kafka.share.group.id")
    ]
    written = [f"{key}={arg.value}" if isinstance(arg, ast.Constant) else key
               for key, arg in options]

    assert "kafka.sasl.mechanism=SCRAM-SHA-512" in written
    _build(_config(written, tls_files))


def test_a_path_the_reader_gives_wrong_is_refused_when_the_consumer_is_built(
    tmp_path: Path, tls_files: dict[str, str]
) -> None:
    # What makes the builds above worth something: building checks the settings.
    with pytest.raises(ValueError, match=r"ssl\.ca\.location failed"):
        _build({**_config(TABLE["TLS"], tls_files),
                "ssl.ca.location": str(tmp_path / "missing.pem")})
