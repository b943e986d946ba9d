"""The trap questions on the sample wiki (tests/test_answer_traps.py asks them; bench/trap_perturb.py perturbs
their evidence): each says what the answer must contain, and what must not be its lead (the part before the
first citation, what a reader takes as the answer)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Trap:
    question: str
    must: tuple[str, ...]  # every one of these, case-insensitively
    lead_must_not: tuple[str, ...] = ()  # none of these before the first citation

    def __str__(self) -> str:
        return self.question


def flaky(trap: Trap) -> object:
    """A trap whose answer changed in a fresh clone's whole-suite run (two of five such runs so far; never alone,
    as a file, or in 40 fresh processes): non-strict xfail until the cause is found (README, issue 12)."""
    return pytest.param(
        trap,
        marks=pytest.mark.xfail(strict=False, reason="order/timing-dependent answer, cause not found"),
        id=str(trap),
    )


TRAPS = [
    # wrong row: the failing BIOS sits in the row that matches the question best
    Trap("Which BIOS version does the ThinkPad T14 Gen 3 need for the 4.2 upgrade?", ("1.45",), ("1.42",)),
    pytest.param(
        Trap(
            "What is Bob's action item from the October 7 meeting?", ("Kubernetes 1.30",), ("Pin the BIOS",)
        ),
        marks=pytest.mark.xfail(
            strict=True,
            reason="retrieval: the October 14 notes fill the top 4, the October 7 page is not there",
        ),
        id="What is Bob's action item from the October 7 meeting?",
    ),
    Trap(
        "What is the status of Chen's action item from the October 14 meeting?", ("TO DO",), ("2024-10-09",)
    ),
    Trap("When is Alice's action item from the October 14 meeting due?", ("2024-10-18",), ("2024-10-11",)),
    # which column
    Trap("Which TPM does the Intel NUC 13 Pro have?", ("fTPM",)),
    Trap("What is the escalation phone number?", ("+49 30 1234 5678",)),
    Trap("Who is paged for a SEV3 incident?", ("Nobody",), ("Primary",)),
    Trap("How quickly must a SEV1 incident get a first response?", ("15 minutes",), ("1 hour",)),
    # two things at once
    Trap(
        "Who gets paged for a SEV2 incident, and how quickly do they have to respond?",
        ("Primary", "1 hour"),
        ("15 minutes",),
    ),
    Trap("Who tested release 4.2, and what was the release decision?", ("Chen Li", "go")),
    # failure and exception rows
    Trap("Does the Intel NUC 13 Pro pass the upgrade test?", ("N/A", "No 4.1 image")),
    Trap("Which hardware model failed the upgrade from 4.1.3?", ("ThinkPad T14 Gen 3", "1.42")),
    Trap("What happens with BIOS 1.42 after the upgrade?", ("truncated",)),
    Trap("Can the production database cluster be restarted alone?", ("second person",)),
    # cross-lingual: an English question over the German page, and German questions over English pages
    flaky(Trap("Can I take vacation during release week?", ("Release-Woche", "Dana Kovac", "German"))),
    flaky(Trap("How many vacation days does a full-time employee get?", ("30 Urlaubstage", "German"))),
    Trap("Wer wird bei einem SEV1-Vorfall alarmiert?", ("Primary and secondary", "englischen")),
    Trap("Auf welchem Port lauscht der lokale Stack?", ("8080",)),
    # plain facts that a fragment would get wrong
    flaky(Trap("When does the primary on-call engineer change?", ("Monday", "10:00 CET"))),
    Trap("Bis wann kann Resturlaub genommen werden?", ("31. März",)),
    Trap("How long does a restart of the production database cluster take?", ("20 minutes",)),
    Trap("What should I do if make migrate fails with connection refused?", ("wait ten seconds",)),
    Trap("Which Docker Desktop version do I need?", ("4.30",)),
    flaky(Trap("How is on-call time compensated?", ("1 hour of time off per weekend day",))),
]
