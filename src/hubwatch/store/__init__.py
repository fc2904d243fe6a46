"""Persistence: one narrow interface per concept (a caller asks for the one it uses), `base.Store`
their union for the wiring, `views` a stored revision as differs read it, `sql/` the SQLite and
PostgreSQL backend, `dbapi` the lean repo listing."""
