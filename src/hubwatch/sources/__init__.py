"""Where revisions come from: the RevisionSource interface, the Hub and git, pacing and retries."""
