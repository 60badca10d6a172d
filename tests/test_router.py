"""router.route: one test per routing rule (pure, no vault)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest

from memvault import config
from memvault.reflect import router
from memvault.reflect.router import Nearest, Thresholds, route


@dataclass(frozen=True)
class Cand:
    category: str = "preference"
    confidence: str = "high"
    key: str = "preference:use-uv"


ACTIVE = "MemoryVault/personal-private/preference/uv-for-envs.md"
INBOXED = "MemoryVault/personal-private/_inbox/use-uv.md"
REVIEWED = "MemoryVault/personal-private/_review/use-uv.md"


def near(similarity: float, path: str = ACTIVE, **kw) -> Nearest:
    area = "_inbox" if "/_inbox/" in path else "_review" if "/_review/" in path else ""
    return Nearest(path=path, title="t", similarity=similarity, kind="preference", area=area, **kw)


def test_high_is_saved_now_in_its_kind_folder() -> None:
    r = route(Cand(confidence="high"))
    assert (r.action, r.folder) == ("save", "preference")


def test_medium_goes_to_review() -> None:
    assert (route(Cand(confidence="medium")).action, route(Cand(confidence="medium")).folder) == ("review", "_review")


def test_a_medium_preference_said_in_two_sessions_is_saved() -> None:
    r = route(Cand(confidence="medium"), sessions_seen=2)
    assert (r.action, r.folder) == ("save", "preference") and "said in 2 sessions" in r.reason
    assert route(Cand(category="fix", key="fix:x", confidence="medium"), sessions_seen=2).action == "review"
    promoted = route(Cand(confidence="medium"), sessions_seen=2, nearest=near(0.9, path=REVIEWED, key=Cand.key))
    assert (promoted.action, promoted.target) == ("promote", REVIEWED)  # waiting in _review: moved up


def test_low_goes_to_the_inbox() -> None:
    r = route(Cand(confidence="low"), sessions_seen=2)
    assert (r.action, r.folder) == ("inbox", "_inbox") and "2 sessions" in r.reason


def test_low_seen_in_three_sessions_goes_to_review() -> None:
    r = route(Cand(confidence="low"), sessions_seen=3)
    assert (r.action, r.folder) == ("review", "_review") and "3 sessions" in r.reason
    assert (
        route(Cand(confidence="low"), sessions_seen=3, thresholds=Thresholds(review_after_sessions=4)).action == "inbox"
    )


def test_silent_review_mode_sends_review_material_to_the_inbox() -> None:
    assert route(Cand(confidence="medium"), review_mode="silent").folder == "_inbox"
    assert route(Cand(confidence="low"), sessions_seen=5, review_mode="silent").folder == "_inbox"
    assert route(Cand(confidence="high"), review_mode="silent").action == "save"  # high is never held back


def test_near_duplicate_of_an_active_entry_is_skipped() -> None:
    r = route(Cand(), nearest=near(0.84))
    assert (r.action, r.target, r.folder) == ("duplicate", ACTIVE, None)
    assert route(Cand(), nearest=near(0.30, key="preference:use-uv")).action == "duplicate"  # same key, any text
    assert route(Cand(), nearest=near(0.95, measure="keyword")).action == "duplicate"
    assert route(Cand(), nearest=near(0.85, measure="keyword")).action != "duplicate"  # keyword band is stricter


def test_similar_but_different_and_newer_is_a_supersede_proposal() -> None:
    r = route(Cand(), nearest=near(0.70, updated="2026-06-12T15:22:00"), captured_at=dt.datetime(2026, 11, 2))
    assert (r.action, r.folder, r.target) == ("supersede", "_review", ACTIVE)
    assert route(Cand(), nearest=near(0.70), review_mode="silent").folder == "_inbox"


def test_no_supersede_when_older_other_kind_not_memory_or_not_active() -> None:
    old_said = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    assert route(Cand(), nearest=near(0.70, updated="2026-06-12T15:22:00"), captured_at=old_said).action == "save"
    other_kind = Nearest(ACTIVE, "t", 0.70, kind="workflow")
    assert route(Cand(), nearest=other_kind).action == "save"
    user_note = Nearest("Notes/Postgres indexing.md", "t", 0.70, kind="preference", in_memory=False)
    assert route(Cand(), nearest=user_note).action == "save"
    assert route(Cand(), nearest=near(0.70, status="resolved")).action == "save"
    assert route(Cand(), nearest=near(0.60)).action == "save"  # below the band: unrelated enough


def test_a_pending_capture_is_promoted_not_duplicated() -> None:
    r = route(Cand(confidence="low"), sessions_seen=3, nearest=near(0.9, path=INBOXED))
    assert (r.action, r.folder, r.target) == ("promote", "_review", INBOXED)
    r = route(Cand(confidence="high"), nearest=near(0.9, path=REVIEWED))
    assert (r.action, r.folder, r.target) == ("promote", "preference", REVIEWED)
    assert route(Cand(confidence="low"), sessions_seen=2, nearest=near(0.9, path=INBOXED)).action == "duplicate"
    assert route(Cand(confidence="medium"), nearest=near(0.9, path=REVIEWED)).action == "duplicate"
    silent = route(Cand(confidence="medium"), nearest=near(0.9, path=INBOXED), review_mode="silent")
    assert silent.action == "duplicate"


def test_ideas_go_to_the_incubator_once() -> None:
    idea = Cand(category="idea", confidence="medium", key="idea:flaky-detector")
    assert (route(idea).action, route(idea).folder) == ("idea", "_idea-incubator")
    there = Nearest("MemoryVault/personal-private/_idea-incubator/x/_index.md", "x", 0.2, key="idea:flaky-detector")
    assert route(idea, nearest=there).action == "duplicate"


@pytest.mark.parametrize("key", ["duplicate_similarity", "supersede_similarity", "review_after_sessions"])
def test_thresholds_come_from_the_config(key: str) -> None:
    settings = config.from_dict({"reflection": {key: 2 if key == "review_after_sessions" else 0.5}}).reflection
    t = Thresholds.from_settings(settings)
    value = {"duplicate_similarity": t.duplicate, "supersede_similarity": t.supersede}.get(key, t.review_after_sessions)
    assert value == (2 if key == "review_after_sessions" else 0.5)
    assert Thresholds.from_settings(config.Config().reflection) == Thresholds()
    assert router.DUPLICATE_COSINE > router.SUPERSEDE_COSINE
