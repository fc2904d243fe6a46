"""Reads run on the driver's own cursor: a Core SELECT compiled once, for the API's hottest reads.

A badge or a history page is one indexed query that the database answers in a tenth of a
millisecond; SQLAlchemy's execution and result layers around it cost three times that, and
on 2 cores the API's throughput is what the Python around a query costs (issue 15). A
`DriverQuery` keeps what SQLAlchemy is good at (the statement written once in Core, compiled
by the dialect, values typed by the column types' own processors) and drops the rest: the
statement is compiled once and executed on the pooled connection's DB-API cursor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Select


class DriverQuery:
    """`statement` compiled for `dialect`; `rows(dbapi_connection, params)` runs it.

    Parameters written into the SQL (`literal_execute=True`, a LIMIT) are written per call by
    SQLAlchemy's own expansion, so PostgreSQL keeps one generic plan per value.
    """

    def __init__(self, statement: Select[Any], dialect: Dialect) -> None:
        self._compiled = statement.compile(dialect=dialect)
        self._binds = {
            name: processor
            for bind, name in self._compiled.bind_names.items()
            if (processor := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        }
        """Each bound value's processor by name (a datetime as SQLite's text, say)."""
        self._results = tuple(
            (at, processor)
            for at, column in enumerate(statement.selected_columns)
            if (processor := column.type.dialect_impl(dialect).result_processor(dialect, None))
        )
        """The columns whose values a type turns into Python's (by position), with how."""

    def rows(self, connection: Any, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The rows for `params`, each value as SQLAlchemy's Core row would give it."""
        state = self._compiled.construct_expanded_state(params)
        values = dict(state.parameters)
        processors = {**self._binds, **state.processors} if state.processors else self._binds
        for name, processor in processors.items():
            if values.get(name) is not None:
                values[name] = processor(values[name])
        order = state.positiontup
        cursor = connection.cursor()
        try:
            cursor.execute(
                state.statement, values if order is None else tuple(values[n] for n in order)
            )
            rows: list[tuple[Any, ...]] = cursor.fetchall()
        finally:
            cursor.close()
        if not self._results:
            return rows
        typed = []
        for row in rows:
            cells = list(row)
            for at, processor in self._results:
                if cells[at] is not None:
                    cells[at] = processor(cells[at])
            typed.append(tuple(cells))
        return typed
