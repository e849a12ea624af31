"""A secured listener for the Apache Kafka launcher: SCRAM-SHA-512 over TLS, and ACLs.

:class:`SaslSsl` makes a certificate authority and a broker certificate for 127.0.0.1 (PEM
files in the cluster's directory), an ``admin`` user (a super user, written into the storage
at format time, as KRaft needs it before any broker runs) and the broker settings of a
``SASL_SSL`` listener with Kafka's ``StandardAuthorizer``: a principal may do only what an ACL
allows. The controller listener stays plaintext on loopback, as the brokers' own channel.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MECHANISM = "SCRAM-SHA-512"
ADMIN = "admin"


@dataclass(frozen=True)
class SaslSsl:
    """SCRAM-SHA-512 over TLS with ACLs, for
    :class:`~kafka_share_eos.proving_ground.launchers.kafka_cluster.KafkaCluster`
    (``security=SaslSsl()``)."""

    admin_password: str = field(default_factory=lambda: secrets.token_urlsafe(18), repr=False)

    def write_certificates(self, directory: Path) -> None:
        """The CA (``ca.pem``) and the brokers' key and certificate (``broker.pem``)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        now = dt.datetime.now(dt.UTC)

        def certificate(subject: str, key: Any, issuer: str, signer: Any, ca: bool) -> Any:
            builder = (
                x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5))
                .not_valid_after(now + dt.timedelta(days=2))
                .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            )
            if not ca:
                builder = builder.add_extension(x509.SubjectAlternativeName([
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.DNSName("localhost"),
                ]), critical=False)
            return builder.sign(signer, hashes.SHA256())

        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = certificate("kafka-share-eos test CA", ca_key, "kafka-share-eos test CA",
                              ca_key, ca=True)
        broker_key = ec.generate_private_key(ec.SECP256R1())
        broker_cert = certificate("127.0.0.1", broker_key, "kafka-share-eos test CA", ca_key,
                                  ca=False)
        pem = serialization.Encoding.PEM
        (directory / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
        (directory / "broker.pem").write_bytes(
            broker_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())
            + broker_cert.public_bytes(pem) + ca_cert.public_bytes(pem)
        )

    def format_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments that create the admin user."""
        return ["--add-scram", f"{MECHANISM}=[name={ADMIN},password={self.admin_password}]"]

    def broker_properties(self, directory: Path) -> dict[str, str]:
        """The listener's, TLS's, SASL's and the authorizer's broker settings."""
        jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                f'username="{ADMIN}" password="{self.admin_password}";')
        return {
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(directory / "broker.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(directory / "ca.pem"),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            # The controllers talk on the plaintext controller listener, as ANONYMOUS.
            "super.users": f"User:{ADMIN};User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
        }

    def client_config(self, directory: Path, user: str, password: str) -> dict[str, str]:
        """confluent-kafka settings of a client signing in as ``user``."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": MECHANISM,
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(directory / "ca.pem"),
        }
