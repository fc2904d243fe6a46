"""SqlWebhookStore: the WebhookStore part of SqlStore (subscriptions, outbox, delivery log)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import func, update
from sqlmodel import col, delete, select

from hubwatch.errors import UnknownSubscription
from hubwatch.models import (
    DeliveryAttempt,
    MessageState,
    OutboxMessage,
    PendingMessage,
    Severity,
    StoredEvent,
    Subscription,
)
from hubwatch.store.sql.base import SqlBase, as_event, utc
from hubwatch.store.sql.tables import (
    DeliveryRow,
    EventRow,
    NotifyCursorRow,
    OutboxRow,
    RepoRow,
    SubscriptionRow,
)
from hubwatch.store.webhooks import WebhookStore


class SqlWebhookStore(SqlBase, WebhookStore):
    """Subscriptions, the outbox (one row per subscription and event) and the delivery log."""

    def add_subscription(
        self,
        url: str,
        secret: str,
        *,
        repo_id: str | None,
        org: str | None,
        kinds: Sequence[str],
        min_severity: Severity | None,
    ) -> Subscription:
        row = SubscriptionRow(
            repo_id=repo_id,
            org=org,
            url=url,
            secret=secret,
            kinds=list(kinds),
            min_severity=min_severity.value if min_severity else None,
            created_at=datetime.now(UTC),
        )
        with self._session() as session:
            session.add(row)
            session.commit()
            return _subscription(row)

    def subscription(self, subscription_id: int) -> Subscription:
        with self._session() as session:
            row = session.get(SubscriptionRow, subscription_id)
            if row is None:
                raise UnknownSubscription(f"no subscription {subscription_id}")
            return _subscription(row)

    def subscriptions(self, *, enabled_only: bool = False) -> list[Subscription]:
        query = select(SubscriptionRow).order_by(col(SubscriptionRow.id))
        if enabled_only:
            query = query.where(col(SubscriptionRow.enabled).is_(True))
        with self._session() as session:
            return [_subscription(row) for row in session.exec(query).all()]

    def remove_subscription(self, subscription_id: int) -> None:
        with self._session() as session:
            if session.get(SubscriptionRow, subscription_id) is None:
                raise UnknownSubscription(f"no subscription {subscription_id}")
            outbox = select(OutboxRow.id).where(OutboxRow.subscription_pk == subscription_id)
            session.exec(delete(DeliveryRow).where(col(DeliveryRow.outbox_pk).in_(outbox)))
            session.exec(delete(OutboxRow).where(col(OutboxRow.subscription_pk) == subscription_id))
            session.exec(delete(SubscriptionRow).where(col(SubscriptionRow.id) == subscription_id))
            session.commit()

    def disable_subscription(self, subscription_id: int, reason: str) -> None:
        with self._session() as session:
            session.exec(
                update(SubscriptionRow)
                .where(col(SubscriptionRow.id) == subscription_id)
                .values(enabled=False, disabled_reason=reason[:2000])
            )
            session.exec(
                update(OutboxRow)
                .where(
                    col(OutboxRow.subscription_pk) == subscription_id,
                    col(OutboxRow.state) == MessageState.PENDING.value,
                )
                .values(state=MessageState.FAILED.value, finished_at=datetime.now(UTC))
            )
            session.commit()

    def enable_subscription(self, subscription_id: int) -> Subscription:
        with self._session() as session:
            row = session.get(SubscriptionRow, subscription_id)
            if row is None:
                raise UnknownSubscription(f"no subscription {subscription_id}")
            row.enabled, row.disabled_reason = True, None
            session.add(row)
            session.commit()
            return _subscription(row)

    def enqueue(self, messages: Sequence[OutboxMessage], *, now: datetime) -> int:
        if not messages:
            return 0
        added = 0
        with self._session() as session:
            for message in messages:
                statement = (
                    self._insert(OutboxRow)
                    .values(
                        subscription_pk=message.subscription_id,
                        message_id=message.message_id,
                        event_key=message.event_key[:400],
                        event_type=message.event_type,
                        body=message.body,
                        state=MessageState.PENDING.value,
                        attempts=0,
                        created_at=now,
                        next_attempt_at=now,
                    )
                    .on_conflict_do_nothing(index_elements=["subscription_pk", "event_key"])
                    .returning(col(OutboxRow.id))
                )
                # NOTE: rowcount is not reliable for ON CONFLICT inserts across drivers.
                added += len(session.exec(statement).all())
            session.commit()
        return added

    def due_messages(self, now: datetime, limit: int = 100) -> list[PendingMessage]:
        with self._session() as session:
            rows = session.exec(
                select(OutboxRow, SubscriptionRow)
                .join(SubscriptionRow, col(SubscriptionRow.id) == col(OutboxRow.subscription_pk))
                .where(
                    col(OutboxRow.state) == MessageState.PENDING.value,
                    col(OutboxRow.next_attempt_at) <= now,
                    col(SubscriptionRow.enabled).is_(True),
                )
                .order_by(col(OutboxRow.next_attempt_at), col(OutboxRow.id))
                .limit(limit)
            ).all()
            return [
                PendingMessage(
                    id=outbox.id or 0,
                    message_id=outbox.message_id,
                    event_type=outbox.event_type,
                    body=outbox.body,
                    attempts=outbox.attempts,
                    created_at=utc(outbox.created_at),
                    subscription=_subscription(sub),
                )
                for outbox, sub in rows
            ]

    def record_attempt(
        self,
        message_pk: int,
        *,
        at: datetime,
        status_code: int | None,
        error: str | None,
        duration_ms: int,
        state: MessageState,
        next_attempt_at: datetime | None,
    ) -> None:
        with self._session() as session:
            row = session.get(OutboxRow, message_pk)
            if row is None:  # the subscription was removed meanwhile
                return
            row.attempts += 1
            row.state = state.value
            if next_attempt_at is not None:
                row.next_attempt_at = next_attempt_at
            if state is not MessageState.PENDING:
                row.finished_at = at
            session.add(row)
            session.add(
                DeliveryRow(
                    outbox_pk=message_pk,
                    attempt=row.attempts,
                    at=at,
                    status_code=status_code,
                    error=error[:2000] if error else None,
                    duration_ms=duration_ms,
                )
            )
            session.commit()

    def deliveries(self, subscription_id: int, limit: int = 100) -> list[DeliveryAttempt]:
        with self._session() as session:
            if session.get(SubscriptionRow, subscription_id) is None:
                raise UnknownSubscription(f"no subscription {subscription_id}")
            rows = session.exec(
                select(DeliveryRow, OutboxRow)
                .join(OutboxRow, col(OutboxRow.id) == col(DeliveryRow.outbox_pk))
                .where(OutboxRow.subscription_pk == subscription_id)
                .order_by(col(DeliveryRow.id).desc())
                .limit(limit)
            ).all()
            return [
                DeliveryAttempt(
                    message_id=outbox.message_id,
                    event_type=outbox.event_type,
                    attempt=delivery.attempt,
                    at=utc(delivery.at),
                    status_code=delivery.status_code,
                    error=delivery.error,
                    duration_ms=delivery.duration_ms,
                    # the attempt's own outcome: a message delivered at its third attempt
                    # still has two failed attempts in its log (issue 19)
                    state=MessageState.DELIVERED if delivery.error is None else MessageState.FAILED,
                )
                for delivery, outbox in rows
            ]

    def event_cursor(self, name: str) -> int | None:
        with self._session() as session:
            row = session.get(NotifyCursorRow, name)
            return row.position if row else None

    def set_event_cursor(self, name: str, position: int) -> None:
        with self._session() as session:
            row = session.get(NotifyCursorRow, name) or NotifyCursorRow(name=name, position=0)
            row.position = position
            session.add(row)
            session.commit()

    def events_after(self, position: int, limit: int = 1000) -> list[StoredEvent]:
        with self._session() as session:
            rows = session.exec(
                select(EventRow, RepoRow.repo_id)
                .join(RepoRow, col(RepoRow.id) == col(EventRow.repo_pk))
                .where(col(EventRow.id) > position)
                .order_by(col(EventRow.id))
                .limit(limit)
            ).all()
            return [StoredEvent(row.id or 0, repo_id, as_event(row)) for row, repo_id in rows]

    def last_event_position(self) -> int:
        with self._session() as session:
            return int(session.exec(select(func.max(EventRow.id))).one() or 0)


def _subscription(row: SubscriptionRow) -> Subscription:
    return Subscription(
        id=row.id or 0,
        url=row.url,
        secret=row.secret,
        repo_id=row.repo_id,
        org=row.org,
        kinds=tuple(row.kinds),
        min_severity=Severity(row.min_severity) if row.min_severity else None,
        enabled=row.enabled,
        disabled_reason=row.disabled_reason,
        created_at=utc(row.created_at),
    )
