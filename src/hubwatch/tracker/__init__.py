"""Reading repositories revision by revision: sources, snapshots and the poll loop."""
