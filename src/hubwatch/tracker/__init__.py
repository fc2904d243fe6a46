"""One poll of one repo: its status, its new commits, each read into a snapshot, estimated,
diffed against its parent, stored and handed to the hooks after it."""
