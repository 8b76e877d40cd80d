"""Pure policies: what counts as a secret."""

from __future__ import annotations

import pytest

from memvault.policy import secret_kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("token ghp_" + "a1B2c3D4e5" * 4, "a GitHub token"),
        ("gho_" + "Z" * 36, "a GitHub token"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "a GitHub token"),
        ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
        ("ASIAIOSFODNN7EXAMPLE is temporary", "an AWS access key id"),
        ("-----BEGIN PRIVATE KEY-----\nMIIE", "a private key block"),
        ("-----BEGIN EC PRIVATE KEY-----", "a private key block"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "a private key block"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "a private key block"),
        ("sk-abc123def456ghi789jkl012", "an API key (sk-...)"),
        ("sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12", "an API key (sk-...)"),
        ("sk-ant-api03-Ab12Cd34Ef56Gh78Ij90Kl12", "an API key (sk-...)"),
        ("xoxb-123456789012-abcdefghij", "a Slack token"),
        ("xoxp-123456789012-abcdefghij", "a Slack token"),
        ("sk_live_" + "a1" * 12, "a Stripe secret key"),
        ("AIza" + "B" * 35, "a Google API key"),
    ],
)
def test_common_credentials_are_recognised(text: str, kind: str) -> None:
    assert secret_kind(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "The user prefers scikit-learn and sk-learn style APIs.",
        "sk-this-is-a-long-kebab-case-phrase-without-digits",
        "AKIA alone is just a word",
        "-----BEGIN PUBLIC KEY-----",
        "ghp_short",
        "The GitHub token lives in 1Password under 'CI deploy'.",
        "risk-free investment of 2000000000000000000000",
        "xoxo hugs",
    ],
)
def test_prose_that_merely_resembles_a_credential_is_not_a_secret(text: str) -> None:
    assert secret_kind(text) is None
