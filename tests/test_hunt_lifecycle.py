"""Hunted bugs in the memory lifecycle and the write verdicts: corrections of a currency or
a sign taken for duplicates (and never written), and consolidation steps that superseded a
memory twice, kept an expired memory over its lasting duplicate, or went ahead although a
memory had been archived meanwhile. Real vaults, real git, real embeddings."""

from __future__ import annotations

from typing import Any

import pytest

from memvault import facts, policy
from memvault.service import MemoryService

from .helpers import commit_count


def add(service: MemoryService, text: str, **kwargs: Any) -> str:
    result = service.remember(text, check_similar=False, **kwargs)
    assert result.memory is not None, result.reason
    return result.memory.id


# -- facts: a currency and a sign are part of an amount ------------------------------------
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The rent for the flat is $1200 a month.", "The rent for the flat is €1200 a month."),
        ("公寓的房租是每月100元", "公寓的房租是每月100美元"),
        ("The freezer is set to -5 degrees.", "The freezer is set to 5 degrees."),
        ("冰箱冷冻室的温度设为-5度", "冰箱冷冻室的温度设为5度"),
    ],
)
def test_a_changed_currency_or_sign_is_written_as_a_correction_not_dropped_as_a_duplicate(
    service: MemoryService, old: str, new: str
) -> None:
    first = add(service, old)
    commits = commit_count(service.root)
    result = service.remember(new)
    assert result.action == "created" and result.memory is not None
    assert [(s.id, s.relation) for s in result.similar] == [(first, "possible_contradiction")]
    assert commit_count(service.root) == commits + 1


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The rent is $1200 a month", "The rent is 1200 dollars a month"),
        ("The rent is $1200 a month", "The rent is 1200 USD a month"),
        ("The budget is HK$500", "The budget is 500港币"),
        ("房租是每月100元", "房租是每月¥100"),
        ("房租是每月100元", "房租是每月一百块钱"),
        ("The freezer is at -5 degrees", "The freezer is at minus 5 degrees"),
        ("冰箱温度是-5度", "冰箱温度是零下五度"),
    ],
)
def test_the_same_amount_written_another_way_is_still_a_duplicate(old: str, new: str) -> None:
    difference = facts.compare(new, old)
    assert difference.conflicts == () and difference.extras == ()
    assert policy.relation(new, old, 0.99, same_type=True) == "duplicate"
