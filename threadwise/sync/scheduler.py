"""Keeps the index current in the long-running process: an incremental sync of every space, on an interval.

APScheduler's BackgroundScheduler runs the job in a worker thread, one instance at a time (`max_instances=1`)
and one catch-up run after a pause however many were missed (`coalesce=True`). "Sync now" is a one-off job
beside it; the per-space lock keeps the two from syncing one space at once.

With several replicas every one runs this schedule, but only the sync leader (`leader`, elected through the
database: sync/leader.py) syncs on it; the others skip their turns. A replica that becomes the leader syncs
at once, so a sync its dead predecessor left unfinished is redone without waiting for the interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from threadwise.sync.admin import AdminError, AdminService
from threadwise.sync.sync import SyncReport

log = logging.getLogger(__name__)

JOB_ID = "confluence-sync"
PERMISSION_JOB_ID = "confluence-permission-sync"
DIGEST_JOB_ID = "knowledge-gap-digest"
PURGE_JOB_ID = "retention-purge"
# the knowledge-gap digest: Mondays at 09:00 UTC (a fixed time, so restarts neither skip nor repeat it)
DIGEST_TRIGGER = CronTrigger(day_of_week="mon", hour=9, minute=0, timezone=UTC)


class Leadership(Protocol):
    """Whether this replica runs the scheduled sync (sync/leader.py's LeaderElection)."""

    on_elected: Callable[[], None] | None

    def is_leader(self) -> bool: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...


class SyncScheduler:
    def __init__(
        self,
        *,
        admin: AdminService,
        interval_minutes: float = 30.0,
        on_reports: Callable[[list[SyncReport]], None] | None = None,
        leader: Leadership | None = None,
        permission_interval_minutes: float = 30.0,
        purge: Callable[[], object] | None = None,
    ) -> None:
        """`on_reports` is called after each run with its reports (e.g. to refresh the Slack Home tab).
        `leader`: scheduled runs happen only while it says this replica leads; None: always (one process).
        `permission_interval_minutes`: how often the permission sync runs (0: never; it also does nothing
        under THREADWISE_PERMISSIONS=off). `purge`: the daily removal of conversations past their retention
        (None: keep everything); it runs on every replica, as it is the same work wherever it runs."""
        self.admin = admin
        self.leader = leader
        self.interval = timedelta(minutes=interval_minutes)
        self.permission_interval = timedelta(minutes=permission_interval_minutes)
        self.on_reports = on_reports
        self.last_reports: list[SyncReport] = []
        # the front ends' weekly knowledge-gap digests (each posts where its admins chose, or does nothing)
        self.digests: list[Callable[[], object]] = []
        self.purge = purge
        self.syncing = True  # False: only the housekeeping (retention purge, digests), e.g. `serve --no-sync`
        self._scheduler = BackgroundScheduler(timezone=UTC)

    def start(self, *, run_now: bool = True) -> None:
        """Start the schedule; with `run_now` the first run (and purge) starts at once, else after one interval.
        Without `syncing`, only the housekeeping runs."""
        first_run = {"next_run_time": datetime.now(UTC)} if run_now else {}  # None would add it paused
        if self.purge is not None:
            self._scheduler.add_job(
                self._purge,
                IntervalTrigger(days=1, timezone=UTC),
                id=PURGE_JOB_ID,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=None,
                replace_existing=True,
                **first_run,
            )
        self._scheduler.add_job(
            self.run_digests,
            DIGEST_TRIGGER,
            id=DIGEST_JOB_ID,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,
            replace_existing=True,
        )
        if (
            self.leader is not None
        ):  # elected (or not) before the first run asks; later elections sync at once
            self.leader.on_elected = None
            self.leader.start()
            self.leader.on_elected = self._elected if self.syncing else None
        if not self.syncing:  # digests still go out from the leader only
            self._scheduler.start()
            return
        self._scheduler.add_job(
            self._run,
            IntervalTrigger(seconds=self.interval.total_seconds(), timezone=UTC),
            kwargs={"trigger": "schedule"},
            id=JOB_ID,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,
            replace_existing=True,
            **first_run,
        )
        if self.permission_interval.total_seconds() > 0:
            self._scheduler.add_job(
                self._run_permissions,
                IntervalTrigger(seconds=self.permission_interval.total_seconds(), timezone=UTC),
                id=PERMISSION_JOB_ID,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=None,
                replace_existing=True,
            )
        self._scheduler.start()

    def _elected(self) -> None:
        self.sync_now(trigger="schedule")

    def sync_now(self, key: str | None = None, *, full: bool = False, trigger: str = "manual") -> None:
        """Start a sync in the background at once (of one space, or all); returns without waiting."""
        self._scheduler.add_job(
            self._run,
            kwargs={"key": key, "full": full, "trigger": trigger},
            id=f"sync-now-{key or '*'}",
            max_instances=1,
            misfire_grace_time=None,
            replace_existing=True,
        )

    def shutdown(self, *, wait: bool = True) -> None:
        if self.leader is not None:
            self.leader.stop()
        if self._scheduler.running:
            self._scheduler.shutdown(wait=wait)

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    def next_run_at(self) -> datetime | None:
        job = self._scheduler.get_job(JOB_ID)
        return job.next_run_time if job else None

    def next_digest_at(self) -> datetime | None:
        job = self._scheduler.get_job(DIGEST_JOB_ID)
        return job.next_run_time if job else None

    def _run(self, key: str | None = None, full: bool = False, trigger: str = "schedule") -> None:
        if trigger == "schedule" and self.leader is not None and not self.leader.is_leader():
            log.debug("scheduled sync skipped: another replica is the sync leader")
            return
        try:
            # a scheduled run does not queue behind a sync already running (it brings the index up to date)
            reports = self.admin.sync(key, full=full, trigger=trigger, wait=trigger != "schedule")
        except AdminError as e:  # e.g. Confluence not configured, or the space was removed meanwhile
            log.warning("scheduled sync skipped: %s", e)
            return
        except Exception:
            log.exception("scheduled sync failed")
            return
        self.last_reports = reports
        if self.on_reports is not None:
            self.on_reports(reports)

    def _run_permissions(self) -> None:
        """Re-read and apply restrictions, space permissions and group members (nothing is embedded); on the
        sync leader only, like the page sync."""
        if self.leader is not None and not self.leader.is_leader():
            log.debug("scheduled permission sync skipped: another replica is the sync leader")
            return
        try:
            for report in self.admin.sync_permissions():
                log.info("scheduled permission sync: %s", report.summary())
        except AdminError as e:
            log.warning("scheduled permission sync skipped: %s", e)
        except Exception:
            log.exception("scheduled permission sync failed")

    def _purge(self) -> None:
        if self.purge is None:
            return
        try:
            log.info("retention: removed %s", self.purge())
        except Exception as err:  # a locked or unreachable database: try again tomorrow
            log.warning("retention purge failed: %s", err)

    def run_digests(self) -> None:
        """Post each front end's knowledge-gap digest; on the sync leader only, so it goes out once a week."""
        if self.leader is not None and not self.leader.is_leader():
            log.debug("digest skipped: another replica is the sync leader")
            return
        for post in self.digests:
            try:
                post()
            except Exception:
                log.exception("the knowledge-gap digest failed")
