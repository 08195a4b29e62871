"""Who a vote counts as, and what a refused voter is told (spec §9, §20). Pure: reads votes, never the store.

A voter is a person the store can vouch for: an operator who proved an enrolled credential (the console's and the
phone's login, or `flow approve --secret-env/--secret-file`), else the OS account running the command — taken from the
process's real uid, never from LOGNAME/USER, which anyone may set. A quorum above 1 counts authenticated operators
only: one OS account is one person however many names it types.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Iterable, Mapping

from openadapt_flow.records.pausedoc import ApprovalDoc

AUTHENTICATED_CHANNELS = (
    "console",
    "phone",
)  # channels whose every decision comes from a logged-in operator (spec §20)


def os_user() -> str:
    """The OS account running this process: its real uid's name (the uid itself if it has no name). Windows has no
    uid: there it is the logon name (getpass)."""
    if sys.platform == "win32":
        return getpass.getuser()
    import pwd

    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid{uid}"


def is_authenticated(vote: Mapping[str, object]) -> bool:
    """Whether the vote's operator proved a credential: an authenticated channel, or a CLI vote made with one."""
    return bool(vote.get("authenticated")) or vote.get("channel") in AUTHENTICATED_CHANNELS


def voter(vote: Mapping[str, object]) -> str:
    """Who a vote counts as: the authenticated operator (one person on the console, the phone and the CLI with a
    credential is one voter), else the OS user (typed names never count twice for one OS account)."""
    if is_authenticated(vote):
        return "operator:" + str(vote.get("operator"))
    return "os:" + str(vote.get("os_user"))


def same_person(vote: Mapping[str, object], other: Mapping[str, object]) -> bool:
    """The same voter under the same name: only they may repeat or change their own vote."""
    return voter(vote) == voter(other) and vote.get("operator") == other.get("operator")


def counted(votes: Iterable[Mapping[str, object]], quorum: int) -> set[str]:
    """The distinct voters that count toward `quorum`: every voter for a quorum of 1; authenticated operators only
    above it (an OS account, shared or not, cannot stand for two people)."""
    return {voter(v) for v in votes if quorum <= 1 or is_authenticated(v)}


def ballots(doc: Mapping[str, object]) -> list[Mapping[str, object]]:
    """An approval's (or a decision record's) votes; a decision from before votes were kept is its own one vote."""
    votes = doc.get("votes")
    return [v for v in votes if isinstance(v, Mapping)] if isinstance(votes, list) and votes else [doc]


def decided_by(doc: Mapping[str, object]) -> str:
    """What a refused voter is told: "already decided by alice at 2026-…: continue"."""
    names = ", ".join(dict.fromkeys(str(v.get("operator")) for v in ballots(doc)))
    return f"already decided by {names} at {doc.get('decided_at')}: {doc.get('decision')}"


def phone_vote_conflict(approval: ApprovalDoc | None, pause_id: str, operator: str) -> str | None:
    """Why a phone vote by `operator` on `pause_id` may not be added to `approval`, or None. The phone lane is one
    voter per pause and never a voter already counted on another channel: a hosted queue (honest, it closes a task
    after one decision; compromised, it holds the signing key) cannot add a second phone vote to meet a quorum alone,
    nor speak for a name that already voted on the console or the CLI (counting one person twice, or changing
    another channel's decision)."""
    if approval is None or approval.get("pause_id") != pause_id:
        return None
    for vote in ballots(approval):
        if vote.get("channel") == "phone":
            return f"pause {pause_id} already has a phone vote (by {vote.get('operator')}); the phone lane is one voter"
        if operator in (vote.get("operator"), vote.get("os_user")):
            return (
                f"{operator} already voted on pause {pause_id} on channel {vote.get('channel')}; a phone decision "
                f"does not count them twice"
            )
    return None
